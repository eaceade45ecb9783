#pragma once
// A process forked from a simulated run (os.fork() in a rank's Python body, fork() in C++) holds
// a copy of every simulated rank: had it gone on into an op, or past the end of its rank's body,
// it would have run the rest of the simulation again, printing and reporting as if it were the
// run (and in a real run it would share its parent's connections). A child that ends, or
// execs, before that (subprocess, multiprocessing's "spawn", os._exit) is left alone; one that
// goes on is stopped there with a message that says why.

#include <atomic>
#include <string_view>

namespace ranks::sim::detail {

// Set in a child forked while a simulation runs in its parent.
extern std::atomic<bool> in_forked_child;

// Around a simulation: forks in this scope mark their children.
class ForkWatch {
 public:
  ForkWatch();
  ~ForkWatch();
  ForkWatch(const ForkWatch&) = delete;
  ForkWatch& operator=(const ForkWatch&) = delete;
};

// Prints why this child stops (rank: the rank whose body forked it; what: where it went on) and
// ends the child with status 70 (EX_SOFTWARE).
[[noreturn]] void stop_forked_child(int rank, std::string_view what);

}  // namespace ranks::sim::detail
