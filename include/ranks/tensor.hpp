#pragma once
// A contiguous, typed, shaped buffer on one device: owning (empty/zeros/of/from/clone) or
// borrowing (from_blob). Copies of a Tensor share the same memory, like torch tensors.

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ranks/device.hpp"
#include "ranks/dtype.hpp"

struct DLManagedTensor;

namespace ranks {

namespace detail {
[[noreturn]] void throw_dtype_mismatch(DType have, DType want, bool defined = true);
[[noreturn]] void throw_not_scalar(int64_t numel);
// The element count of shape; InvalidArgument for a negative dimension or a size in bytes (at
// dtype's element size) that does not fit in int64_t.
int64_t checked_numel(const std::vector<int64_t>& shape, DType dtype);
// "[2, 3]"; "[]" for a scalar.
std::string shape_str(const std::vector<int64_t>& shape);
// The shape of an undefined tensor.
const std::vector<int64_t>& no_dims();
}  // namespace detail

class Tensor;
namespace detail {
// A new tensor with like's shape (shared, not copied), dtype and the given device.
Tensor empty_like(const Tensor& like, Device device);
// count new tensors like empty_like's, the rows of one block: a gather writes every member's
// piece in place, back to back, and the block lives as long as any of them.
std::vector<Tensor> rows_like(const Tensor& like, size_t count, Device device);
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  static Tensor empty(std::vector<int64_t> shape, DType, Device = Device::cpu());
  static Tensor zeros(std::vector<int64_t> shape, DType, Device = Device::cpu());
  template <class T>
  static Tensor of(std::initializer_list<T> values, Device device = Device::cpu()) {
    return from<T>(std::span<const T>(values.begin(), values.size()), {}, device);
  }
  // Copies values; an empty shape means one dimension of values.size().
  template <class T>
  static Tensor from(std::span<const T> values, std::vector<int64_t> shape = {},
                     Device device = Device::cpu()) {
    return from_bytes(values.data(), values.size(), dtype_of_v<T>, std::move(shape), device);
  }
  template <class T>
  static Tensor from(const std::vector<T>& values, std::vector<int64_t> shape = {},
                     Device device = Device::cpu()) {
    return from(std::span<const T>(values), std::move(shape), device);
  }
  // Borrows: the caller keeps data alive for as long as any copy of the tensor is used.
  static Tensor from_blob(void* data, std::vector<int64_t> shape, DType, Device);
  // Takes ownership of a DLPack tensor (calls its deleter when the last copy goes away). When it
  // throws (a layout or dtype it cannot import), it takes nothing: the caller still owns the
  // tensor and calls its deleter, as with a PyTorch capsule that failed to import.
  static Tensor from_dlpack(DLManagedTensor*);
  // A new DLManagedTensor that keeps this tensor's memory alive until its deleter is called.
  DLManagedTensor* to_dlpack() const;

  bool defined() const { return storage_ != nullptr; }
  const std::vector<int64_t>& shape() const { return shape_ ? *shape_ : detail::no_dims(); }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  size_t element_size() const { return dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  void* data_ptr() { return data_; }
  const void* data_ptr() const { return data_; }
  template <class T>
  T* data() {
    check_dtype(dtype_of_v<T>);
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_dtype(dtype_of_v<T>);
    return static_cast<const T*>(data_);
  }
  template <class T>
  std::vector<T> to_vector() const {
    check_dtype(dtype_of_v<T>);
    if constexpr (std::is_same_v<T, bool>) {
      // std::vector<bool> is packed and has no data(): go through bytes.
      std::vector<uint8_t> bytes(static_cast<size_t>(numel_));
      copy_to_host(bytes.data());
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(static_cast<size_t>(numel_));
      copy_to_host(out.data());
      return out;
    }
  }
  template <class T>
  T item() const {
    auto v = to_vector<T>();
    if (v.size() != 1) detail::throw_not_scalar(numel_);
    return v[0];
  }

  Tensor to(Device) const;  // a copy on the given device (a copy even when already there)
  Tensor clone() const;
  // Copies src's elements into this tensor; same dtype and numel required.
  void copy_(const Tensor& src);
  // Byte-wise equality of shape, dtype and contents (devices may differ).
  bool equal(const Tensor& other) const;
  // "float32[2, 3] on cpu": what error messages say of a tensor.
  std::string describe() const;
  // describe() and the values: "float32[4] on cpu [0.5, 1, 2, 3]"; of more than 6 elements the
  // first and last 3 ("[0, 1, 2, ..., 97, 98, 99]"). 16-bit floats show as their double value,
  // bools as true/false. A tensor on a gpu is copied to the host to be read.
  std::string str() const;
  // Every element as a double, whatever the dtype (float16 and bfloat16 through float; an int64
  // beyond 2^53 rounds); copied from a gpu.
  std::vector<double> to_doubles() const;

 private:
  friend Tensor detail::empty_like(const Tensor&, Device);
  friend std::vector<Tensor> detail::rows_like(const Tensor&, size_t, Device);
  static Tensor from_bytes(const void* src, size_t count, DType, std::vector<int64_t> shape,
                           Device);
  void check_dtype(DType want) const {
    if (want != dtype_ || storage_ == nullptr)
      detail::throw_dtype_mismatch(dtype_, want, defined());
  }
  void copy_to_host(void* dst) const;

  // Owns the memory (from_blob's, the caller's, it only holds a reference to) and the shape,
  // which copies share and nothing changes: copying a tensor (every op puts its tensors in a
  // request) costs one reference count (detail::TensorMemory).
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  const std::vector<int64_t>* shape_ = nullptr;  // owned by storage_'s owner
  int64_t numel_ = 0;
  DType dtype_ = DType::Float32;
  Device device_;
};

}  // namespace ranks
