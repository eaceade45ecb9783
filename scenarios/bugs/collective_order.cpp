// Bug: rank 0 averages the loss before broadcasting the config; the others do it the other way
// round. Each rank's first collective on the group is a different op: on a real job the ranks
// pair up the wrong calls and compute garbage or hang. The simulator stops at the first one.
//   ranks sim -n 4 -- bug_collective_order  -> mismatch at seq 0: all_reduce vs broadcast

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    auto loss = ranks::Tensor::of<float>({1.0f}, ranks::comm_device());
    auto config = ranks::Tensor::of<int32_t>({7, 7}, ranks::comm_device());
    if (ranks::get_rank() == 0) {
      ranks::all_reduce(loss, "mean");  // @where:rank0
      ranks::broadcast(config, 0);
    } else {
      ranks::broadcast(config, 0);  // @where:others
      ranks::all_reduce(loss, "mean");
    }
  });
}
