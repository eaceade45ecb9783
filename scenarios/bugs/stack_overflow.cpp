// Bug: one rank recurses deeper than its stack (a nested structure parsed frame by frame) while
// the others wait in a barrier. For real, that process dies of SIGSEGV and the others lose it.
// Simulated, ranks are fibers whose stacks lie side by side: with more than 64 ranks there is no
// guard page between them, so the overflow writes over the stack of the rank below, which dies
// when it next runs. The report must name the rank that overflowed, not the one that died.
//   ranks sim -n 100 -- bug_stack_overflow   -> crash: rank 99 overflowed its stack of 256 KiB
//   ranks sim -n 8 -- bug_stack_overflow     -> crash: rank 7 overflowed its stack of 256 KiB

#include <cstdio>
#include <ranks/ranks.hpp>

namespace {

// One level of the structure per frame, 4 KiB of scratch each: 100 levels take 400 KiB.
[[gnu::noinline]] int parse(int levels) {
  volatile char scratch[4096];
  scratch[0] = static_cast<char>(levels);
  if (levels == 0) return scratch[0];
  const int below = parse(levels - 1);  // @where:recurse
  scratch[1] = static_cast<char>(below);
  return below + scratch[1] % 2;
}

}  // namespace

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    if (ranks::get_rank() == ranks::get_world_size() - 1) {
      std::printf("rank %d parsed %d\n", ranks::get_rank(), parse(100));  // the bug
    }
    ranks::barrier();  // @where:barrier
  });
}
