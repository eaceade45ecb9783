#pragma once
// A rank that blocks or spins outside ranks (a real sleep or lock, I/O, polling for a file that
// another rank is to write) never hands the thread back, and every simulated rank shares that
// thread: the run would hang with no report, where real ranks would time out waiting for it.
// The guard watches the engine's fiber switches from a thread of its own; when none happens for
// the run's timeout of real time, it has the engine end the process with a timeout report.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ranks::sim::detail {

class Engine;

class WallGuard {
 public:
  WallGuard(Engine& engine, std::chrono::milliseconds timeout);
  ~WallGuard();  // the run is over: stops watching
  WallGuard(const WallGuard&) = delete;
  WallGuard& operator=(const WallGuard&) = delete;

 private:
  void watch();

  Engine& engine_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ranks::sim::detail
