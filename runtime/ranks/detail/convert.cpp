#include "ranks/detail/convert.hpp"

#include <cstring>
#include <type_traits>

namespace ranks::detail {

namespace {

template <class T>
constexpr bool is_half = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

template <class To, class From>
To cast(From v) {
  if constexpr (is_half<From>) {
    return cast<To>(static_cast<float>(v));
  } else if constexpr (is_half<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace

void convert(const void* src, DType from, void* dst, DType to, int64_t count) {
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(count) * dtype_size(from));
    return;
  }
  visit_dtype(from, [&](auto from_zero) {
    using From = decltype(from_zero);
    visit_dtype(to, [&](auto to_zero) {
      using To = decltype(to_zero);
      const auto* in = static_cast<const From*>(src);
      auto* out = static_cast<To*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = cast<To>(in[i]);
    });
  });
}

}  // namespace ranks::detail
