#include "ranks/backends/gloo/watchdog.hpp"

#include <thread>

#include "ranks/detail/stuck_peers.hpp"

namespace ranks::backends::gloo::detail {

std::chrono::milliseconds gloo_timeout(std::chrono::milliseconds deadline) {
  // The window, the store host's half second for the others' reads (stuck_peers.cpp), and room
  // for a loaded machine to schedule the watchdog.
  return deadline + ranks::detail::stuck_window(deadline) + std::chrono::seconds(3);
}

Watchdog::Watch::Watch(Communicator& comm, const OpRequest& request,
                       std::chrono::milliseconds timeout)
    : comm_(comm), request_(request), timeout_(timeout) {
  if (timeout_.count() > 0) instance().add(this, Clock::now() + timeout_);
}

Watchdog::Watch::~Watch() { finish(); }

bool Watchdog::Watch::finish() {
  if (finished_ || timeout_.count() <= 0) return false;
  finished_ = true;
  return instance().remove(this);
}

Watchdog& Watchdog::instance() {
  // Never destroyed: its thread may still sleep in it while the process exits.
  static Watchdog* watchdog = new Watchdog;
  return *watchdog;
}

Watchdog::Watchdog() {
  std::thread([this] { loop(); }).detach();
}

void Watchdog::add(Watch* watch, Clock::time_point deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  watch->at_ = watches_.emplace(deadline, watch);
  watch->armed_ = true;
  // The loop sleeps until the earliest deadline; only a new earliest one needs it awake.
  if (watch->at_ == watches_.begin()) wake_.notify_one();
}

bool Watchdog::remove(Watch* watch) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (watch->armed_) {
    watches_.erase(watch->at_);
    watch->armed_ = false;
  }
  // time_out reads the watch's request: the op waits for it before its request goes away.
  fired_.wait(lock, [&] { return !firing_.contains(watch); });
  return watch->fired_;
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (watches_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto [deadline, watch] = *watches_.begin();
    if (Clock::now() < deadline) {
      wake_.wait_until(lock, deadline);
      continue;
    }
    watches_.erase(watches_.begin());
    watch->armed_ = false;
    watch->fired_ = true;
    firing_.insert(watch);
    // Timing out waits up to the stuck-peer window; other ops' deadlines must not wait for it.
    std::thread([this, watch] { fire(watch); }).detach();
  }
}

void Watchdog::fire(Watch* watch) {
  try {
    watch->comm_.time_out(watch->request_, watch->timeout_);
  } catch (...) {
    // Out of memory while formatting: the op still ends at gloo's own, later timeout. The
    // watch must be released either way, or its op would wait here for ever.
  }
  std::lock_guard<std::mutex> lock(mutex_);
  firing_.erase(watch);
  fired_.notify_all();
}

}  // namespace ranks::backends::gloo::detail
