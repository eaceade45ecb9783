// A data-parallel training step: every rank computes gradients on its own shard, all_reduce
// averages them (mean), each rank applies the update, and rank 0's parameters are broadcast so
// that every replica provably holds the same weights. Run it:
//   ranks sim -n 8 -- train_step        (simulated)
//   ranks run -n 4 -- train_step        (real processes)

#include <cmath>
#include <cstdio>
#include <ranks/ranks.hpp>
#include <vector>

namespace {

constexpr int kParams = 1024;
constexpr int kSteps = 3;
constexpr float kLearningRate = 0.5f;

// This rank's gradient for one step: a function of (rank, step, index) so the mean is known.
float local_gradient(int rank, int step, int i) { return static_cast<float>(rank + step + i % 7); }

}  // namespace

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const auto [rank, world] = ranks::get_dist_info();
    std::vector<float> start(kParams, 1.0f);
    auto params = ranks::Tensor::from(start);

    for (int step = 0; step < kSteps; ++step) {
      std::vector<float> grad(kParams);
      for (int i = 0; i < kParams; ++i)
        grad[static_cast<size_t>(i)] = local_gradient(rank, step, i);
      auto grads = ranks::Tensor::from(grad);
      ranks::all_reduce(grads, "mean");

      float* p = params.data<float>();
      const float* g = grads.data<float>();
      for (int i = 0; i < kParams; ++i) p[i] -= kLearningRate * g[i];
      ranks::broadcast(params, 0);
    }

    // The expected parameters, computed from the closed form of the mean gradient.
    const float* p = params.data<float>();
    for (int i = 0; i < kParams; ++i) {
      double expected = 1.0;
      for (int step = 0; step < kSteps; ++step) {
        double mean = (world - 1) / 2.0 + step + i % 7;
        expected -= kLearningRate * mean;
      }
      if (std::abs(p[i] - expected) > 1e-4) {
        throw std::runtime_error("rank " + std::to_string(rank) + ": parameter " +
                                 std::to_string(i) + " is " + std::to_string(p[i]) + ", expected " +
                                 std::to_string(expected));
      }
    }
    ranks::barrier();
    if (ranks::is_main_process()) {
      std::printf("train_step: %d ranks x %d steps, %d parameters in sync\n", world, kSteps,
                  kParams);
    }
  });
}
