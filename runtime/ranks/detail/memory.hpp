#pragma once
// The only place that allocates, fills and copies tensor memory. Until the NCCL backend lands, a
// CUDA tensor is host memory tagged as CUDA; when it does, these functions (and nothing else)
// learn to call cudaMalloc/cudaMemcpy, so every other file stays device-agnostic.

#include <cstddef>
#include <memory>

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

// bytes of aligned memory (see above) on device, released when the last owner goes
// away. Zero bytes still returns a unique non-null pointer. Throws std::bad_alloc when memory
// runs out.
std::shared_ptr<void> allocate(Device device, size_t bytes);

// Copies n bytes between any two devices; n == 0 is a no-op (null pointers allowed). The ranges
// may overlap.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t n);

// Sets n bytes at dst on device to zero; n == 0 is a no-op.
void zero_bytes(void* dst, Device device, size_t n);

}  // namespace ranks::detail
