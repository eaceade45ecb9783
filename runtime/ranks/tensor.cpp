#include "ranks/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ranks/detail/memory.hpp"
#include "ranks/errors.hpp"

namespace ranks {

namespace detail {

void throw_dtype_mismatch(DType have, DType want, bool defined) {
  if (!defined) {
    throw InvalidArgument(
        fmt::format("data<{}>() was asked of an undefined tensor (made by "
                    "Tensor(); use empty/zeros/of/from)",
                    dtype_name(want)));
  }
  throw InvalidArgument(fmt::format("tensor holds {} but data<{}>() was asked for",
                                    dtype_name(have), dtype_name(want)));
}

void throw_not_scalar(int64_t numel) {
  throw InvalidArgument(
      fmt::format("item() needs a tensor with exactly one element, but this one has {}", numel));
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t checked_numel(const std::vector<int64_t>& shape, DType dtype) {
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      throw InvalidArgument(
          fmt::format("shape {} has negative dimension {} at index {}: dimensions must be >= 0",
                      shape_str(shape), shape[i], i));
    }
    has_zero = has_zero || shape[i] == 0;
  }
  // A zero anywhere makes the tensor empty however large the other dimensions are.
  if (has_zero) return 0;
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(numel, d, &numel)) numel = -1;
    if (numel < 0) break;
  }
  int64_t bytes = 0;
  if (numel < 0 || __builtin_mul_overflow(numel, static_cast<int64_t>(dtype_size(dtype)), &bytes)) {
    throw InvalidArgument(
        fmt::format("shape {} of {} is too large: its size in bytes must fit in int64 (at most {})",
                    shape_str(shape), dtype_name(dtype), std::numeric_limits<int64_t>::max()));
  }
  return numel;
}

const std::vector<int64_t>& no_dims() {
  static const std::vector<int64_t> none;
  return none;
}

Tensor empty_like(const Tensor& like, Device device) {
  Tensor t;
  t.numel_ = like.numel_;
  t.dtype_ = like.dtype_;
  t.device_ = device;
  auto memory = allocate_with_shape(device, t.nbytes(), like.shape());
  t.storage_ = std::move(memory.storage);
  t.shape_ = memory.shape;
  t.data_ = t.storage_.get();
  return t;
}

std::vector<Tensor> rows_like(const Tensor& like, size_t count, Device device) {
  const size_t row_bytes = like.nbytes();
  std::shared_ptr<void> memory = allocate(device, row_bytes * count);
  auto* first = static_cast<std::byte*>(memory.get());
  TensorMemory block = own_with_shape(std::move(memory), first, like.shape());
  std::vector<Tensor> rows(count);
  for (size_t i = 0; i < count; ++i) {
    Tensor& row = rows[i];
    row.numel_ = like.numel_;
    row.dtype_ = like.dtype_;
    row.device_ = device;
    row.data_ = first + i * row_bytes;
    row.storage_ = std::shared_ptr<void>(block.storage, row.data_);  // shares the block's count
    row.shape_ = block.shape;
  }
  return rows;
}

}  // namespace detail

namespace {

void check_defined(const Tensor& t, const char* what) {
  if (!t.defined()) {
    throw InvalidArgument(
        fmt::format("{}: the tensor is undefined (default-constructed); create it with "
                    "empty/zeros/of/from/from_blob first",
                    what));
  }
}

}  // namespace

Tensor Tensor::empty(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor t;
  t.numel_ = detail::checked_numel(shape, dtype);
  t.dtype_ = dtype;
  t.device_ = device;
  auto memory = detail::allocate_with_shape(device, t.nbytes(), std::move(shape));
  t.storage_ = std::move(memory.storage);
  t.shape_ = memory.shape;
  t.data_ = t.storage_.get();
  return t;
}

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor t = empty(std::move(shape), dtype, device);
  detail::zero_bytes(t.data_, t.device_, t.nbytes());
  return t;
}

Tensor Tensor::from_bytes(const void* src, size_t count, DType dtype, std::vector<int64_t> shape,
                          Device device) {
  if (count > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    throw InvalidArgument(fmt::format("from(): {} values is more than a tensor can hold", count));
  }
  if (shape.empty()) shape.push_back(static_cast<int64_t>(count));
  const int64_t numel = detail::checked_numel(shape, dtype);
  if (static_cast<size_t>(numel) != count) {
    throw InvalidArgument(fmt::format("from(): shape {} holds {} elements but {} values were given",
                                      detail::shape_str(shape), numel, count));
  }
  Tensor t = empty(std::move(shape), dtype, device);
  detail::copy_bytes(t.data_, t.device_, src, Device::cpu(), t.nbytes());
  return t;
}

Tensor Tensor::from_blob(void* data, std::vector<int64_t> shape, DType dtype, Device device) {
  detail::validate_device(device);
  const int64_t numel = detail::checked_numel(shape, dtype);
  if (data == nullptr) {
    if (numel != 0) {
      throw InvalidArgument(
          fmt::format("from_blob(): data is null but shape {} needs {} {} elements",
                      detail::shape_str(shape), numel, dtype_name(dtype)));
    }
    // A null storage would make the tensor undefined; an empty one needs no real memory.
    alignas(detail::kAllocationAlignment) static char placeholder[1];
    data = placeholder;
  }
  Tensor t;
  auto memory = detail::own_with_shape(nullptr, data, std::move(shape));
  t.storage_ = std::move(memory.storage);
  t.data_ = data;
  t.shape_ = memory.shape;
  t.numel_ = numel;
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::to(Device device) const {
  check_defined(*this, "to()");
  Tensor out = detail::empty_like(*this, device);
  detail::copy_bytes(out.data_, out.device_, data_, device_, nbytes());
  return out;
}

Tensor Tensor::clone() const {
  check_defined(*this, "clone()");
  return to(device_);
}

void Tensor::copy_(const Tensor& src) {
  check_defined(*this, "copy_() destination");
  check_defined(src, "copy_() source");
  if (src.dtype_ != dtype_ || src.numel_ != numel_) {
    throw InvalidArgument(fmt::format(
        "copy_(): destination is {} but source is {}: dtype and element count must match", str(),
        src.describe()));
  }
  detail::copy_bytes(data_, device_, src.data_, src.device_, nbytes());
}

bool Tensor::equal(const Tensor& other) const {
  if (!defined() || !other.defined()) return defined() == other.defined();
  if (dtype_ != other.dtype_ || shape() != other.shape()) return false;
  const size_t n = nbytes();
  if (n == 0) return true;
  if (device_.is_cpu() && other.device_.is_cpu()) return std::memcmp(data_, other.data_, n) == 0;
  // Device memory cannot be compared in place once CUDA tensors are real device allocations.
  std::vector<unsigned char> mine(n);
  std::vector<unsigned char> theirs(n);
  copy_to_host(mine.data());
  other.copy_to_host(theirs.data());
  return mine == theirs;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  return fmt::format("{}{} on {}", dtype_name(dtype_), detail::shape_str(shape()), device_.str());
}

namespace {

// One element as people read it: integers exactly, floats in their shortest form.
template <class T>
std::string element_text(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return fmt::format("{}", static_cast<double>(static_cast<float>(value)));
  } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    return fmt::format("{}", static_cast<int>(value));
  } else {
    return fmt::format("{}", value);
  }
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "undefined tensor";
  constexpr int64_t kEnds = 3;  // elements shown at each end of a long tensor
  const Tensor host = device_.is_cuda() ? to(Device::cpu()) : *this;
  std::vector<std::string> shown;
  visit_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    const auto* data = static_cast<const T*>(host.data_ptr());
    for (int64_t i = 0; i < numel_; ++i) {
      if (numel_ > 2 * kEnds && i == kEnds) {
        shown.emplace_back("...");
        i = numel_ - kEnds;
      }
      shown.push_back(element_text(data[i]));
    }
  });
  return fmt::format("{} [{}]", describe(), fmt::join(shown, ", "));
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel_));
  if (!defined()) return out;
  const Tensor host = device_.is_cuda() ? to(Device::cpu()) : *this;
  visit_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    const auto* data = static_cast<const T*>(host.data_ptr());
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
        out[i] = static_cast<double>(static_cast<float>(data[i]));
      } else {
        out[i] = static_cast<double>(data[i]);
      }
    }
  });
  return out;
}

void Tensor::copy_to_host(void* dst) const {
  detail::copy_bytes(dst, Device::cpu(), data_, device_, nbytes());
}

}  // namespace ranks
