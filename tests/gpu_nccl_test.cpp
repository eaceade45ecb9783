// The nccl backend and cuda tensors on a real GPU (ctest label gpu): the collective bodies at
// world size 1 (NCCL allows one rank per GPU, so one GPU gives one rank), cpu-tensor staging,
// async work, the watchdog's timeout of a stuck receive, and DLPack round trips of device
// memory. Every test skips, saying why, when this process sees no CUDA device.
//
// Expected values are computed here from the inputs (at world size 1 a reduction of one rank's
// values is those values, a mean divides by one), never with the library's kernels.

#include <dlpack/dlpack.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "expected.hpp"
#include "harness.hpp"
#include "ranks/backends/registry.hpp"
#include "ranks/config.hpp"
#include "ranks/detail/cuda.hpp"
#include "ranks/store/stores.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

const Device gpu = Device::cuda(0);

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (detail::cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: " << detail::cuda_unavailable_reason();
    }
  }
};

// A world of one rank on the nccl backend, torn down at the end of the test.
class GpuNccl : public Gpu {
 protected:
  void SetUp() override {
    Gpu::SetUp();
    if (IsSkipped()) return;
    if (!RANKS_HAS_NCCL) GTEST_SKIP() << "nccl: " << RANKS_NCCL_STATUS;
    InitOptions options;
    options.backend = "nccl";
    options.world_size = 1;
    options.rank = 0;
    options.store = std::make_shared<HashStore>(30s);
    options.timeout = 30s;
    init_process_group(options);
  }
  void TearDown() override {
    if (is_initialized()) destroy_process_group();
  }
};

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST_F(Gpu, CudaTensorsLiveInDeviceMemoryAndCopyBothWays) {
  Tensor host = Tensor::from(iota_floats(1000, 1.f));
  Tensor device = host.to(gpu);
  EXPECT_EQ(device.device(), gpu);
  EXPECT_EQ(device.to_vector<float>(), iota_floats(1000, 1.f));
  EXPECT_TRUE(device.equal(host));
  Tensor zeros = Tensor::zeros({3, 4}, DType::Int64, gpu);
  EXPECT_EQ(zeros.to_vector<int64_t>(), std::vector<int64_t>(12, 0));
  Tensor copy = zeros.clone();
  copy.copy_(Tensor::from(std::vector<int64_t>(12, 7), {3, 4}));
  EXPECT_EQ(copy.to_vector<int64_t>(), std::vector<int64_t>(12, 7));
  EXPECT_EQ(zeros.to_vector<int64_t>(), std::vector<int64_t>(12, 0));  // clone is a copy
  EXPECT_TRUE(Tensor::empty({0}, DType::Float32, gpu).defined());
}

TEST_F(Gpu, DlpackKeepsTheDeviceBothWays) {
  Tensor t = Tensor::from(iota_floats(6, 0.5f), {2, 3}, gpu);
  DLManagedTensor* managed = t.to_dlpack();
  EXPECT_EQ(managed->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(managed->dl_tensor.device.device_id, 0);
  EXPECT_EQ(managed->dl_tensor.data, t.data_ptr());
  Tensor back = Tensor::from_dlpack(managed);
  EXPECT_EQ(back.device(), gpu);
  EXPECT_EQ(back.data_ptr(), t.data_ptr());  // zero-copy
  EXPECT_EQ(back.to_vector<float>(), iota_floats(6, 0.5f));
}

TEST_F(GpuNccl, TheBackendIsNcclAndTheCommDeviceIsTheGpu) {
  EXPECT_EQ(get_backend(), "nccl");
  EXPECT_EQ(comm_device(), gpu);
}

TEST_F(GpuNccl, AllReduceEveryDtypeAndOpOfTheTable) {
  for (DType dtype : all_dtypes) {
    for (ReduceOp op : capabilities("nccl").reduce_ops) {
      if (!reduce_op_supports(op, dtype)) continue;
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{1000}}) {
        SCOPED_TRACE(fmt::format("{} {} x{}", dtype_name(dtype), reduce_op_name(op), count));
        auto input = [&](int64_t i) { return reduce_input(op, 0, i); };
        Tensor t = make_tensor(dtype, count, input).to(gpu);
        all_reduce(t, op);
        std::vector<double> want;
        for (int64_t i = 0; i < count; ++i) {
          want.push_back(expected_reduction(dtype, op, {0}, [&](int) { return input(i); }));
        }
        EXPECT_EQ(values(t), want);
      }
    }
  }
}

TEST_F(GpuNccl, RootedGatheringAndScatteringOpsAtWorldSizeOne) {
  Tensor t = Tensor::from(iota_floats(5, 1.f), {}, gpu);
  broadcast(t, 0);
  EXPECT_EQ(t.to_vector<float>(), iota_floats(5, 1.f));
  reduce(t, 0, ReduceOp::Max);
  EXPECT_EQ(t.to_vector<float>(), iota_floats(5, 1.f));

  std::vector<Tensor> gathered = all_gather(t);
  ASSERT_EQ(gathered.size(), 1u);
  EXPECT_EQ(gathered[0].device(), gpu);
  EXPECT_EQ(gathered[0].to_vector<float>(), iota_floats(5, 1.f));

  std::vector<Tensor> at_root = gather(t, 0);
  ASSERT_EQ(at_root.size(), 1u);
  EXPECT_EQ(at_root[0].to_vector<float>(), iota_floats(5, 1.f));

  Tensor out = Tensor::zeros({5}, DType::Float32, gpu);
  scatter(out, {t}, 0);
  EXPECT_EQ(out.to_vector<float>(), iota_floats(5, 1.f));

  Tensor reduced = Tensor::zeros({5}, DType::Float32, gpu);
  reduce_scatter(reduced, {t}, ReduceOp::Sum);
  EXPECT_EQ(reduced.to_vector<float>(), iota_floats(5, 1.f));

  std::vector<Tensor> exchanged = {Tensor::zeros({5}, DType::Float32, gpu)};
  all_to_all(exchanged, {t});
  EXPECT_EQ(exchanged[0].to_vector<float>(), iota_floats(5, 1.f));

  barrier();
}

TEST_F(GpuNccl, CpuTensorsAreStagedThroughTheGpuAndStayOnTheCpu) {
  Tensor t = Tensor::from(iota_floats(7, 2.f));
  all_reduce(t, ReduceOp::Sum);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_EQ(t.to_vector<float>(), iota_floats(7, 2.f));
  broadcast(t, 0);
  EXPECT_EQ(t.to_vector<float>(), iota_floats(7, 2.f));
  std::vector<Tensor> gathered = all_gather(t);
  ASSERT_EQ(gathered.size(), 1u);
  EXPECT_EQ(gathered[0].to_vector<float>(), iota_floats(7, 2.f));
  // What the table does not stage is refused, naming the table's reason.
  EXPECT_THROW(reduce(t, 0), Unsupported);
}

TEST_F(GpuNccl, AsyncWorkCompletesOnItsEvent) {
  Tensor t = Tensor::from(iota_floats(1 << 20, 0.f), {}, gpu);
  Work work = all_reduce_async(t, ReduceOp::Max);
  work.wait();
  EXPECT_TRUE(work.is_completed());
  EXPECT_EQ(work.exception(), nullptr);
  EXPECT_EQ(t.to_vector<float>(), iota_floats(1 << 20, 0.f));
  // Nobody waits: the watchdog finishes the op when its event fires (bounded poll, no sleep).
  Tensor unwaited = Tensor::from(iota_floats(16, 3.f), {}, gpu);
  Work polled = all_reduce_async(unwaited);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!polled.is_completed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(polled.is_completed());
  polled.wait();
  EXPECT_EQ(unwaited.to_vector<float>(), iota_floats(16, 3.f));
  std::vector<Work> many;
  std::vector<Tensor> tensors;
  for (int i = 0; i < 8; ++i) tensors.push_back(Tensor::from(iota_floats(100, float(i)), {}, gpu));
  for (Tensor& each : tensors) many.push_back(all_reduce_async(each));
  for (Work& w : many) w.wait();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(tensors[i].to_vector<float>(), iota_floats(100, float(i)));
}

TEST_F(GpuNccl, ReceiveFromAnySourceIsUnsupported) {
  Tensor t = Tensor::zeros({1}, DType::Float32, gpu);
  EXPECT_THROW(irecv(t, any_source).wait(), Unsupported);
}

// Nobody sends: the watchdog (or the waiting call) times the receive out, the message has the
// simulator's shape and the flight recorder's entry, and the group is aborted. The public API
// refuses a receive from oneself, and a world of one has no other rank, so the request goes to
// the backend directly, numbered as dispatch numbers it.
TEST_F(Gpu, AStuckReceiveTimesOutAndAbortsTheGroup) {
  if (!RANKS_HAS_NCCL) GTEST_SKIP() << "nccl: " << RANKS_NCCL_STATUS;
  backends::WorldSetup setup;
  setup.store = std::make_shared<HashStore>(30s);
  setup.timeout = 30s;
  std::unique_ptr<Backend> world = backends::create_world("nccl", setup);
  auto request = [](OpKind kind, Tensor t, uint64_t seq) {
    OpRequest r;
    r.kind = kind;
    r.root = 0;
    (kind == OpKind::Recv ? r.outputs : r.inputs).push_back(t);
    if (kind == OpKind::AllReduce) r.outputs.push_back(t);
    r.seq = seq;
    r.timeout = 30s;
    r.where = std::source_location::current();
    return r;
  };
  Work stuck = world->submit(request(OpKind::Recv, Tensor::zeros({4}, DType::Float32, gpu), 0));
  std::string message;
  try {
    stuck.wait(500ms);
    ADD_FAILURE() << "the receive completed";
  } catch (const Timeout& e) {
    message = e.what();
  }
  EXPECT_TRUE(Contains(message,
                       "rank 0 timed out after 500 ms in recv on group 'world' seq 0 at "
                       "gpu_nccl_test.cpp:"));
  EXPECT_TRUE(Contains(message, "rank 0 has sent no message"));
  EXPECT_TRUE(Contains(message,
                       "flight recorder of group 'world': 1 op(s) in flight: seq 0 recv "
                       "- -> float32[4] on cuda:0 at gpu_nccl_test.cpp:"));
  Work later =
      world->submit(request(OpKind::AllReduce, Tensor::zeros({1}, DType::Float32, gpu), 0));
  try {
    later.wait();
    ADD_FAILURE() << "an op on the aborted group succeeded";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "group 'world' failed earlier"));
  }
}

// A whole scenario program (a training step with every collective it uses) under
// `ranks run --backend nccl` at world size 1.
TEST_F(Gpu, RanksRunsTheTrainingStepOnNccl) {
  if (!RANKS_HAS_NCCL) GTEST_SKIP() << "nccl: " << RANKS_NCCL_STATUS;
  const std::string command = fmt::format("timeout 120 {} run -n 1 --backend nccl -- {} 2>&1",
                                          RANKS_CLI_PATH, RANKS_TRAIN_STEP_PATH);
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << output;
}

}  // namespace
}  // namespace ranks::testing
