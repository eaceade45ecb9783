#pragma once
// A run told to stop from outside (SIGINT from a terminal, SIGTERM from a CI system's time limit
// or `timeout`, SIGHUP from a closed session) ends with the report of where every rank stood,
// as a rank's crash or a stall does (crash_report.cpp), then dies of the signal, so that the
// shell and the launcher see what ended it. Only for runs whose process installed the crash
// report (ranks::main, and so `ranks sim`): a library caller of sim::run keeps its own handlers
// (Python's KeyboardInterrupt, say).
//
// With fibers the handler writes the report itself, on whichever thread took the signal. With
// rank threads, the ranks' threads are made with the three signals blocked, so the caller of
// run() takes them; the handler only notes the signal and wakes that thread, which asks where
// the running rank is now (Options::where_is_rank: a Python rank's line) before writing.

#include <atomic>
#include <cstdint>
#include <string_view>

#include <signal.h>

namespace ranks::sim::detail {

class Engine;

// The crash report's handlers are installed in this process (install_crash_report).
bool crash_report_installed();

// While it lives: SIGINT, SIGTERM and SIGHUP end `engine`'s run with its report. Does nothing
// unless crash_report_installed(); restores the handlers it found.
class InterruptionReport {
 public:
  explicit InterruptionReport(Engine& engine);
  ~InterruptionReport();
  InterruptionReport(const InterruptionReport&) = delete;
  InterruptionReport& operator=(const InterruptionReport&) = delete;

  // Rank threads: a signal is noted, and `word` (the watching thread's futex word) woken, instead
  // of the report being written where the signal landed. Null: back to writing it there.
  static void wake_on_signal(std::atomic<uint32_t>* word);
  // The signal noted for the watching thread, or 0.
  static int noted_signal();

 private:
  bool installed_ = false;
  struct sigaction previous_[3]{};
};

// Blocks SIGINT, SIGTERM and SIGHUP on the calling thread while it lives: threads made meanwhile
// inherit the mask and leave the signals to the thread that watches them.
class InterruptionsBlocked {
 public:
  InterruptionsBlocked();
  ~InterruptionsBlocked();
  InterruptionsBlocked(const InterruptionsBlocked&) = delete;
  InterruptionsBlocked& operator=(const InterruptionsBlocked&) = delete;

 private:
  sigset_t previous_{};
};

// Writes the report of a run interrupted by `sig` (the running rank, with now_at when the caller
// can tell where it is now, and every other rank as it stood; no allocation), then ends the
// process by that signal.
[[noreturn]] void report_interruption_and_exit(Engine& engine, int sig, std::string_view now_at);

}  // namespace ranks::sim::detail
