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
  if (timeout_.count() > 0) slot_ = instance().add(this);
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

namespace {

// The slot value of a call the watchdog is timing out; never a real Watch's address.
Watchdog::Watch* claimed() {
  alignas(Watchdog::Watch) static std::byte marker[1];
  return reinterpret_cast<Watchdog::Watch*>(marker);
}

}  // namespace

size_t Watchdog::add(Watch* watch) {
  size_t i = 0;
  for (;; i = (i + 1) % kSlots) {
    Watch* empty = nullptr;
    if (slots_[i].compare_exchange_strong(empty, watch)) break;
    // Every slot busy: kSlots threads are inside blocking MPI calls at once; one returns soon.
    if (i + 1 == kSlots) std::this_thread::yield();
  }
  // Published before this read (both sequentially consistent): either the thread's rescan sees the
  // watch, or this read sees the deadline it went to sleep with and wakes it when ours is earlier.
  if (watch->deadline_.time_since_epoch().count() < sleeps_until_.load()) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_one();
  }
  return i;
}

void Watchdog::remove(Watch* watch) {
  std::atomic<Watch*>& slot = slots_[watch->slot_];
  for (;;) {
    Watch* mine = watch;
    if (slot.compare_exchange_strong(mine, nullptr)) return;
    // Claimed: the watchdog is either ending the process (a call that returned just now must not
    // carry on as if nothing happened: this never returns) or finds the call was not overdue (a
    // new call in an old one's place) and hands the slot back within a few instructions.
    while (slot.load() == claimed()) std::this_thread::yield();
  }
}

Watchdog::Clock::time_point Watchdog::scan(Clock::time_point now) {
  Clock::time_point next = Clock::time_point::max();
  for (std::atomic<Watch*>& slot : slots_) {
    Watch* watch = slot.load();
    if (watch == nullptr || watch == claimed()) continue;
    if (watch->deadline_ <= now) {
      // Claimed, the call cannot return past remove(), so the watch stays valid while we report.
      if (!slot.compare_exchange_strong(watch, claimed())) continue;  // it returned just now
      if (watch->deadline_ > now) {
        // Read before the claim, the deadline was a returned call's; a new call took its place
        // at the same address.
        slot.store(watch);
        next = std::min(next, watch->deadline_);
        continue;
      }
      const Timeout timeout(timeout_text(
          watch->comm_, watch->op_, now - watch->start_, watch->timeout_,
          "a blocking MPI call can be neither interrupted nor cancelled, so this process "
          "exits (the launcher then stops the other ranks)"));
      ranks::detail::exit_on(timeout);
    }
    next = std::min(next, watch->deadline_);
  }
  return next;
}

void Watchdog::loop() {
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

}  // namespace ranks::backends::mpi
