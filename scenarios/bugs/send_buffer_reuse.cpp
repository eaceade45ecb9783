// Bug: rank 0 posts an isend, then refills the same buffer with the next batch before waiting.
// The library may still be reading it, so rank 1 gets the first batch, the second, or a mix; in
// tests it usually gets the first (small messages are copied at once), so they pass. Fix: wait
// for the send before touching its buffer, or send from a copy.
//   ranks sim -n 2 --backend gloo -- bug_send_buffer_reuse -> hazard (buffer_in_flight),
//                                                             naming the isend

#include <ranks/ranks.hpp>
#include <vector>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const int rank = ranks::get_rank();
    auto batch = ranks::Tensor::from(std::vector<float>{1, 2, 3, 4}, {}, ranks::comm_device());
    if (rank == 0) {
      ranks::Work sent = ranks::isend(batch, 1);  // @where:isend
      batch.copy_(ranks::Tensor::from(std::vector<float>{5, 6, 7, 8}, {}, ranks::comm_device()));
      sent.wait();  // @where:wait
    } else if (rank == 1) {
      ranks::recv(batch, 0);
    }
  });
}
