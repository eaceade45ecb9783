#include "ranks/sim/wall_guard.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

namespace {

// The guard of the run on this thread: the timer signals this thread only, and a signal that
// arrives after its run has ended finds none.
thread_local WallGuard* active_guard = nullptr;

int wall_signal() { return SIGRTMAX - 1; }

void on_wall_signal(int) {
  if (WallGuard* guard = active_guard) guard->look();
}

void install_handler() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = on_wall_signal;
    // SA_ONSTACK: the crash report's alternate stack, when ranks::main installed one (a rank's
    // own stack may be nearly full).
    action.sa_flags = SA_RESTART | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    return ::sigaction(wall_signal(), &action, nullptr) == 0;
  }();
  (void)installed;
}

}  // namespace

WallGuard::WallGuard(Engine& engine, std::chrono::milliseconds timeout)
    : engine_(engine), timeout_(timeout), seen_(engine.switches()) {
  install_handler();
  struct sigevent event {};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = wall_signal();
  event._sigev_un._tid = ::gettid();  // glibc 2.36 names it only so (sigev_notify_thread_id: 2.41)
  // Without a timer (none left for this process) the run goes unguarded, as it went before.
  has_timer_ = ::timer_create(CLOCK_MONOTONIC, &event, &timer_) == 0;
  active_guard = this;
  if (has_timer_) arm();
}

WallGuard::~WallGuard() {
  active_guard = nullptr;
  if (has_timer_) ::timer_delete(timer_);
}

void WallGuard::arm() {
  // A timeout past what the timer holds (years) is as good as none.
  constexpr auto longest = std::chrono::hours(24 * 365 * 100);
  const auto wait = std::min<std::chrono::milliseconds>(timeout_, longest);
  struct itimerspec when {};
  when.it_value.tv_sec = static_cast<time_t>(wait.count() / 1000);
  when.it_value.tv_nsec = static_cast<long>(wait.count() % 1000 * 1'000'000);
  ::timer_settime(timer_, 0, &when, nullptr);
}

void WallGuard::look() {
  const uint64_t switches = engine_.switches();
  if (switches != seen_) {
    // The rank that holds the thread now may have taken it at any moment since the last look:
    // it is reported once it has held it for a whole timeout (at most two after it took it).
    seen_ = switches;
    arm();
    return;
  }
  report_stall_and_exit(engine_);
}

}  // namespace ranks::sim::detail
