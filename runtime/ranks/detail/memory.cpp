#include "ranks/detail/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "ranks/context.hpp"
#include "ranks/detail/cuda.hpp"
#include "ranks/detail/line_aligned.hpp"
#include "ranks/errors.hpp"

namespace ranks::detail {

namespace {

bool host_memory_requested() {
  static const bool requested = [] {
    const char* value = std::getenv("RANKS_CUDA_MEMORY");
    if (value == nullptr || *value == '\0' || std::string_view(value) == "device") return false;
    if (std::string_view(value) == "host") return true;
    throw InvalidArgument(fmt::format("RANKS_CUDA_MEMORY='{}' is not 'host' or 'device'", value));
  }();
  return requested;
}

// Memory of this device lives on a GPU (rather than in host memory tagged as cuda).
bool on_gpu(Device device) { return device.is_cuda() && !cuda_is_host_memory(); }

// A small tensor's shape and bytes, after the reference count in the same allocation: from a
// line boundary, the count (16 bytes), the shape (24) and the bytes (16) fill exactly one line.
struct InlineTensor {
  InlineTensor(std::vector<int64_t>&& dims) : shape(std::move(dims)) {}  // bytes left unset
  std::vector<int64_t> shape;
  alignas(16) std::byte bytes[kInlineBytes];
};

}  // namespace

bool cuda_is_host_memory() { return simulating_on_this_thread() || host_memory_requested(); }

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
  if (on_gpu(device)) {
    const int index = device.index;
    return std::shared_ptr<void>(cuda_malloc(index, bytes),
                                 [index](void* p) { cuda_free(index, p); });
  }
  if (bytes <= kSmallAllocation) {
    // One allocation for the bytes and the reference count: small tensors are made on every
    // step of a training loop (and on every rank of a 16,384-rank simulation). malloc's 16-byte
    // alignment covers every dtype.
    return std::make_shared_for_overwrite<std::byte[]>(std::max<size_t>(bytes, 1));
  }
  // operator new returns a unique non-null pointer even for zero bytes, which keeps zero-element
  // tensors defined.
  void* p = nullptr;
  try {
    p = ::operator new (bytes, std::align_val_t{kAllocationAlignment});
  } catch (const std::bad_alloc&) {
    // A shape computed wrongly (a size from another rank, an overflowed product) is the usual
    // cause: say how much was asked for, as a ranks::Error the caller can catch with the rest.
    throw Error(fmt::format("cannot allocate {} bytes ({:.1f} GiB) of host memory for a tensor",
                            bytes, static_cast<double>(bytes) / (1u << 30)));
  }
  return std::shared_ptr<void>(
      p, [](void* q) { ::operator delete (q, std::align_val_t{kAllocationAlignment}); });
}

TensorMemory allocate_with_shape(Device device, size_t bytes, std::vector<int64_t> shape) {
  if (bytes > kInlineBytes || on_gpu(device)) {
    auto storage = allocate(device, bytes);  // validates the device
    void* pointer = storage.get();
    return own_with_shape(std::move(storage), pointer, std::move(shape));
  }
  validate_device(device);
  auto block = std::allocate_shared<InlineTensor>(LineAligned<InlineTensor>{}, std::move(shape));
  return {std::shared_ptr<void>(block, block->bytes), &block->shape};
}

namespace {
struct OwnedTensor {
  OwnedTensor(std::shared_ptr<void>&& o, std::vector<int64_t>&& dims)
      : owner(std::move(o)), shape(std::move(dims)) {}
  std::shared_ptr<void> owner;
  std::vector<int64_t> shape;
};
}  // namespace

TensorMemory own_with_shape(std::shared_ptr<void> owner, void* pointer,
                            std::vector<int64_t> shape) {
  auto block = std::make_shared<OwnedTensor>(std::move(owner), std::move(shape));
  return {std::shared_ptr<void>(block, pointer), &block->shape};
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t n) {
  validate_device(dst_device);
  validate_device(src_device);
  if (n == 0) return;
  if (on_gpu(dst_device) || on_gpu(src_device)) {
    return cuda_copy(dst, src, n, on_gpu(dst_device) ? dst_device.index : src_device.index);
  }
  // memmove, not memcpy: from_blob tensors may alias each other arbitrarily.
  std::memmove(dst, src, n);
}

void zero_bytes(void* dst, Device device, size_t n) {
  validate_device(device);
  if (n == 0) return;
  if (on_gpu(device)) return cuda_zero(device.index, dst, n);
  std::memset(dst, 0, n);
}

}  // namespace ranks::detail
