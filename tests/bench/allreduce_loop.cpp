// The simulator side of the SMPI comparison: the same program as
// ../shared/anchors/smpi_allreduce.c (a checked all_reduce, one warm-up, a barrier, then --iters
// all_reduces of --bytes of float32, SUM, from a send buffer into a receive buffer), built on
// ranks::main, so `ranks sim -n N -- allreduce_loop` is the whole measured process.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  long bytes = 8, iters = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atol(argv[i + 1]);
  }
  const int64_t count = std::max<int64_t>(1, bytes / 4);
  return ranks::main(argc, argv, [&] {
    const auto [rank, n] = ranks::get_dist_info();
    auto send = ranks::Tensor::empty({count}, ranks::DType::Float32);
    auto recv = ranks::Tensor::empty({count}, ranks::DType::Float32);
    for (int64_t i = 0; i < count; ++i) {
      send.data<float>()[i] = static_cast<float>(rank + 1) + static_cast<float>(i % 7);
    }
    // MPI_Allreduce(send, recv): recv gets a copy of send, reduced in place.
    auto allreduce = [&] {
      recv.copy_(send);
      ranks::all_reduce(recv);
    };
    allreduce();
    int64_t bad = 0;
    for (int64_t i = 0; i < count; ++i) {
      double expect = static_cast<double>(n) * (n + 1) / 2.0 + static_cast<double>(n) * (i % 7);
      if (std::fabs(recv.data<float>()[i] - expect) > 1e-3 * (std::fabs(expect) + 1.0)) ++bad;
    }
    auto all_bad = ranks::Tensor::of<int64_t>({bad});
    ranks::reduce(all_bad, 0);
    allreduce();  // warm-up
    ranks::barrier();
    for (long i = 0; i < iters; ++i) allreduce();
    if (rank == 0) {
      std::printf("allreduce_loop nranks=%d bytes=%ld iters=%ld check=%s\n", n, count * 4, iters,
                  all_bad.item<int64_t>() == 0 ? "ok" : "FAILED");
      if (all_bad.item<int64_t>() != 0) throw std::runtime_error("wrong all_reduce results");
    }
  });
}
