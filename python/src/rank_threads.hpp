#pragma once
// Each simulated Python rank runs with its own PyThreadState, as a thread would: its own
// exception state, recursion depth, threading.local and contextvars. All ranks are fibers of one
// OS thread that holds the GIL throughout; on every switch to a rank (sim::Options::
// on_rank_switch) this swaps in the rank's state, points CPython's GILState slot at it, and
// swaps pybind11's two thread-specific slots (the state gil_scoped_acquire made, and the stack of
// argument keep-alives of the pybind11 calls in progress), which a rank switched out in the
// middle of a bound call leaves pointing into its own stack. Once torch is loaded, torch's grad
// mode (a C++ thread_local in libc10 that every rank on the thread would share) is kept per rank
// too: a rank inside `with torch.no_grad():` at a switch does not turn gradients off for others.

#include <Python.h>

#include <vector>

namespace ranks::python {

class RankThreads {
 public:
  // On the thread that runs the simulation, with the GIL held.
  explicit RankThreads(int world_size);  // grows if more ranks run
  ~RankThreads();  // back to the caller's state; every rank's state cleared and freed
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  // rank: the rank about to run; -1: the simulator's own fibers (the caller's state).
  void switch_to(int rank) noexcept;

  // The running rank's own __main__ module (a script run gives each rank one): from now on
  // sys.modules["__main__"] is that module while the rank runs, and the caller's otherwise.
  void set_main_module(PyObject* module);
  // The RankThreads of the run on this thread, if any.
  static RankThreads* active() noexcept;

 private:
  struct Slots {
    PyThreadState* state = nullptr;
    void* pybind_keep_alive_stack = nullptr;
    void* pybind_thread_state = nullptr;
    PyObject* main_module = nullptr;  // strong; null: the caller's
    bool grad_enabled = true;         // torch's default
  };
  void swap_torch_state(Slots& from, const Slots& to) noexcept;
  void install_main_module(const Slots& slots) noexcept;
  Slots& slots_of(int rank) noexcept { return rank < 0 ? caller_ : ranks_[rank]; }

  PyInterpreterState* interpreter_;
  Slots caller_;
  std::vector<Slots> ranks_;
  int running_ = -1;
  PyObject* caller_main_ = nullptr;  // strong; set once a rank has a __main__ of its own
  RankThreads* outer_ = nullptr;
};

}  // namespace ranks::python
