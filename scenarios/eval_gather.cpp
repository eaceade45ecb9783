// An evaluation step: the dataset is sharded round-robin (as DistributedSampler does, so shards
// differ in size by one), each rank scores its shard, and rank 0 gathers every prediction back in
// dataset order and computes the accuracy. The number of correct answers is also all_reduced,
// and the two figures must agree.
//   ranks sim -n 8 -- eval_gather

#include <algorithm>
#include <cstdio>
#include <ranks/ranks.hpp>
#include <stdexcept>
#include <vector>

namespace {

constexpr int kSamples = 1001;

// The "model": right on samples whose index is not divisible by 3.
int64_t predict(int sample) { return sample % 3 == 0 ? -1 : sample % 10; }
int64_t label(int sample) { return sample % 10; }

}  // namespace

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const auto [rank, world] = ranks::get_dist_info();
    const int shard = (kSamples + world - 1) / world;  // padded so every rank sends one shape

    std::vector<int64_t> predictions(static_cast<size_t>(shard), -2);  // -2: padding
    int64_t correct = 0;
    for (int k = 0; rank + k * world < kSamples; ++k) {
      int sample = rank + k * world;
      predictions[static_cast<size_t>(k)] = predict(sample);
      correct += predict(sample) == label(sample) ? 1 : 0;
    }

    // Communicate from the backend's device (a gpu for nccl), read results on the host.
    const ranks::Device device = ranks::comm_device();
    auto gathered = ranks::gather(ranks::Tensor::from(predictions).to(device), 0);
    for (auto& part : gathered) part = part.to(ranks::Device::cpu());
    auto total_correct = ranks::Tensor::of<int64_t>({correct});
    ranks::all_reduce(total_correct);

    if (rank != 0) {
      if (!gathered.empty()) throw std::runtime_error("gather returned data on a non-root rank");
      return;
    }
    int64_t correct_from_gather = 0;
    for (int sample = 0; sample < kSamples; ++sample) {
      int64_t p = gathered[static_cast<size_t>(sample % world)].data<int64_t>()[sample / world];
      if (p != predict(sample)) throw std::runtime_error("prediction out of order");
      correct_from_gather += p == label(sample) ? 1 : 0;
    }
    int64_t expected = 0;
    for (int sample = 0; sample < kSamples; ++sample) expected += sample % 3 != 0 ? 1 : 0;
    if (correct_from_gather != expected || total_correct.item<int64_t>() != expected) {
      throw std::runtime_error(
          "accuracy disagrees: gathered " + std::to_string(correct_from_gather) + ", all_reduced " +
          std::to_string(total_correct.item<int64_t>()) + ", expected " + std::to_string(expected));
    }
    std::printf("eval_gather: %d ranks, %d samples, accuracy %.4f\n", world, kSamples,
                static_cast<double>(expected) / kSamples);
  });
}
