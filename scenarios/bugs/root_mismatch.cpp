// Bug: ranks disagree on who broadcasts (rank 1 thinks it is the source).
//   ranks sim -n 4 -- bug_root_mismatch     -> mismatch: root 0 vs 1

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    auto weights = ranks::Tensor::zeros({4}, ranks::DType::Float32, ranks::comm_device());
    int src = ranks::get_rank() == 1 ? 1 : 0;
    ranks::broadcast(weights, src);  // @where:broadcast
  });
}
