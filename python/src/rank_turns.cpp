#include "rank_turns.hpp"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "bindings.hpp"
#include "ranks/ranks.hpp"

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

// Each rank's thread (Python's thread ident), for where_is_rank.
std::mutex idents_lock;
std::unordered_map<int, unsigned long> rank_idents;

// The innermost frame of the thread `ident` outside ranks and the libraries it is called through
// (torch): "train.py:12 (in wait_for_file)"; "" when it has none. With the lock held.
std::string line_of_thread(unsigned long ident) {
  PyObject* frames = _PyThread_CurrentFrames();
  if (frames == nullptr) {
    PyErr_Clear();
    return "";
  }
  PyObject* key = PyLong_FromUnsignedLong(ident);
  PyObject* frame = key != nullptr ? PyDict_GetItemWithError(frames, key) : nullptr;
  Py_XDECREF(key);
  Py_XINCREF(frame);
  Py_DECREF(frames);
  std::string line;
  while (frame != nullptr && line.empty()) {
    PyCodeObject* code = PyFrame_GetCode(reinterpret_cast<PyFrameObject*>(frame));
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    if (file != nullptr && !in_package_file(file)) {
      const std::string_view path(file);
      const size_t slash = path.rfind('/');
      const char* name = PyUnicode_AsUTF8(code->co_name);
      line = fmt::format("{}:{} (in {})", slash == std::string_view::npos ? path : path.substr(slash + 1),
                         PyFrame_GetLineNumber(reinterpret_cast<PyFrameObject*>(frame)),
                         name != nullptr ? name : "?");
    }
    Py_DECREF(code);
    PyObject* back = reinterpret_cast<PyObject*>(PyFrame_GetBack(reinterpret_cast<PyFrameObject*>(frame)));
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  PyErr_Clear();
  return line;
}

// Options::where_is_rank: the rank's current Python line. The lock may be held by the rank
// itself (busy in Python, it lets go within the interpreter's switch interval; inside a C call
// that never lets go, it does not), so it is taken on a helper thread and given up on after a
// bounded wait: the report then goes without the line.
std::string where_is_rank(int rank) {
  unsigned long ident = 0;
  {
    std::lock_guard<std::mutex> held(idents_lock);
    auto found = rank_idents.find(rank);
    if (found == rank_idents.end()) return "";
    ident = found->second;
  }
  struct Answer {
    std::mutex lock;
    std::condition_variable ready;
    bool done = false;
    std::string line;
  };
  auto answer = std::make_shared<Answer>();
  std::thread([answer, ident] {
    const PyGILState_STATE state = PyGILState_Ensure();
    std::string line = line_of_thread(ident);
    PyGILState_Release(state);
    std::lock_guard<std::mutex> held(answer->lock);
    answer->line = std::move(line);
    answer->done = true;
    answer->ready.notify_one();
  }).detach();
  std::unique_lock<std::mutex> held(answer->lock);
  answer->ready.wait_for(held, std::chrono::seconds(2), [&] { return answer->done; });
  return answer->done ? answer->line : "";
}

}  // namespace

void RankTurns::adjust(sim::Options& options) {
  options.rank_threads = true;
  options.on_turn_given = give_turn;
  options.on_turn_taken = take_turn;
  options.where_is_rank = where_is_rank;
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
    {
      std::lock_guard<std::mutex> held(idents_lock);
      rank_idents[ranks::get_rank()] = PyThread_get_thread_ident();
    }
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
