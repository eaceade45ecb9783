#pragma once
// How our dtypes and reduce ops reach NCCL, and how NCCL's errors reach the caller.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <concepts>
#include <exception>
#include <functional>
#include <string>
#include <string_view>

#include "ranks/dtype.hpp"
#include "ranks/reduce_op.hpp"

namespace ranks::backends::nccl::detail {

// NCCL's element type for dtype. Bool travels as uint8 (0 or 1).
ncclDataType_t nccl_dtype(DType dtype);

// NCCL's reduction for op on dtype, chosen so the result is the simulator's (detail/reduce):
// mean is ncclAvg; on bool, sum/mean/max are a logical or (ncclMax of 0/1) and product/min a
// logical and (ncclMin). Bitwise ops never get here (the capability table has none for nccl);
// asking is InvalidArgument.
ncclRedOp_t nccl_op(ReduceOp op, DType dtype);

// Error contexts ("all_reduce on group 'world' (rank 0 of 2, seq 3) at f.cpp:9") are built only
// when there is an error: on the hot path a context is a callable that returns the text (or a
// string that already exists), and formatting it would cost more than the call it describes.
using Describe = std::function<std::string()>;
inline std::string context_text(const std::string& text) { return text; }
template <std::invocable F>
std::string context_text(const F& describe) {
  return describe();
}

[[noreturn]] void throw_nccl(ncclResult_t result, std::string_view call, const std::string& context,
                             ncclComm_t comm);
[[noreturn]] void throw_cuda(cudaError_t code, std::string_view call, const std::string& context);

// "<context>: <call> failed: <ncclGetErrorString> (<ncclGetLastError>)" as a BackendError,
// unless result is ncclSuccess or ncclInProgress (a non-blocking call under way).
template <class Context>
void check_nccl(ncclResult_t result, std::string_view call, const Context& context,
                ncclComm_t comm = nullptr) {
  if (result != ncclSuccess && result != ncclInProgress) [[unlikely]]
    throw_nccl(result, call, context_text(context), comm);
}
std::string nccl_error_text(ncclResult_t result, ncclComm_t comm);

// BackendError "<context>: <call> failed: <CUDA's name and text>" unless code is cudaSuccess.
template <class Context>
void check_cuda(cudaError_t code, std::string_view call, const Context& context) {
  if (code != cudaSuccess) [[unlikely]]
    throw_cuda(code, call, context_text(context));
}

// Polls a non-blocking communicator until its last call has finished (ncclSuccess). Throws
// BackendError when NCCL reports an error, Timeout "<context>: NCCL did not finish by the
// deadline ..." at the deadline, or the error `stop` returns (the group failed meanwhile).
void settle_slowly(ncclComm_t comm, std::chrono::steady_clock::time_point deadline,
                   const Describe& context, const std::function<std::exception_ptr()>& stop);
template <class Context>
void settle(ncclComm_t comm, std::chrono::steady_clock::time_point deadline, const Context& context,
            const std::function<std::exception_ptr()>& stop) {
  // A launch has normally settled by the time it returns: one query, no string, no loop.
  ncclResult_t state = ncclInProgress;
  if (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess) return;
  settle_slowly(
      comm, deadline, [&] { return context_text(context); }, stop);
}

// Makes device current on this thread for one scope and puts the previous device back.
class DeviceGuard {
 public:
  template <class Context>
  DeviceGuard(int device, const Context& context) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice", context);
    if (previous_ == device) {
      previous_ = -1;  // nothing to put back
      return;
    }
    check_cuda(cudaSetDevice(device), "cudaSetDevice", context);
  }
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace ranks::backends::nccl::detail
