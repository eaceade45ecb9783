// Bug: two ranks each send to the other before receiving. A blocking send returns once the
// library holds the message, and Open MPI holds small ones (its eager protocol), so on mpi this
// passes at small sizes and hangs once the message outgrows the eager limit; gloo and NCCL never
// hold a blocking send, and hang at any size. Fix: post the receive first (irecv), or let one
// side receive first.
//   ranks sim -n 2 --backend mpi -- bug_head_to_head_send [BYTES]  -> hazard (buffering): it
//                                       completes only through buffering, and says where it hangs
// BYTES (default 16) is the size of each message.

#include <ranks/ranks.hpp>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const int64_t bytes = argc > 1 ? std::stoll(argv[1]) : 16;
  return ranks::main(argc, argv, [bytes] {
    const int rank = ranks::get_rank();
    if (rank > 1) return;
    const int peer = 1 - rank;
    auto out = ranks::Tensor::from(
        std::vector<uint8_t>(static_cast<size_t>(bytes), static_cast<uint8_t>(rank + 1)), {},
        ranks::comm_device());
    auto in = ranks::Tensor::zeros({bytes}, ranks::DType::UInt8, ranks::comm_device());
    ranks::send(out, peer);  // @where:send
    ranks::recv(in, peer);
  });
}
