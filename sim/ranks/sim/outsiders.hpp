#pragma once
// Code that is not a simulated rank's reaching the simulation while it runs.
//
// A process forked from the run (os.fork() in a rank's Python body, fork() in C++) holds a copy
// of every simulated rank: had it gone on into an op, or past the end of its rank's body, it would
// have run the rest of the simulation again (and in a real run it would share its parent's
// connections). A child that ends or execs before that (subprocess, multiprocessing's "spawn",
// os._exit) is left alone; one that goes on is stopped there with a message that says why.
//
// A thread that is none of the ranks' (a threading.Thread a rank started) has no rank's Context:
// its ops would run as "not distributed", or on a rank's groups outside the simulator's turns,
// and the run would end with a verdict the real run contradicts. Its first op ends the run with
// a report that names the call (under `ranks sim`), or raises Unsupported in that thread (a
// simulation inside the program's own process, which must not be ended).

#include <atomic>
#include <string_view>

namespace ranks::sim::detail {

class Engine;

// Set in a child forked while a simulation runs in its parent.
extern std::atomic<bool> in_forked_child;

// Around a simulation: forks in this scope mark their children, and ops from threads that are
// not the ranks' are refused.
class OutsiderWatch {
 public:
  explicit OutsiderWatch(Engine& engine);
  ~OutsiderWatch();
  OutsiderWatch(const OutsiderWatch&) = delete;
  OutsiderWatch& operator=(const OutsiderWatch&) = delete;
};

// Prints why this child stops (rank: the rank whose body forked it; what: where it went on) and
// ends the child with status 70 (EX_SOFTWARE).
[[noreturn]] void stop_forked_child(int rank, std::string_view what);

// From a thread that is none of the ranks': writes the report of a run ended by its call (every
// rank as it stood; crash_report.cpp), then _exit(1).
[[noreturn]] void report_foreign_call_and_exit(Engine& engine, std::string_view message);

}  // namespace ranks::sim::detail
