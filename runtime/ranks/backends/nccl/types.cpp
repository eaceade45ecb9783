#include "ranks/backends/nccl/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "ranks/errors.hpp"

namespace ranks::backends::nccl::detail {

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
      return ncclUint8;
    case DType::Int8:
      return ncclInt8;
    case DType::Int32:
      return ncclInt32;
    case DType::Int64:
      return ncclInt64;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
  }
  throw InvalidArgument(fmt::format("nccl: unknown dtype {}", static_cast<int>(dtype)));
}

ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  if (dtype == DType::Bool) {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Max:
        return ncclMax;
      case ReduceOp::Product:
      case ReduceOp::Min:
        return ncclMin;
      default:
        break;
    }
  } else {
    switch (op) {
      case ReduceOp::Sum:
        return ncclSum;
      case ReduceOp::Mean:
        return ncclAvg;
      case ReduceOp::Product:
        return ncclProd;
      case ReduceOp::Min:
        return ncclMin;
      case ReduceOp::Max:
        return ncclMax;
      default:
        break;
    }
  }
  throw InvalidArgument(
      fmt::format("nccl has no '{}' reduction on {}", reduce_op_name(op), dtype_name(dtype)));
}

std::string nccl_error_text(ncclResult_t result, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  return fmt::format("{}{}{}", ncclGetErrorString(result),
                     last != nullptr && *last != '\0' ? ": " : "", last != nullptr ? last : "");
}

void throw_nccl(ncclResult_t result, std::string_view call, const std::string& context,
                ncclComm_t comm) {
  throw BackendError(
      fmt::format("{}: {} failed: {}", context, call, nccl_error_text(result, comm)));
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

void throw_cuda(cudaError_t code, std::string_view call, const std::string& context) {
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  throw BackendError(fmt::format("{}: {} failed: {} ({})", context, call, cudaGetErrorName(code),
                                 cudaGetErrorString(code)));
}

void settle_slowly(ncclComm_t comm, std::chrono::steady_clock::time_point deadline,
                   const Describe& context, const std::function<std::exception_ptr()>& stop) {
  // A launch normally settles on the first query; init and split take milliseconds to seconds,
  // so the poll backs off to 1 ms rather than burning a core for them.
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    ncclResult_t state = ncclInProgress;
    check_nccl(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError", context, comm);
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      throw BackendError(
          fmt::format("{}: NCCL failed: {}", context(), nccl_error_text(state, comm)));
    }
    if (stop) {
      if (std::exception_ptr error = stop()) std::rethrow_exception(error);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Timeout(
          fmt::format("{}: NCCL did not finish by the deadline: some rank of the group "
                      "has not made the same call, or is stuck before it",
                      context()));
    }
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = std::chrono::microseconds(10);
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

}  // namespace ranks::backends::nccl::detail
