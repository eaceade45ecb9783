// comm_device(): the device object collectives move their bytes on, under each backend's rules
// (the local GPU under nccl, the cpu under gloo and mpi and when not distributed), and one program
// that uses it running on every backend.

#include <fmt/format.h>

#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

std::string site(int line) { return fmt::format("comm_device_test.cpp:{}", line); }

const std::vector<std::string> backends = {"nccl", "gloo", "mpi"};

std::vector<Device> comm_devices(const std::string& backend, int n, int per_node) {
  std::vector<Device> seen(static_cast<size_t>(n), Device::cuda(99));
  sim::Options options = options_for(backend);
  options.ranks_per_node = per_node;
  run_ranks(
      n, [&] { seen[static_cast<size_t>(get_rank())] = comm_device(); }, options);
  return seen;
}

TEST(CommDevice, IsTheLocalGpuUnderNccl) {
  EXPECT_EQ(comm_devices("nccl", 4, 2), (std::vector<Device>{Device::cuda(0), Device::cuda(1),
                                                             Device::cuda(0), Device::cuda(1)}));
  EXPECT_EQ(comm_devices("nccl", 3, 0),
            (std::vector<Device>{Device::cuda(0), Device::cuda(1), Device::cuda(2)}));
  EXPECT_EQ(comm_devices("nccl", 5, 3),
            (std::vector<Device>{Device::cuda(0), Device::cuda(1), Device::cuda(2), Device::cuda(0),
                                 Device::cuda(1)}));
}

TEST(CommDevice, IsTheCpuUnderGlooAndMpi) {
  for (const char* backend : {"gloo", "mpi"}) {
    EXPECT_EQ(comm_devices(backend, 4, 2), std::vector<Device>(4, Device::cpu())) << backend;
  }
}

TEST(CommDevice, IsTheCpuWhenNotDistributed) {
  ASSERT_FALSE(is_initialized());
  EXPECT_EQ(comm_device(), Device::cpu());
}

TEST(CommDevice, AProgramThatUsesItRunsOnEveryBackend) {
  for (const std::string& backend : backends) {
    SCOPED_TRACE(backend);
    const int n = 4;
    int checked = 0;
    sim::Options options = options_for(backend);
    options.ranks_per_node = 2;
    sim::Report report = simulate(
        n,
        [&] {
          const int rank = get_rank();
          const Device dev = comm_device();
          Tensor t = Tensor::of<float>({static_cast<float>(rank + 1)}, dev);
          all_reduce(t);
          EXPECT_EQ(t.item<float>(), 10.0f);
          Tensor b = Tensor::of<int64_t>({rank * 10}, dev);
          broadcast(b, 2);
          EXPECT_EQ(b.item<int64_t>(), 20);
          auto all = all_gather(Tensor::of<int32_t>({rank}, dev));
          ASSERT_EQ(all.size(), static_cast<size_t>(n));
          for (int r = 0; r < n; ++r) {
            EXPECT_EQ(all[static_cast<size_t>(r)].item<int32_t>(), r);
            EXPECT_EQ(all[static_cast<size_t>(r)].device(), dev);
          }
          Tensor m = Tensor::of<int32_t>({rank}, dev);
          all_reduce(m, ReduceOp::Max);
          EXPECT_EQ(m.item<int32_t>(), 3);
          barrier();
          if (rank == 0) ++checked;
        },
        options);
    EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
    EXPECT_EQ(checked, 1);
  }
}

TEST(CommDevice, TheSameProgramOnCpuTensorsFailsUnderNcclAtTheFirstCpuOnlyGap) {
  // The counterpart of the test above: ignoring comm_device() is what breaks on nccl.
  int line = 0;
  sim::Report report = simulate(
      2,
      [&] {
        Tensor t = Tensor::of<float>({1.0f});
        all_reduce(t);  // staged
        line = __LINE__ + 1;
        reduce(t, 0);  // not on cpu
      },
      options_for("nccl"));
  EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
  EXPECT_TRUE(Contains(report.message, "the nccl backend does not support reduce on cpu tensors"));
  EXPECT_TRUE(Contains(report.message, site(line)));
}

// An NCCL communicator is bound to one GPU, cuda:<local rank>, and NCCL refuses two ranks on
// one: under nccl rules a tensor on another rank's GPU is an InvalidArgument, as in a real run.
TEST(CommDevice, UnderNcclEachRankUsesItsOwnGpu) {
  auto everyone_on_gpu_0 = [] {
    Tensor t = Tensor::of<float>({1.0f}, Device::cuda(0));
    all_reduce(t);
  };
  sim::Report one_node = simulate(2, everyone_on_gpu_0, options_for("nccl"));
  EXPECT_EQ(one_node.outcome, sim::Outcome::Error) << one_node.to_text();
  EXPECT_EQ(row(one_node, 1).state, "failed");
  EXPECT_TRUE(Contains(row(one_node, 1).error,
                       "tensor float32[1] on cuda:0, but this rank's nccl device is cuda:1"));
  EXPECT_TRUE(Contains(row(one_node, 1).error, "comm_device_test.cpp:"));
  // One rank per node: every rank's GPU is cuda:0.
  sim::Options two_nodes = options_for("nccl");
  two_nodes.ranks_per_node = 1;
  EXPECT_EQ(simulate(2, everyone_on_gpu_0, two_nodes).outcome, sim::Outcome::Ok);
  // gloo stages cuda tensors through the host: any GPU will do.
  EXPECT_EQ(simulate(2, everyone_on_gpu_0, options_for("gloo")).outcome, sim::Outcome::Ok);
}

// Each rank's tensors are its own: under gloo one rank may reduce a cpu tensor with the others'
// cuda ones, simulated and for real (gloo stages cuda through the host).
TEST(CommDevice, UnderGlooRanksMayMixCpuAndCudaTensors) {
  const auto body = [] {
    const int rank = get_rank();
    const Device dev = rank == 0 ? Device::cpu() : Device::cuda(get_local_rank());
    Tensor t = Tensor::of<float>({static_cast<float>(rank + 1)}, dev);
    all_reduce(t);
    EXPECT_EQ(t.to_vector<float>(), std::vector<float>{6.0f});
    EXPECT_EQ(t.device(), dev);
  };
  run_ranks(3, body, options_for("gloo"));
  if (backend_built("gloo")) run_processes("gloo", 3, body);
}

// MMEngine moves all_reduce, all_gather and broadcast tensors to the comm device (cpu under gloo)
// and back: a program written for GPUs runs under gloo unchanged, results on its own device.
TEST(CommDevice, UnderGlooCudaTensorsOfMmenginesThreeOpsGoThroughTheHost) {
  const auto body = [] {
    const int rank = get_rank();
    const Device gpu = Device::cuda(get_local_rank());
    Tensor mine = Tensor::of<int32_t>({rank, 10 * rank}, gpu);
    std::vector<Tensor> parts = all_gather(mine);
    ASSERT_EQ(parts.size(), 3u);
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(parts[static_cast<size_t>(r)].to_vector<int32_t>(),
                (std::vector<int32_t>{r, 10 * r}));
      EXPECT_EQ(parts[static_cast<size_t>(r)].device(), gpu);
    }
    Tensor sum = Tensor::of<int32_t>({rank + 1}, gpu);
    all_reduce(sum);
    EXPECT_EQ(sum.item<int32_t>(), 6);
    Tensor root_value = Tensor::of<int32_t>({rank == 2 ? 42 : 0}, gpu);
    broadcast(root_value, 2);
    EXPECT_EQ(root_value.item<int32_t>(), 42);
  };
  run_ranks(3, body, options_for("gloo"));
  if (backend_built("gloo")) run_processes("gloo", 3, body);
}

}  // namespace
}  // namespace ranks::testing
