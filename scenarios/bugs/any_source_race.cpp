// Bug: rank 0 receives from any source and assumes rank 1's message comes first. It usually does
// (rank 1 tends to run first), so tests pass; some schedules deliver rank 2's first.
// (gloo or mpi: NCCL has no receive from any source, so under `--backend nccl`, the default, the
// program is refused as unsupported before it can race.)
//   ranks sim -n 3 --backend gloo -- bug_any_source_race               -> ok (the FIFO schedule)
//   ranks sim -n 3 --backend gloo --seeds 1:20 -- bug_any_source_race  -> error on the first seed
//                                                                         that races

#include <ranks/ranks.hpp>
#include <stdexcept>
#include <string>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const int rank = ranks::get_rank();
    auto message = ranks::Tensor::of<int32_t>({rank}, ranks::comm_device());
    if (rank == 0) {
      ranks::recv(message, ranks::any_source);
      int first = message.to(ranks::Device::cpu()).item<int32_t>();
      if (first != 1) {  // @where:assumption
        throw std::runtime_error("expected rank 1's message first, got rank " +
                                 std::to_string(first) + "'s");
      }
      ranks::recv(message, ranks::any_source);
    } else if (rank <= 2) {
      ranks::send(message, 0);
    }
  });
}
