// Bug: a collective inside master_only. Only rank 0 enters the all_reduce; the others go on to
// the next collective, so rank 0's all_reduce meets their barrier.
//   ranks sim -n 4 -- bug_master_only_collective  -> mismatch at seq 0: all_reduce vs barrier

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    auto metric = ranks::Tensor::of<float>({0.5f}, ranks::comm_device());
    auto log_metrics = ranks::master_only([&] {
      ranks::all_reduce(metric, "mean");  // @where:master
    });
    log_metrics();
    ranks::barrier();  // @where:barrier
  });
}
