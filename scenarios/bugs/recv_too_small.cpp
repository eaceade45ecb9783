// Bug: a pipeline stage grows its activations (3 values) but the next stage still receives into
// a tensor sized for the old shape (2 values).
//   ranks sim -n 2 -- bug_recv_too_small                   -> mismatch, naming both sizes
//   ranks run -n 2 --backend gloo -- bug_recv_too_small    -> rank 0 exits 1 with a clear error
//     (gloo checks sizes on its network thread, where no error can be caught; the process
//     leaves as a rank with an uncaught error does, not with SIGABRT)

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    if (ranks::get_rank() == 1) {
      ranks::send(ranks::Tensor::of<float>({1.0f, 2.0f, 3.0f}, ranks::comm_device()),
                  0);  // @where:send
    } else {
      auto activations = ranks::Tensor::empty({2}, ranks::DType::Float32, ranks::comm_device());
      ranks::recv(activations, 1);  // @where:recv
    }
  });
}
