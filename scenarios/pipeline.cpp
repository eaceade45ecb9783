// A pipeline of stages: rank 0 feeds micro-batches, every rank is one stage that receives an
// activation from the previous rank, transforms it and sends it on; the last stage returns the
// outputs to rank 0, which checks them. Sends are asynchronous (isend) so a stage can accept the
// next micro-batch while the previous one is still on the wire, as in 1F1B schedules.
//   ranks sim -n 4 -- pipeline

#include <cstdio>
#include <ranks/ranks.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kMicroBatches = 6;
constexpr int kWidth = 256;
constexpr int kActivationTag = 1;
constexpr int kResultTag = 2;

// Stage s maps x to 2x + s.
float stage(int s, float x) { return 2.0f * x + static_cast<float>(s); }

float input_value(int batch, int i) { return static_cast<float>(batch * 10 + i % 5); }

}  // namespace

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const auto [rank, world] = ranks::get_dist_info();
    const int last = world - 1;
    const ranks::Device device = ranks::comm_device();
    std::vector<ranks::Work> in_flight;
    std::vector<ranks::Tensor> outgoing;

    auto expected_output = [&](int batch, int i) {
      float y = input_value(batch, i);
      for (int s = 0; s < world; ++s) y = stage(s, y);
      return y;
    };
    auto check = [&](int batch, const ranks::Tensor& result) {
      const float* y = result.data<float>();
      for (int i = 0; i < kWidth; ++i) {
        if (y[i] != expected_output(batch, i)) {
          throw std::runtime_error("micro-batch " + std::to_string(batch) + " element " +
                                   std::to_string(i) + " is " + std::to_string(y[i]) +
                                   ", expected " + std::to_string(expected_output(batch, i)));
        }
      }
    };

    for (int batch = 0; batch < kMicroBatches; ++batch) {
      // A stage computes on the host and communicates from the backend's device (a gpu for nccl).
      ranks::Tensor activation = ranks::Tensor::empty({kWidth}, ranks::DType::Float32);
      if (rank == 0) {
        float* x = activation.data<float>();
        for (int i = 0; i < kWidth; ++i) x[i] = input_value(batch, i);
      } else {
        ranks::Tensor incoming = ranks::Tensor::empty({kWidth}, ranks::DType::Float32, device);
        ranks::recv(incoming, rank - 1, {}, kActivationTag);
        activation = incoming.to(ranks::Device::cpu());
      }
      float* x = activation.data<float>();
      for (int i = 0; i < kWidth; ++i) x[i] = stage(rank, x[i]);
      if (world == 1) {
        check(batch, activation);
        continue;
      }
      bool last_stage = rank == last;
      outgoing.push_back(activation.to(device));  // an isend's tensor must live until its wait()
      in_flight.push_back(ranks::isend(outgoing.back(), last_stage ? 0 : rank + 1, {},
                                       last_stage ? kResultTag : kActivationTag));
    }
    if (rank == 0 && world > 1) {
      for (int batch = 0; batch < kMicroBatches; ++batch) {
        ranks::Tensor result = ranks::Tensor::empty({kWidth}, ranks::DType::Float32, device);
        // From the last stage by name: NCCL has no receive from any source.
        int from = ranks::recv(result, last, {}, kResultTag);
        if (from != last) throw std::runtime_error("result came from rank " + std::to_string(from));
        check(batch, result.to(ranks::Device::cpu()));
      }
    }
    for (auto& work : in_flight) work.wait();
    ranks::barrier();
    if (rank == 0)
      std::printf("pipeline: %d stages, %d micro-batches checked\n", world, kMicroBatches);
  });
}
