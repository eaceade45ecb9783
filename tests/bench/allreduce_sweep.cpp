// Our all_reduce through the same sweep as ../shared/anchors/mpi_allreduce.c and
// gloo_allreduce.cc (bench_common.h's policy: sizes 8 B, x4, ..., 64 MiB; iterations
// clamp(2^29 / bytes, 10, 5000); warm-up clamp(iters / 10, 2, 100); a barrier, then the timed
// loop; time = the slowest rank's loop time / iters; float32 sum), so reports/raw_vs_ranks.sh
// can put the raw libraries and ranks side by side in one run. Ours is in place (the API has
// no separate output), theirs writes a second buffer; each size is checked before it is timed.
// --copy-in copies the checked input into the tensor before every all_reduce (what the raw
// libraries' separate input and output cost them), so the reduced values stay those of the check
// instead of doubling up to inf.
//   mpirun -np 2 -x RANKS_BACKEND=mpi allreduce_sweep      ranks run -n 2 -- allreduce_sweep

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ranks/ranks.hpp>

namespace {

long iterations(size_t bytes) {
  const double it =
      std::clamp(static_cast<double>(size_t{1} << 29) / static_cast<double>(bytes), 10.0, 5000.0);
  return static_cast<long>(it);
}

// Each element i of rank r holds r + 1 + i % 7 (exact in float32); the sum over n ranks is
// n(n + 1)/2 + n (i % 7).
// input keeps this rank's values.
long wrong_elements(ranks::Tensor& t, ranks::Tensor& input, int rank, int n) {
  float* data = t.data<float>();
  const int64_t count = t.numel();
  for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + 1 + i % 7);
  input.copy_(t);
  ranks::all_reduce(t);
  long wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double want = n * (n + 1) / 2.0 + n * static_cast<double>(i % 7);
    wrong += data[i] != static_cast<float>(want);
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  size_t max_bytes = size_t{64} << 20;
  bool copy_in = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc) {
      max_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--copy-in") == 0) {
      copy_in = true;
    }
  }
  return ranks::main(argc, argv, [&] {
    const auto [rank, n] = ranks::get_dist_info();
    if (rank == 0) {
      std::printf("# system=ranks-%s op=allreduce nranks=%d dtype=float32 (in place%s)\n",
                  ranks::get_backend().value_or("none").c_str(), n,
                  copy_in ? ", input copied in before each op" : "");
      std::printf("%12s %8s %12s %12s %12s\n", "bytes", "iters", "time_us", "algbw_GBps",
                  "busbw_GBps");
    }
    long total_wrong = 0;
    for (size_t bytes = 8; bytes != 0;
         bytes = bytes >= max_bytes ? 0 : std::min(bytes * 4, max_bytes)) {
      const auto count = static_cast<int64_t>(bytes / sizeof(float));
      ranks::Tensor t = ranks::Tensor::zeros({count}, ranks::DType::Float32);
      ranks::Tensor input = ranks::Tensor::zeros({count}, ranks::DType::Float32);
      ranks::Tensor wrong = ranks::Tensor::of<int64_t>({wrong_elements(t, input, rank, n)});
      ranks::all_reduce(wrong);
      total_wrong += wrong.to_vector<int64_t>()[0];
      const long iters = iterations(bytes);
      const long warm = std::clamp(iters / 10, 2L, 100L);
      auto op = [&] {
        if (copy_in) t.copy_(input);
        ranks::all_reduce(t);
      };
      for (long i = 0; i < warm; ++i) op();
      ranks::barrier();
      const auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < iters; ++i) op();
      const double per_op =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
      ranks::Tensor worst = ranks::Tensor::of<double>({per_op});
      ranks::all_reduce(worst, ranks::ReduceOp::Max);
      const double sec = worst.to_vector<double>()[0];
      if (rank == 0) {
        const double algbw = static_cast<double>(bytes) / sec / 1e9;
        std::printf("%12zu %8ld %12.3f %12.4f %12.4f\n", bytes, iters, sec * 1e6, algbw,
                    algbw * 2.0 * (n - 1) / n);
        std::fflush(stdout);
      }
    }
    if (rank == 0) std::printf("# check=%s\n", total_wrong == 0 ? "ok" : "FAILED");
    if (total_wrong != 0) throw ranks::Error("all_reduce gave wrong sums");
  });
}
