#include "ranks/sim/wall_guard.hpp"

#include <algorithm>

#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

WallGuard::WallGuard(Engine& engine, std::chrono::milliseconds timeout)
    : engine_(engine), timeout_(timeout), thread_([this] { watch(); }) {}

WallGuard::~WallGuard() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_requested_.notify_one();
  thread_.join();
}

void WallGuard::watch() {
  using namespace std::chrono_literals;
  // Looking eight times per timeout puts the report within an eighth of it past the deadline;
  // a run switches fibers millions of times a second, so one look costs nothing it would notice.
  const auto look_every = std::clamp<std::chrono::milliseconds>(timeout_ / 8, 1ms, 10s);
  uint64_t seen = engine_.switches();
  auto unchanged_since = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  while (!stop_requested_.wait_for(lock, look_every, [this] { return stop_; })) {
    const uint64_t switches = engine_.switches();
    const auto now = std::chrono::steady_clock::now();
    if (switches != seen) {
      seen = switches;
      unchanged_since = now;
    } else if (std::chrono::duration_cast<std::chrono::milliseconds>(now - unchanged_since) >=
               timeout_) {  // in the timeout's unit: a huge timeout must not overflow
      lock.unlock();
      engine_.on_wall_stall();  // does not return: the process ends with the report
    }
  }
}

}  // namespace ranks::sim::detail
