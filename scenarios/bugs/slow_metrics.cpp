// Bug (a real MMEngine evaluation failure): rank 0 computes the metrics for 40 minutes while the
// other ranks already wait in the next collective, whose timeout is the default 30 minutes.
// Nothing hangs forever — rank 0 would arrive — but it arrives too late.
//   ranks sim -n 4 -- bug_slow_metrics      -> timeout at 30 virtual minutes, rank 0 missing

#include <chrono>
#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    auto results = ranks::Tensor::of<float>({0.75f}, ranks::comm_device());
    if (ranks::get_rank() == 0) ranks::sleep_for(std::chrono::minutes(40));  // computing metrics
    ranks::all_reduce(results, "mean");                                      // @where:all_reduce
  });
}
