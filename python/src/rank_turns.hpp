#pragma once
// Python rank bodies on threads of their own (sim::Options::rank_threads): what torch programs
// need, since torch keeps per-thread C++ state (autograd, grad mode) that fibers of one thread
// would share. Each rank's thread has its own thread state for its whole life and holds the
// interpreter lock while it has the turn: it lets go of the lock as it gives the turn to another
// rank's thread and retakes it as it gets the turn back. One rank runs at a time, so the lock is
// never contended by ranks. The caller of the run lets go of the lock until the run is over.
// Each rank's own __main__ (a script run) is put in sys.modules whenever that rank has the turn.

#include <Python.h>

#include <functional>

#include "ranks/sim.hpp"

namespace ranks::python {

class RankTurns {
 public:
  // On the caller's thread, with the interpreter lock held, for the length of the run.
  RankTurns();
  ~RankTurns();  // the caller's __main__ back
  // Makes the run's ranks threads, with the hooks that hand the interpreter lock over.
  static void adjust(sim::Options& options);
  RankTurns(const RankTurns&) = delete;
  RankTurns& operator=(const RankTurns&) = delete;

  // The body each rank thread runs: body() with a thread state of the thread's own and the
  // interpreter lock held, both given up when it returns or throws.
  static std::function<void()> on_own_thread(std::function<void()> body);
  // Whether this thread is a rank thread of a run.
  static bool on_rank_thread() noexcept;
  // Called (no arguments, the lock held) on a rank thread as it gives the turn away while its
  // body goes on, and as it takes it back; null: nothing. For per-rank state kept in one
  // process-wide place, saved and restored around every turn.
  static void set_turn_callbacks(PyObject* given, PyObject* taken);
  // The running rank's own __main__ from now on (see above).
  static void set_main_module(PyObject* module);

 private:
  PyObject* caller_main_ = nullptr;  // strong
};

}  // namespace ranks::python
