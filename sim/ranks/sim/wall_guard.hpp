#pragma once
// A rank that blocks or spins outside ranks (a real sleep or lock, I/O, polling for a file that
// another rank is to write) never hands the thread back, and every simulated rank shares that
// thread: the run would hang with no report, where real ranks would time out waiting for it.
//
// The guard is a POSIX timer that signals the run's own thread once per timeout of real time.
// The handler compares the engine's count of fiber switches with the count at the last signal:
// when it has not moved, the running rank has kept the thread for at least a timeout, and the
// handler writes the timeout report and ends the process (report_stall_and_exit). A timer, not a
// watchdog thread: a second thread makes glibc and libstdc++ leave their single-threaded fast
// paths (every shared_ptr count becomes a locked instruction), which cost 7 % of a 4,096-rank
// run. The signal is SIGRTMAX - 1, with SA_RESTART; sleep_for and most system calls go on as if
// it had not come.

#include <chrono>
#include <cstdint>
#include <ctime>

namespace ranks::sim::detail {

class Engine;

class WallGuard {
 public:
  WallGuard(Engine& engine, std::chrono::milliseconds timeout);
  ~WallGuard();  // the run is over: stops the timer
  WallGuard(const WallGuard&) = delete;
  WallGuard& operator=(const WallGuard&) = delete;

  // From the signal handler: the run has switched fibers since the last look (arm again), or not.
  void look();

 private:
  void arm();

  Engine& engine_;
  std::chrono::milliseconds timeout_;
  uint64_t seen_ = 0;
  timer_t timer_{};
  bool has_timer_ = false;
};

}  // namespace ranks::sim::detail
