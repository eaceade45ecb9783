// Bug: one rank meets a bad setting and calls exit() while the others go on to the next
// collective. For real, the others hang until their timeout; simulated, every rank shares the
// one process exit() ends, so the run stops there and the report names the rank.
//   ranks sim -n 4 -- bug_early_exit   -> crash: rank 1 called exit() after entering its op 1

#include <cstdio>
#include <cstdlib>
#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    ranks::barrier();  // @where:first
    if (ranks::get_rank() == 1) {
      std::fprintf(stderr, "rank 1: bad setting, giving up\n");
      std::exit(3);  // the bug: ends this process, and under the simulator every rank
    }
    ranks::barrier();  // @where:second
  });
}
