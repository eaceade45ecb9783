// What ranks adds to an NCCL all_reduce (issue #5's performance target: <= 2 us per call, <= 2%
// at 64 MiB), measured in one run on one GPU at world size 1: ranks::all_reduce on a CUDA tensor
// (dispatch, events, watchdog bookkeeping, the wait) against a direct loop of ncclAllReduce +
// cudaStreamSynchronize on a communicator of our own. Without a CUDA device every benchmark is
// skipped with the reason.
//
//   build/tests/bench/nccl_overhead --benchmark_min_time=2s

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "ranks/detail/cuda.hpp"
#include "ranks/ranks.hpp"
#include "ranks/store/stores.hpp"

namespace {

using namespace std::chrono_literals;

bool skip_without_gpu(benchmark::State& state) {
  if (ranks::detail::cuda_device_count() > 0) return false;
  state.SkipWithError(ranks::detail::cuda_unavailable_reason().c_str());
  return true;
}

void ensure_ranks_world() {
  if (ranks::is_initialized()) return;
  ranks::InitOptions options;
  options.backend = "nccl";
  options.world_size = 1;
  options.rank = 0;
  options.store = std::make_shared<ranks::HashStore>(30s);
  init_process_group(options);
}

void BM_RanksAllReduce(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  ensure_ranks_world();
  const int64_t count = state.range(0) / 4;
  ranks::Tensor t = ranks::Tensor::zeros({count}, ranks::DType::Float32, ranks::Device::cuda(0));
  ranks::all_reduce(t);  // warm-up
  for (auto _ : state) ranks::all_reduce(t);
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

struct RawNccl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* buffer = nullptr;
  RawNccl(size_t bytes) {
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    cudaSetDevice(0);
    ncclCommInitRank(&comm, 1, id, 0);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaMalloc(&buffer, bytes);
    cudaMemset(buffer, 0, bytes);
  }
  ~RawNccl() {
    cudaFree(buffer);
    cudaStreamDestroy(stream);
    ncclCommDestroy(comm);
  }
};

void BM_RawNcclAllReduce(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto bytes = static_cast<size_t>(state.range(0));
  RawNccl raw(bytes);
  auto once = [&] {
    ncclAllReduce(raw.buffer, raw.buffer, bytes / 4, ncclFloat32, ncclSum, raw.comm, raw.stream);
    cudaStreamSynchronize(raw.stream);
  };
  once();  // warm-up
  for (auto _ : state) once();
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// 8 B (call overhead), 64 KiB, 64 MiB (bandwidth-bound).
BENCHMARK(BM_RawNcclAllReduce)->Arg(8)->Arg(64 << 10)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_RanksAllReduce)->Arg(8)->Arg(64 << 10)->Arg(64 << 20)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (ranks::is_initialized()) ranks::destroy_process_group();
  return 0;
}
