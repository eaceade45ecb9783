#include "ranks/detail/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>

#include "ranks/errors.hpp"

namespace ranks::detail {

void validate_device(Device device) {
  if (device.is_cpu() && device.index != 0) {
    throw InvalidArgument(
        fmt::format("cpu device index {} is invalid: it must be 0", device.index));
  }
  if (device.is_cuda() && device.index < 0) {
    throw InvalidArgument(
        fmt::format("cuda device index {} is negative: it must be >= 0", device.index));
  }
}

std::shared_ptr<void> allocate(Device device, size_t bytes) {
  validate_device(device);
  if (bytes <= kSmallAllocation) {
    // One allocation for the bytes and the reference count: small tensors are made on every
    // step of a training loop (and on every rank of a 16,384-rank simulation). malloc's 16-byte
    // alignment covers every dtype.
    return std::make_shared_for_overwrite<std::byte[]>(std::max<size_t>(bytes, 1));
  }
  // operator new returns a unique non-null pointer even for zero bytes, which keeps zero-element
  // tensors defined.
  void* p = ::operator new (bytes, std::align_val_t{kAllocationAlignment});
  return std::shared_ptr<void>(
      p, [](void* q) { ::operator delete (q, std::align_val_t{kAllocationAlignment}); });
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t n) {
  validate_device(dst_device);
  validate_device(src_device);
  if (n == 0) return;
  // memmove, not memcpy: from_blob tensors may alias each other arbitrarily.
  std::memmove(dst, src, n);
}

void zero_bytes(void* dst, Device device, size_t n) {
  validate_device(device);
  if (n == 0) return;
  std::memset(dst, 0, n);
}

}  // namespace ranks::detail
