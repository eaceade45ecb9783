#include "ranks/real/deadline_watchdog.hpp"

#include <algorithm>
#include <thread>

namespace ranks::detail {

namespace {

// The slot value of a watch the watchdog is checking or firing; never a real Watch's address.
DeadlineWatchdog::Watch* claimed() {
  alignas(DeadlineWatchdog::Watch) static std::byte marker[1];
  return reinterpret_cast<DeadlineWatchdog::Watch*>(marker);
}

}  // namespace

void DeadlineWatchdog::Watch::start(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0 || watching_) return;
  timeout_ = timeout;
  start_ = Clock::now();
  deadline_ = start_ + timeout;
  fired_.store(false, std::memory_order_relaxed);
  watching_ = true;
  slot_ = instance().add(this);
}

bool DeadlineWatchdog::Watch::finish() {
  if (!watching_) return fired_.load();
  watching_ = false;
  return instance().remove(this);
}

DeadlineWatchdog& DeadlineWatchdog::instance() {
  // Never destroyed: its thread may still sleep in it while the process exits.
  static DeadlineWatchdog* watchdog = new DeadlineWatchdog;
  return *watchdog;
}

DeadlineWatchdog::DeadlineWatchdog() {
  std::thread([this] { loop(); }).detach();
}

size_t DeadlineWatchdog::add(Watch* watch) {
  size_t i = 0;
  for (;; i = (i + 1) % kSlots) {
    Watch* empty = nullptr;
    if (slots_[i].compare_exchange_strong(empty, watch)) break;
    // Every slot busy: kSlots ops are being watched at once; one finishes soon.
    if (i + 1 == kSlots) std::this_thread::yield();
  }
  // Published before this read (both sequentially consistent): either the thread's rescan sees
  // the watch, or this read sees the deadline it went to sleep with and wakes it when ours is
  // earlier.
  if (watch->deadline_.time_since_epoch().count() < sleeps_until_.load()) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_one();
  }
  return i;
}

bool DeadlineWatchdog::remove(Watch* watch) {
  std::atomic<Watch*>& slot = slots_[watch->slot_];
  for (;;) {
    Watch* current = watch;
    if (slot.compare_exchange_strong(current, nullptr)) return false;
    // Neither ours nor claimed: ours fired and its slot was released (and may be another's now).
    if (current != claimed()) return watch->fired_.load();
    // Claimed: the watchdog is checking whether this watch is overdue (a few instructions), is
    // running its call-back, or is ending the process (then this never returns).
    std::unique_lock<std::mutex> lock(released_mutex_);
    released_.wait(lock, [&] { return slot.load() != claimed(); });
  }
}

DeadlineWatchdog::Clock::time_point DeadlineWatchdog::scan(Clock::time_point now) {
  auto release = [this](std::atomic<Watch*>& slot, Watch* value) {
    {
      std::lock_guard<std::mutex> lock(released_mutex_);
      slot.store(value);
    }
    released_.notify_all();
  };
  Clock::time_point next = Clock::time_point::max();
  for (size_t i = 0; i < kSlots; ++i) {
    std::atomic<Watch*>& slot = slots_[i];
    Watch* watch = slot.load();
    if (watch == nullptr || watch == claimed()) continue;
    if (watch->deadline_ <= now) {
      // Claimed, the watch cannot be finished past remove(), so it stays valid while it fires.
      if (!slot.compare_exchange_strong(watch, claimed())) continue;  // finished just now
      if (watch->deadline_ > now) {
        // Read before the claim, the deadline was a finished watch's; a new one took its place
        // at the same address.
        release(slot, watch);
        next = std::min(next, watch->deadline_);
        continue;
      }
      watch->fired_.store(true);
      if (watch->policy_ == Policy::CallBack) {
        std::thread([this, i, watch, now] {
          try {
            watch->on_deadline(now);
          } catch (...) {
            // A call-back that fails (out of memory while formatting) still releases the op.
          }
          std::lock_guard<std::mutex> lock(released_mutex_);
          slots_[i].store(nullptr);
          released_.notify_all();
        }).detach();
      } else {
        watch->on_deadline(now);  // ends the process
        release(slot, nullptr);
      }
      continue;
    }
    next = std::min(next, watch->deadline_);
  }
  return next;
}

void DeadlineWatchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Clock::time_point next = scan(Clock::now());
    sleeps_until_.store(next.time_since_epoch().count());
    // A watch published during the scan whose adder read the old deadline: look again.
    if (scan(Clock::now()) < next) continue;
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, next);
    }
  }
}

}  // namespace ranks::detail
