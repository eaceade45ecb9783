#pragma once
// How our dtypes and reduce ops reach NCCL, and how NCCL's errors reach the caller.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
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

// "<context>: <call> failed: <ncclGetErrorString> (<ncclGetLastError>)" as a BackendError,
// unless result is ncclSuccess or ncclInProgress (a non-blocking call under way).
void check_nccl(ncclResult_t result, std::string_view call, const std::string& context,
                ncclComm_t comm = nullptr);
std::string nccl_error_text(ncclResult_t result, ncclComm_t comm);

// Polls a non-blocking communicator until its last call has finished (ncclSuccess). Throws
// BackendError when NCCL reports an error, Timeout "<context>: not finished within <timeout>"
// at the deadline, or the error given by `stop` when it returns one (the group failed meanwhile).
void settle(ncclComm_t comm, std::chrono::steady_clock::time_point deadline,
            const std::string& context, const std::function<std::exception_ptr()>& stop);

// Makes device current on this thread for one scope and puts the previous device back.
class DeviceGuard {
 public:
  DeviceGuard(int device, const std::string& context);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// BackendError "<context>: <call> failed: <CUDA's name and text>" unless code is cudaSuccess.
void check_cuda(cudaError_t code, std::string_view call, const std::string& context);

// "30 min", "5 s", "250 ms": the simulator's way of writing a timeout.
std::string format_timeout(std::chrono::milliseconds timeout);

}  // namespace ranks::backends::nccl::detail
