// A crashed rank (run with a fault): rank 2 dies as it enters its third op. Under nccl the
// survivors wait in their all_reduce until the watchdog timeout; under gloo and mpi they see the
// dead peer at once (RankFailure). Either way the report says rank 2 failed first, and where.
//   ranks sim -n 4 --fault crash:rank=2,op=3 -- bug_crashed_rank                 -> crash
//   ranks sim -n 4 --backend gloo --fault crash:rank=2,op=3 -- bug_crashed_rank  -> crash

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    auto grads = ranks::Tensor::of<float>({1.0f, 2.0f}, ranks::comm_device());
    for (int step = 0; step < 5; ++step) ranks::all_reduce(grads);  // @where:step
  });
}
