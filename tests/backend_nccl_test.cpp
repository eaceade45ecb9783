// The nccl backend and cuda tensors where no GPU is needed: what the build says about itself,
// the clear errors on a machine without a CUDA device, and that the NCCL mapping covers the
// capability table the simulator enforces with `--backend nccl`. The collective bodies on a GPU
// are in gpu_nccl_test.cpp (ctest label gpu).
//
// This binary runs without RANKS_CUDA_MEMORY=host (tests/CMakeLists.txt), so cuda tensors here
// are what a real program gets.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>

#include "harness.hpp"
#include "ranks/backends/registry.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/config.hpp"
#include "ranks/detail/cuda.hpp"
#include "ranks/detail/memory.hpp"
#include "ranks/store/stores.hpp"
#if RANKS_HAS_NCCL
#include "ranks/backends/nccl/types.hpp"
#endif

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

bool has_gpu() { return detail::cuda_device_count() > 0; }

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected kind was thrown";
  return {};
}

TEST(NcclBuild, StatusSaysWhetherTheBackendWasBuilt) {
  const std::string status = RANKS_NCCL_STATUS;
  EXPECT_EQ(backends::is_built("nccl"), RANKS_HAS_NCCL == 1);
  if (RANKS_HAS_NCCL) {
    EXPECT_TRUE(Contains(status, "built (NCCL 2."));
    EXPECT_TRUE(Contains(status, ", CUDA "));
    EXPECT_TRUE(detail::cuda_built());
  } else {
    EXPECT_TRUE(Contains(status, "not built: "));
  }
  EXPECT_EQ(detail::cuda_built(), RANKS_HAS_CUDA == 1);
}

TEST(NcclBuild, CudaMemoryIsRealOutsideTheSimulatorAndHostInside) {
  EXPECT_FALSE(detail::cuda_is_host_memory()) << "this binary must run without RANKS_CUDA_MEMORY";
  bool inside = false;
  run_ranks(1, [&] { inside = detail::cuda_is_host_memory(); });
  EXPECT_TRUE(inside);
}

TEST(NoGpu, CudaTensorsAreAClearError) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string reason = detail::cuda_unavailable_reason();
  EXPECT_TRUE(Contains(reason, RANKS_HAS_CUDA ? "no CUDA device" : "built without CUDA"));
  for (auto make : {+[] { (void)Tensor::empty({4}, DType::Float32, Device::cuda(0)); },
                    +[] {
                      (void)Tensor::zeros({2, 2}, DType::Int64, Device::cuda(1));
                    },
                    +[] {
                      (void)Tensor::of<float>({1.f, 2.f}).to(Device::cuda(0));
                    },
                    +[] { (void)Tensor::of<int32_t>({3}, Device::cuda(0)); }}) {
    const std::string message = error_of<Unsupported>(make);
    EXPECT_TRUE(Contains(message, "is not usable"));
    EXPECT_TRUE(Contains(message, reason));
    EXPECT_TRUE(Contains(message, "ranks sim"));
  }
  // A borrowed pointer needs no allocation; reading it back needs CUDA.
  float host[2] = {1.f, 2.f};
  Tensor borrowed = Tensor::from_blob(host, {2}, DType::Float32, Device::cuda(0));
  EXPECT_EQ(borrowed.device(), Device::cuda(0));
  EXPECT_THROW((void)borrowed.to_vector<float>(), Unsupported);
  // A negative index stays an argument error, whatever the machine.
  EXPECT_THROW((void)Tensor::empty({1}, DType::Int8, Device::cuda(-1)), InvalidArgument);
}

TEST(NoGpu, CudaTensorsInTheSimulatorAreHostMemory) {
  run_ranks(2, [] {
    Tensor t = Tensor::of<float>({1.f, 2.f}, Device::cuda(0));
    EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1.f, 2.f}));
  });
}

TEST(NoGpu, NcclWorldIsAClearError) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a CUDA device";
  backends::WorldSetup setup;
  setup.store = std::make_shared<HashStore>(1s);
  setup.timeout = 1s;
  const std::string message = error_of<Unsupported>([&] { backends::create_world("nccl", setup); });
  if (RANKS_HAS_NCCL) {
    EXPECT_TRUE(Contains(message, "nccl backend: rank 0 of 1 (local rank 0)"));
    EXPECT_TRUE(Contains(message, "no CUDA device"));
    EXPECT_TRUE(Contains(message, "use the gloo backend"));
  } else {
    EXPECT_TRUE(Contains(message, "backend 'nccl' is not built"));
  }
}

TEST(NoGpu, InitProcessGroupWithNcclIsAClearErrorAndLeavesNothingBehind) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a CUDA device";
  InitOptions options;
  options.backend = "nccl";
  options.world_size = 1;
  options.rank = 0;
  options.store = std::make_shared<HashStore>(1s);
  options.timeout = 2s;
  const std::string message = error_of<Unsupported>([&] { init_process_group(options); });
  EXPECT_TRUE(Contains(message, RANKS_HAS_NCCL ? "no CUDA device" : "is not built"));
  EXPECT_FALSE(is_initialized());
}

TEST(NoGpu, TheDefaultBackendIsGlooWithoutAGpu) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a CUDA device";
  if (!RANKS_HAS_GLOO) GTEST_SKIP() << "gloo is not built";
  InitOptions options;  // backend empty: nccl with a GPU, else gloo
  options.world_size = 1;
  options.rank = 0;
  options.store = std::make_shared<HashStore>(5s);
  options.timeout = 5s;
  init_process_group(options);
  EXPECT_EQ(get_backend(), "gloo");
  destroy_process_group();
}

// Runs command through the shell and returns (exit status, stdout and stderr together).
std::pair<int, std::string> run_command(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  return {pclose(pipe), output};
}

// What a user sees who asks for nccl on a machine without a GPU: every rank fails at init with
// the reason, ranks run exits non-zero, and nothing hangs (timeout(1) bounds it regardless).
TEST(NoGpu, RanksRunWithNcclFailsWithTheReason) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a CUDA device";
  auto [status, output] = run_command(fmt::format("timeout 60 {} run -n 2 --backend nccl -- {}",
                                                  RANKS_CLI_PATH, RANKS_TRAIN_STEP_PATH));
  EXPECT_NE(status, 0) << output;
  EXPECT_TRUE(Contains(output, RANKS_HAS_NCCL ? "no CUDA device" : "backend 'nccl' is not built"));
}

#if RANKS_HAS_NCCL
// Every dtype and every reduce op of the nccl table (the one `ranks sim --backend nccl`
// enforces) has an NCCL mapping, so no program the simulator accepts is refused here; the
// bitwise ops the table leaves out are refused with the table's reason.
TEST(NcclTable, EveryDtypeAndReduceOpOfTheTableMapsToNccl) {
  const BackendCapabilities& table = capabilities("nccl");
  for (DType dtype : all_dtypes) {
    EXPECT_NO_THROW((void)backends::nccl::detail::nccl_dtype(dtype)) << dtype_name(dtype);
    for (ReduceOp op : table.reduce_ops) {
      if (!reduce_op_supports(op, dtype)) continue;
      EXPECT_NO_THROW((void)backends::nccl::detail::nccl_op(op, dtype))
          << dtype_name(dtype) << " " << reduce_op_name(op);
    }
  }
  for (ReduceOp op : {ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor}) {
    EXPECT_EQ(std::find(table.reduce_ops.begin(), table.reduce_ops.end(), op),
              table.reduce_ops.end());
    EXPECT_THROW((void)backends::nccl::detail::nccl_op(op, DType::Int32), InvalidArgument);
  }
}

// Bool reductions are logical, as in the simulator: or for sum/max, and for product/min (mean
// of bools is refused before any backend sees it).
TEST(NcclTable, BoolReductionsAreLogical) {
  using backends::nccl::detail::nccl_op;
  EXPECT_EQ(backends::nccl::detail::nccl_dtype(DType::Bool), ncclUint8);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
    EXPECT_EQ(nccl_op(op, DType::Bool), ncclMax) << reduce_op_name(op);
  }
  for (ReduceOp op : {ReduceOp::Product, ReduceOp::Min}) {
    EXPECT_EQ(nccl_op(op, DType::Bool), ncclMin) << reduce_op_name(op);
  }
  EXPECT_EQ(nccl_op(ReduceOp::Mean, DType::Float32), ncclAvg);
  EXPECT_EQ(nccl_op(ReduceOp::Mean, DType::Int32), ncclAvg);
}

TEST(NcclTable, NcclErrorsCarryNcclsText) {
  const std::string message = error_of<BackendError>([] {
    backends::nccl::detail::check_nccl(ncclInvalidArgument, "ncclAllReduce",
                                       "all_reduce on "
                                       "group 'world'");
  });
  EXPECT_TRUE(Contains(message, "all_reduce on group 'world': ncclAllReduce failed: "));
  EXPECT_TRUE(Contains(message, ncclGetErrorString(ncclInvalidArgument)));
  EXPECT_NO_THROW(backends::nccl::detail::check_nccl(ncclInProgress, "ncclGroupEnd", "x"));
}

#endif

}  // namespace
}  // namespace ranks::testing
