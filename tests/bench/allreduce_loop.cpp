// The simulator side of the SMPI comparison: the same loop as ../shared/anchors/smpi_allreduce.c
// (one warm-up, then --iters all_reduces of --bytes of float32, SUM, then a check), as a program
// built on ranks::main, so `ranks sim -n N -- allreduce_loop` is the whole measured process.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ranks/ranks.hpp>
#include <stdexcept>
#include <vector>

int main(int argc, char** argv) {
  int bytes = 8, iters = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
  }
  const int count = std::max(1, bytes / 4);
  return ranks::main(argc, argv, [&] {
    const auto [rank, world] = ranks::get_dist_info();
    std::vector<float> ones(static_cast<size_t>(count), 1.0f);
    auto t = ranks::Tensor::from(ones);
    ranks::all_reduce(t);  // warm-up
    for (int i = 0; i < iters; ++i) {
      auto x = ranks::Tensor::from(ones);
      ranks::all_reduce(x);
      t = x;
    }
    if (t.data<float>()[0] != static_cast<float>(world)) throw std::runtime_error("wrong sum");
    if (rank == 0)
      std::printf("allreduce_loop nranks=%d bytes=%d iters=%d check=ok\n", world, count * 4, iters);
  });
}
