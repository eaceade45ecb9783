// Bug: reduce_scatter on a backend that has none. Under `ranks sim --backend gloo` this stops at
// once, instead of on the cluster after the job has been queued.
//   ranks sim -n 4 --backend gloo -- bug_unsupported_op   -> unsupported

#include <ranks/ranks.hpp>
#include <vector>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const int world = ranks::get_world_size();
    std::vector<ranks::Tensor> shards;
    for (int r = 0; r < world; ++r)
      shards.push_back(ranks::Tensor::zeros({4}, ranks::DType::Float32));
    auto mine = ranks::Tensor::zeros({4}, ranks::DType::Float32);
    ranks::reduce_scatter(mine, shards);  // @where:reduce_scatter
  });
}
