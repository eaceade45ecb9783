// Bug: every rank receives from its right neighbour before sending to its left one. Receives
// block until a matching send, so the ring waits on itself forever. Fix: send first with isend,
// or alternate the order on odd ranks.
//   ranks sim -n 4 -- bug_recv_cycle        -> deadlock, wait-for cycle 0 → 1 → 2 → 3 → 0

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const auto [rank, world] = ranks::get_dist_info();
    auto buffer = ranks::Tensor::zeros({16}, ranks::DType::Float32, ranks::comm_device());
    ranks::recv(buffer, (rank + 1) % world);  // @where:recv
    ranks::send(buffer, (rank + world - 1) % world);
  });
}
