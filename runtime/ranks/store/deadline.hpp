#pragma once
// Deadlines for store calls. A timeout of hours must not overflow steady_clock's nanoseconds, so
// the deadline saturates instead.

#include <algorithm>
#include <chrono>

namespace ranks::store {

using Clock = std::chrono::steady_clock;

inline Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  const Clock::time_point now = Clock::now();
  const auto room =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  return now + std::clamp(timeout, std::chrono::milliseconds(0), room);
}

// Milliseconds left until deadline, never negative.
inline std::chrono::milliseconds remaining(Clock::time_point deadline) {
  const Clock::time_point now = Clock::now();
  if (deadline <= now) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
}

// While one is in scope, every store call this thread makes gives up by its deadline, whatever
// the store's own timeout: the calls made on the way to reporting a failure (who else is stuck,
// the job's first failure) must not outlast the report, and a frozen store host would hold each
// of them for the store's whole timeout. Scopes nest; the earliest deadline holds.
class CallCap {
 public:
  explicit CallCap(std::chrono::milliseconds within) : previous_(cap()) {
    cap() = std::min(previous_, deadline_after(within));
  }
  ~CallCap() { cap() = previous_; }
  CallCap(const CallCap&) = delete;
  CallCap& operator=(const CallCap&) = delete;

  // deadline, or this thread's cap when that is earlier.
  static Clock::time_point apply(Clock::time_point deadline) { return std::min(deadline, cap()); }
  // Whether a cap is in force on this thread.
  static bool active() { return cap() != Clock::time_point::max(); }

 private:
  static Clock::time_point& cap() {
    thread_local Clock::time_point deadline = Clock::time_point::max();
    return deadline;
  }
  Clock::time_point previous_;
};

}  // namespace ranks::store
