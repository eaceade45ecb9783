#include "ranks/detail/cuda.hpp"

#include <fmt/format.h>

#include <new>

#include "ranks/config.hpp"
#include "ranks/errors.hpp"

#if RANKS_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ranks::detail {

#if RANKS_HAS_CUDA

namespace {

// Binds device to the calling thread for the duration of one call and puts the previous one
// back, so that allocating on cuda:1 does not move the program's later kernels there.
class DeviceGuard {
 public:
  DeviceGuard(int device, const std::string& what) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice", what);
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice", what);
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

struct Probe {
  int count = 0;
  std::string reason;
};

// Asked once: the answer cannot change while the process runs (CUDA_VISIBLE_DEVICES is read at
// the runtime's first call).
const Probe& probe() {
  static const Probe result = [] {
    Probe p;
    cudaError_t code = cudaGetDeviceCount(&p.count);
    if (code != cudaSuccess) {
      p.count = 0;
      p.reason = fmt::format("no CUDA device: cudaGetDeviceCount says {} ({})",
                             cudaGetErrorName(code), cudaGetErrorString(code));
      cudaGetLastError();  // clear the sticky-free error so later calls do not report it
    } else if (p.count == 0) {
      p.reason = "no CUDA device: cudaGetDeviceCount found 0 devices";
    }
    return p;
  }();
  return result;
}

}  // namespace

bool cuda_built() { return true; }
int cuda_device_count() { return probe().count; }
std::string cuda_unavailable_reason() { return probe().reason; }

void check_cuda(int code, const char* call, const std::string& what) {
  if (code == cudaSuccess) return;
  const auto error = static_cast<cudaError_t>(code);
  throw BackendError(fmt::format("{}: {} failed: {} ({})", what, call, cudaGetErrorName(error),
                                 cudaGetErrorString(error)));
}

void* cuda_malloc(int device, size_t bytes) {
  const std::string what = fmt::format("allocating {} bytes on cuda:{}", bytes, device);
  require_cuda_device(device, what);
  DeviceGuard guard(device, what);
  void* p = nullptr;
  // cudaMalloc(0) may return null, which would make the tensor undefined.
  cudaError_t code = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (code == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
  check_cuda(code, "cudaMalloc", what);
  return p;
}

void cuda_free(int device, void* pointer) noexcept {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device);
  cudaFree(pointer);  // may fail once the driver is shutting down; nothing to do then
  cudaSetDevice(previous);
}

void cuda_copy(void* dst, const void* src, size_t n, int device) {
  if (n == 0) return;
  require_cuda_device(device, fmt::format("copying {} bytes to or from cuda:{}", n, device));
  check_cuda(cudaMemcpy(dst, src, n, cudaMemcpyDefault), "cudaMemcpy",
             fmt::format("copying {} bytes", n));
}

void cuda_zero(int device, void* dst, size_t n) {
  if (n == 0) return;
  const std::string what = fmt::format("zeroing {} bytes on cuda:{}", n, device);
  require_cuda_device(device, what);
  DeviceGuard guard(device, what);
  check_cuda(cudaMemset(dst, 0, n), "cudaMemset", what);
}

#else  // !RANKS_HAS_CUDA

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() {
  return fmt::format("this ranks {} was built without CUDA (nccl: {})", RANKS_VERSION,
                     RANKS_NCCL_STATUS);
}

void check_cuda(int code, const char* call, const std::string& what) {
  if (code != 0) throw BackendError(fmt::format("{}: {} failed with code {}", what, call, code));
}

void* cuda_malloc(int device, size_t /*bytes*/) {
  require_cuda_device(device, "allocating cuda memory");
  return nullptr;  // not reached: require_cuda_device throws without CUDA
}
void cuda_free(int, void*) noexcept {}
void cuda_copy(void*, const void*, size_t n, int device) {
  if (n != 0) require_cuda_device(device, "copying to or from cuda memory");
}
void cuda_zero(int device, void*, size_t n) {
  if (n != 0) require_cuda_device(device, "zeroing cuda memory");
}

#endif

void require_cuda_device(int device, const std::string& what, std::string_view what_to_do) {
  const int count = cuda_device_count();
  if (count == 0) {
    throw Unsupported(fmt::format("{}: cuda:{} is not usable: {}; {}", what, device,
                                  cuda_unavailable_reason(), what_to_do));
  }
  if (device < 0 || device >= count) {
    throw InvalidArgument(
        fmt::format("{}: cuda:{} does not exist: this process sees {} CUDA "
                    "device(s), cuda:0 to cuda:{} (CUDA_VISIBLE_DEVICES)",
                    what, device, count, count - 1));
  }
}

}  // namespace ranks::detail
