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

}  // namespace ranks::store
