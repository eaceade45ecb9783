#pragma once
// The CUDA runtime, for the few places that need it (tensor memory, the nccl backend's device
// setup), without CUDA's headers: public headers stay CUDA-free and a build without CUDA
// compiles the same callers. Every function throws a ranks::Error, never returns a CUDA code.

#include <cstddef>
#include <string>
#include <string_view>

namespace ranks::detail {

inline constexpr std::string_view kCudaTensorAdvice =
    "simulate the program with `ranks sim` (cuda tensors are host memory there), or set "
    "RANKS_CUDA_MEMORY=host to run it with host memory tagged as cuda";

// Whether this library was built with the CUDA runtime (RANKS_HAS_CUDA).
bool cuda_built();
// The number of CUDA devices this process can use; 0 without CUDA, a driver or a device.
int cuda_device_count();
// Why cuda_device_count() is 0, as a sentence fragment ("no CUDA device: cudaGetDeviceCount
// says ..."); empty when a device is present.
std::string cuda_unavailable_reason();

// Unsupported naming the reason when `device` (a cuda index) cannot be used by this process:
// no CUDA in this build, no device (then `what to do` follows), or an index past the last
// device (InvalidArgument). `what` names the caller.
void require_cuda_device(int device, const std::string& what,
                         std::string_view what_to_do = kCudaTensorAdvice);

// Device memory on cuda:device, freed by cuda_free. Zero bytes still returns a unique pointer.
// std::bad_alloc when the device is out of memory.
void* cuda_malloc(int device, size_t bytes);
void cuda_free(int device, void* pointer) noexcept;
// Copies n bytes where either side may be device or host memory (unified addressing), and
// returns when the copy is complete. device: the cuda index involved, for the error without one.
void cuda_copy(void* dst, const void* src, size_t n, int device);
void cuda_zero(int device, void* dst, size_t n);

// BackendError "<what>: <call> failed: <CUDA's name and text for code>" unless code is success.
// code is a cudaError_t; the int keeps this header free of CUDA's.
void check_cuda(int code, const char* call, const std::string& what);

}  // namespace ranks::detail
