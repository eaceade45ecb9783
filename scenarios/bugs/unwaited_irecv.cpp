// Bug: rank 1 posts an irecv for a metric and never waits for it; it reads the buffer once a
// barrier has passed. The simulator delivers the message before the barrier ends, and so does a
// small message on most real runs, so tests pass; on a busy network the read comes first and
// sees a stale value, and an error in the receive is never seen. Fix: wait for every Work.
//   ranks sim -n 2 --backend gloo -- bug_unwaited_irecv -> hazard (unwaited_work), naming the
//                                                          irecv

#include <cstdio>
#include <ranks/ranks.hpp>
#include <vector>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const int rank = ranks::get_rank();
    auto metric = ranks::Tensor::zeros({1}, ranks::DType::Float32, ranks::comm_device());
    if (rank == 1) {
      {
        ranks::Work pending = ranks::irecv(metric, 0);  // @where:irecv
        ranks::barrier();
      }  // the Work is dropped here, never waited
      std::printf("metric from rank 0: %g\n",
                  metric.to(ranks::Device::cpu()).to_vector<float>()[0]);
    } else if (rank == 0) {
      metric.copy_(ranks::Tensor::from(std::vector<float>{0.5f}, {}, ranks::comm_device()));
      ranks::send(metric, 1);
      ranks::barrier();
    } else {
      ranks::barrier();
    }
  });
}
