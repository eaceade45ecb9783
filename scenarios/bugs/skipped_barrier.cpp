// Bug: a rank with no data returns early and never reaches the barrier the others wait in.
//   ranks sim -n 4 -- bug_skipped_barrier   -> deadlock: rank 3 finished without calling it

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    const auto [rank, world] = ranks::get_dist_info();
    int samples = rank == world - 1 ? 0 : 100;  // the last shard happens to be empty
    if (samples == 0) return;                   // the bug: skips the barrier below
    ranks::barrier();                           // @where:barrier
  });
}
