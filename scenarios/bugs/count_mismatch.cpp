// Bug: ranks all_reduce buffers of different lengths (rank 2's last batch is smaller).
//   ranks sim -n 4 -- bug_count_mismatch    -> mismatch: element count 8 vs 6

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    int64_t count = ranks::get_rank() == 2 ? 6 : 8;
    auto grads = ranks::Tensor::zeros({count}, ranks::DType::Float32, ranks::comm_device());
    ranks::all_reduce(grads);  // @where:all_reduce
  });
}
