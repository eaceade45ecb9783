#include "ranks/detail/cuda.hpp"

#include <fmt/format.h>

#include <new>

#include "ranks/config.hpp"
#include "ranks/errors.hpp"

#if RANKS_HAS_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

namespace ranks::detail {

#if RANKS_HAS_CUDA

namespace {

// The CUDA runtime is opened on first use rather than linked: most processes never touch a cuda
// tensor (every simulated run, every CLI command), and loading and relocating libcudart cost
// each of them ~0.4 ms here, a tenth of a 1,024-rank simulation; a machine without CUDA's
// runtime can also load libranks then. The nccl backend links it; opened here, it is the same
// copy. Only the entry points this file calls, with the types CUDA's header gives them.
struct CudaRuntime {
  decltype(&::cudaGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&::cudaGetErrorName) GetErrorName = nullptr;
  decltype(&::cudaGetErrorString) GetErrorString = nullptr;
  decltype(&::cudaGetLastError) GetLastError = nullptr;
  decltype(&::cudaGetDevice) GetDevice = nullptr;
  decltype(&::cudaSetDevice) SetDevice = nullptr;
  decltype(&::cudaMalloc) Malloc = nullptr;
  decltype(&::cudaFree) Free = nullptr;
  decltype(&::cudaMemcpy) Memcpy = nullptr;
  decltype(&::cudaMemset) Memset = nullptr;
  std::string missing;  // why it could not be opened; empty once it is
};

// A copy already in the process (the program's own, the nccl backend's) first, then the
// loader's search, then the toolkit this library was built against.
void* open_cudart() {
  if (void* handle = dlopen(RANKS_CUDART_SONAME, RTLD_NOW | RTLD_NOLOAD)) return handle;
  if (void* handle = dlopen(RANKS_CUDART_SONAME, RTLD_NOW)) return handle;
  return dlopen(RANKS_CUDART_DIR "/" RANKS_CUDART_SONAME, RTLD_NOW);
}

CudaRuntime load_cudart() {
  CudaRuntime rt;
  void* handle = open_cudart();
  if (handle == nullptr) {
    const char* error = dlerror();
    rt.missing = fmt::format("no CUDA runtime: cannot load {} ({})", RANKS_CUDART_SONAME,
                             error != nullptr ? error : "not found");
    return rt;
  }
  bool complete = true;
  auto bind = [&](auto& entry, const char* name) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(dlsym(handle, name));
    if (entry == nullptr && complete) {
      complete = false;
      rt.missing = fmt::format("{} has no {}", RANKS_CUDART_SONAME, name);
    }
  };
  bind(rt.GetDeviceCount, "cudaGetDeviceCount");
  bind(rt.GetErrorName, "cudaGetErrorName");
  bind(rt.GetErrorString, "cudaGetErrorString");
  bind(rt.GetLastError, "cudaGetLastError");
  bind(rt.GetDevice, "cudaGetDevice");
  bind(rt.SetDevice, "cudaSetDevice");
  bind(rt.Malloc, "cudaMalloc");
  bind(rt.Free, "cudaFree");
  bind(rt.Memcpy, "cudaMemcpy");
  bind(rt.Memset, "cudaMemset");
  return rt;
}

// Usable only once probe() has found a device, which needs every entry point.
const CudaRuntime& cudart() {
  static const CudaRuntime rt = load_cudart();
  return rt;
}

// Binds device to the calling thread for the duration of one call and puts the previous one
// back, so that allocating on cuda:1 does not move the program's later kernels there.
class DeviceGuard {
 public:
  DeviceGuard(int device, const std::string& what) {
    check_cuda(cudart().GetDevice(&previous_), "cudaGetDevice", what);
    if (previous_ != device) check_cuda(cudart().SetDevice(device), "cudaSetDevice", what);
  }
  ~DeviceGuard() { cudart().SetDevice(previous_); }
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
    if (!cudart().missing.empty()) {
      p.reason = cudart().missing;
      return p;
    }
    cudaError_t code = cudart().GetDeviceCount(&p.count);
    if (code != cudaSuccess) {
      p.count = 0;
      p.reason = fmt::format("no CUDA device: cudaGetDeviceCount says {} ({})",
                             cudart().GetErrorName(code), cudart().GetErrorString(code));
      cudart().GetLastError();  // clear the sticky-free error so later calls do not report it
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
  if (cudart().GetErrorName == nullptr) {  // the nccl backend's codes, without the runtime here
    throw BackendError(fmt::format("{}: {} failed with code {}", what, call, code));
  }
  throw BackendError(fmt::format("{}: {} failed: {} ({})", what, call, cudart().GetErrorName(error),
                                 cudart().GetErrorString(error)));
}

void* cuda_malloc(int device, size_t bytes) {
  const std::string what = fmt::format("allocating {} bytes on cuda:{}", bytes, device);
  require_cuda_device(device, what);
  DeviceGuard guard(device, what);
  void* p = nullptr;
  // cudaMalloc(0) may return null, which would make the tensor undefined.
  cudaError_t code = cudart().Malloc(&p, bytes == 0 ? 1 : bytes);
  if (code == cudaErrorMemoryAllocation) {
    cudart().GetLastError();
    throw std::bad_alloc();
  }
  check_cuda(code, "cudaMalloc", what);
  return p;
}

void cuda_free(int device, void* pointer) noexcept {
  int previous = 0;
  if (cudart().GetDevice == nullptr || cudart().GetDevice(&previous) != cudaSuccess) return;
  cudart().SetDevice(device);
  cudart().Free(pointer);  // may fail once the driver is shutting down; nothing to do then
  cudart().SetDevice(previous);
}

void cuda_copy(void* dst, const void* src, size_t n, int device) {
  if (n == 0) return;
  require_cuda_device(device, fmt::format("copying {} bytes to or from cuda:{}", n, device));
  check_cuda(cudart().Memcpy(dst, src, n, cudaMemcpyDefault), "cudaMemcpy",
             fmt::format("copying {} bytes", n));
}

void cuda_zero(int device, void* dst, size_t n) {
  if (n == 0) return;
  const std::string what = fmt::format("zeroing {} bytes on cuda:{}", n, device);
  require_cuda_device(device, what);
  DeviceGuard guard(device, what);
  check_cuda(cudart().Memset(dst, 0, n), "cudaMemset", what);
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
