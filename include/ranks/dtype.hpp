#pragma once
// Element types, their sizes and names, and the two 16-bit float storage types.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <type_traits>

namespace ranks {

enum class DType { Bool, UInt8, Int8, Int32, Int64, Float16, BFloat16, Float32, Float64 };

inline constexpr DType all_dtypes[] = {DType::Bool,     DType::UInt8,   DType::Int8,
                                       DType::Int32,    DType::Int64,   DType::Float16,
                                       DType::BFloat16, DType::Float32, DType::Float64};

// IEEE 754 binary16, stored as bits; arithmetic goes through float.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  explicit float16_t(float value);
  explicit operator float() const;
  static float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
  friend bool operator==(float16_t a, float16_t b) { return a.bits == b.bits; }
};

// bfloat16 (the upper half of a binary32), stored as bits; arithmetic goes through float.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float value);
  explicit operator float() const;
  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
  friend bool operator==(bfloat16_t a, bfloat16_t b) { return a.bits == b.bits; }
};

inline size_t dtype_size(DType);     // inline: every tensor copy and op request asks it
std::string_view dtype_name(DType);  // "bool", "uint8", ..., "float16", "bfloat16", ...
bool is_floating(DType);             // Float16, BFloat16, Float32, Float64
// torch.promote_types over these nine: floats beat integers, wider beats narrower, float16 with
// bfloat16 is float32, uint8 with int8 is int32 (torch's int16 is not among them), bool loses.
DType promote_types(DType, DType);

// The DType of a C++ element type; a compile error for anything else.
template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<float16_t> {
  static constexpr DType value = DType::Float16;
};
template <>
struct dtype_of<bfloat16_t> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<std::remove_cv_t<T>>::value;

// Calls f(T{}) with the C++ type of a DType: the one place that turns a runtime dtype into a type.
template <class F>
decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Bool:
      return f(bool{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::Int8:
      return f(int8_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::Float16:
      return f(float16_t{});
    case DType::BFloat16:
      return f(bfloat16_t{});
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
  }
  return f(uint8_t{});
}

inline size_t dtype_size(DType dtype) {
  // A table in DType's order rather than visit_dtype's switch: every op asks, often per tensor.
  constexpr uint8_t sizes[] = {sizeof(bool),       sizeof(uint8_t), sizeof(int8_t),
                               sizeof(int32_t),    sizeof(int64_t), sizeof(float16_t),
                               sizeof(bfloat16_t), sizeof(float),   sizeof(double)};
  static_assert(std::size(sizes) == std::size(all_dtypes));
  const auto index = static_cast<size_t>(dtype);
  return index < std::size(sizes) ? sizes[index] : 1;
}

}  // namespace ranks
