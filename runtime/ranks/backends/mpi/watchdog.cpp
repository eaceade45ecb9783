#include "ranks/backends/mpi/watchdog.hpp"

#include <algorithm>
#include <thread>

#include "ranks/detail/fatal.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::mpi {

Watchdog::Watch::Watch(const Comm& comm, const OpRequest& op, std::chrono::milliseconds timeout)
    : comm_(comm),
      op_(op),
      timeout_(timeout),
      start_(timeout.count() > 0 ? Clock::now() : Clock::time_point{}),
      deadline_(start_ + timeout) {
  if (timeout_.count() > 0) instance().add(this);
}

Watchdog::Watch::~Watch() {
  if (timeout_.count() > 0) instance().remove(this);
}

Watchdog& Watchdog::instance() {
  // Never destroyed: its thread may still sleep in it while the process exits.
  static Watchdog* watchdog = new Watchdog;
  return *watchdog;
}

Watchdog::Watchdog() {
  std::thread([this] { loop(); }).detach();
}

void Watchdog::add(Watch* watch) {
  bool earlier = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    watched_.push_back(watch);
    earlier = watch->deadline_ < sleeps_until_;
  }
  if (earlier) wake_.notify_one();
}

void Watchdog::remove(Watch* watch) {
  std::unique_lock<std::mutex> lock(mutex_);
  // The watchdog has declared a timeout and is ending the process: a call that returned just now
  // must not carry on as if nothing happened.
  while (fired_) wake_.wait(lock);
  std::erase(watched_, watch);
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const Clock::time_point now = Clock::now();
    Clock::time_point next = Clock::time_point::max();
    for (const Watch* watch : watched_) {
      if (watch->deadline_ <= now) {
        fired_ = true;
        // The watch stays valid: its call cannot return past remove() while fired_ holds.
        const Timeout timeout(timeout_text(
            watch->comm_, watch->op_, now - watch->start_, watch->timeout_,
            "a blocking MPI call can be neither interrupted nor cancelled, so this process "
            "exits (the launcher then stops the other ranks)"));
        lock.unlock();
        ranks::detail::exit_on(timeout);
      }
      next = std::min(next, watch->deadline_);
    }
    sleeps_until_ = next;
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, next);
    }
  }
}

}  // namespace ranks::backends::mpi
