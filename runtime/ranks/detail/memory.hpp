#pragma once
// The only place that allocates, fills and copies tensor memory, so every other file stays
// device-agnostic. A cuda tensor is device memory (cudaMalloc) in real runs of a CUDA build, and
// host memory tagged as cuda where cuda_is_host_memory() says so: in the simulator (API.md), and
// when RANKS_CUDA_MEMORY=host asks for it (device rules exercised on a machine without a GPU).
// Otherwise a cuda tensor on a machine without CUDA is an Unsupported error naming the reason.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ranks/device.hpp"

namespace ranks::detail {

// Alignment of allocations above kSmallAllocation bytes: enough for AVX-512 loads and a whole
// cache line. Smaller ones share one allocation with their reference count and get malloc's
// 16 bytes, which covers every dtype.
inline constexpr size_t kAllocationAlignment = 64;
inline constexpr size_t kSmallAllocation = 1024;
inline constexpr size_t kSmallAllocationAlignment = 16;

// InvalidArgument for a device no memory can live on: a cpu index other than 0, a negative cuda
// index. Every function below checks its devices with it.
void validate_device(Device device);

// True when cuda tensors made or copied on this thread are host memory: a simulator runs here,
// or the environment has RANKS_CUDA_MEMORY=host (read once).
bool cuda_is_host_memory();

// bytes of aligned memory (see above) on device, released when the last owner goes
// away. Zero bytes still returns a unique non-null pointer. Throws std::bad_alloc when memory
// runs out.
std::shared_ptr<void> allocate(Device device, size_t bytes);

// A tensor's memory and shape under one owner: copying the tensor (every op puts its tensors in
// a request) then costs one reference count, an atomic increment, instead of two; in the
// simulator the second was 8 % of an 8-byte all_reduce. Host tensors of at most kInlineBytes
// (scalars, a loss, a counter: what small collectives carry) get both in one
// cache-line-aligned allocation, so that copying the tensor into an op touches one line instead
// of three (a simulated rank-operation of a large run waits on every line it touches).
inline constexpr size_t kInlineBytes = 16;
struct TensorMemory {
  std::shared_ptr<void> storage;                // owns the bytes and the shape
  const std::vector<int64_t>* shape = nullptr;  // lives as long as storage's owner
};
TensorMemory allocate_with_shape(Device device, size_t bytes, std::vector<int64_t> shape);
// Memory that something else owns (from_blob's caller: `owner` empty; a DLPack capsule), with
// its shape, under one owner; `pointer` is what the storage's get() gives.
TensorMemory own_with_shape(std::shared_ptr<void> owner, void* pointer, std::vector<int64_t> shape);

// Copies n bytes between any two devices; n == 0 is a no-op (null pointers allowed). The ranges
// may overlap.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t n);

// Sets n bytes at dst on device to zero; n == 0 is a no-op.
void zero_bytes(void* dst, Device device, size_t n);

}  // namespace ranks::detail
