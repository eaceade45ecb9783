// Bug (the everyday hang of a training job): rank 0 sends rank 3 its batch only after the step's
// all_reduce, while rank 3 waits for that batch before joining the all_reduce; and rank 2 is
// still computing (a slow data loader) when the others give up. Every waiting rank times out.
//   ranks sim -n 4 -- bug_stuck_ranks                    -> timeout, with who waits for whom
//   RANKS_TIMEOUT=2 ranks run -n 4 --backend gloo -- bug_stuck_ranks
//     -> each timed-out rank says where the ranks it waits on are stuck (rank 3 in its recv,
//        rank 0 in the all_reduce) and which said nothing (rank 2, busy outside ranks)
// With --barrier-on-rank-1, rank 1 calls a barrier where the others call the all_reduce (the
// same seq, another op): the others must not count it as stuck "in this all_reduce too". Rank 0
// then reaches its all_reduce half a second after rank 1 reaches the barrier, so rank 1's deadline
// passes first: rank 1 must not close the group under rank 0 before rank 0's own deadline (gloo
// closes every connection the moment one of its waits expires).

#include <chrono>
#include <ranks/ranks.hpp>
#include <string_view>

int main(int argc, char** argv) {
  const bool barrier_on_rank_1 = argc > 1 && std::string_view(argv[1]) == "--barrier-on-rank-1";
  return ranks::main(argc, argv, [barrier_on_rank_1] {
    const int rank = ranks::get_rank();
    auto grad = ranks::Tensor::of<float>({1.0f * rank}, ranks::comm_device());
    auto batch = ranks::Tensor::zeros({4}, ranks::DType::Float32, ranks::comm_device());
    if (rank == 2) ranks::sleep_for(std::chrono::minutes(40));  // a slow data loader
    if (rank == 0 && barrier_on_rank_1) ranks::sleep_for(std::chrono::milliseconds(500));
    if (rank == 3) ranks::recv(batch, 0);                       // @where:recv
    if (rank == 1 && barrier_on_rank_1) {
      ranks::barrier();  // @where:barrier
    } else {
      ranks::all_reduce(grad, "mean");  // @where:all_reduce
    }
    if (rank == 0) ranks::send(batch, 3);  // too late for rank 3
  });
}
