// Bug: a reduce_scatter of gpu tensors on a backend that has it for cpu tensors only (a job
// written for nccl, started with gloo). Under `ranks sim --backend gloo` this stops at once,
// instead of on the cluster after the job has been queued.
//   ranks sim -n 4 --backend gloo -- bug_unsupported_op   -> unsupported

#include <ranks/ranks.hpp>
#include <vector>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const int world = ranks::get_world_size();
    const auto gpu = ranks::Device::cuda(ranks::get_local_rank());
    std::vector<ranks::Tensor> shards;
    for (int r = 0; r < world; ++r)
      shards.push_back(ranks::Tensor::zeros({4}, ranks::DType::Float32, gpu));
    auto mine = ranks::Tensor::zeros({4}, ranks::DType::Float32, gpu);
    ranks::reduce_scatter(mine, shards);  // @where:reduce_scatter
  });
}
