#include "rank_turns.hpp"

#include <utility>

namespace ranks::python {

namespace {

// Per rank thread: the state it let go of the lock with while another rank has the turn, and
// its own __main__ (strong; null: the caller's).
thread_local PyThreadState* waiting_state = nullptr;
thread_local PyObject* rank_main = nullptr;
thread_local bool is_rank_thread = false;
// Python callables (strong; null: none) called on a rank thread, holding the interpreter lock,
// as it gives the turn away and as it takes it back: where per-rank state that lives in one
// process-wide place (torch's default generator) is saved and restored.
PyObject* on_given = nullptr;
PyObject* on_taken = nullptr;

void call_turn_callback(PyObject* callback) noexcept {
  if (callback == nullptr) return;
  if (PyObject* result = PyObject_CallNoArgs(callback)) {
    Py_DECREF(result);
  } else {
    PyErr_WriteUnraisable(callback);  // a hand-over cannot fail; say what went wrong
  }
}

void install_rank_main() noexcept {
  if (rank_main == nullptr) return;
  if (PyDict_SetItemString(PyImport_GetModuleDict(), "__main__", rank_main) != 0) PyErr_Clear();
}

void give_turn() noexcept {
  // A rank may give the turn inside a call that let go of the lock itself (torch releases it
  // around its own C++ work): then there is nothing to let go of.
  if (!PyGILState_Check()) return;
  call_turn_callback(on_given);
  waiting_state = PyEval_SaveThread();
}

void take_turn() noexcept {
  if (PyThreadState* state = std::exchange(waiting_state, nullptr)) {
    PyEval_RestoreThread(state);
    install_rank_main();
    call_turn_callback(on_taken);
  }
}

}  // namespace

void RankTurns::adjust(sim::Options& options) {
  options.rank_threads = true;
  options.on_turn_given = give_turn;
  options.on_turn_taken = take_turn;
}

RankTurns::RankTurns() {
  caller_main_ = PyDict_GetItemString(PyImport_GetModuleDict(), "__main__");
  Py_XINCREF(caller_main_);
}

RankTurns::~RankTurns() {
  if (caller_main_ != nullptr &&
      PyDict_SetItemString(PyImport_GetModuleDict(), "__main__", caller_main_) != 0) {
    PyErr_Clear();
  }
  Py_CLEAR(caller_main_);
}

std::function<void()> RankTurns::on_own_thread(std::function<void()> body) {
  return [body = std::move(body)] {
    const PyGILState_STATE state = PyGILState_Ensure();
    is_rank_thread = true;
    struct Leave {
      PyGILState_STATE state;
      ~Leave() {
        Py_CLEAR(rank_main);
        is_rank_thread = false;
        PyGILState_Release(state);  // deletes the thread's state and lets go of the lock
      }
    } leave{state};
    body();
  };
}

bool RankTurns::on_rank_thread() noexcept { return is_rank_thread; }

void RankTurns::set_turn_callbacks(PyObject* given, PyObject* taken) {
  Py_XINCREF(given);
  Py_XINCREF(taken);
  Py_XSETREF(on_given, given);
  Py_XSETREF(on_taken, taken);
}

void RankTurns::set_main_module(PyObject* module) {
  Py_INCREF(module);
  Py_XSETREF(rank_main, module);
  install_rank_main();
}

}  // namespace ranks::python
