#include "ranks/sim/interruption.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

namespace {

constexpr int interruptions[] = {SIGINT, SIGTERM, SIGHUP};

// Process-wide, not per thread: the signal lands on any thread that does not block it.
std::atomic<Engine*> interrupted_engine{nullptr};
std::atomic<std::atomic<uint32_t>*> watcher_word{nullptr};
std::atomic<int> noted{0};

sigset_t interruption_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : interruptions) sigaddset(&set, sig);
  return set;
}

void on_interruption(int sig) {
  Engine* engine = interrupted_engine.load();
  if (engine == nullptr) {
    // The run ended as the signal came: it takes its usual course.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  if (std::atomic<uint32_t>* word = watcher_word.load()) {
    noted.store(sig);
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr,
              nullptr, 0);
    return;
  }
  report_interruption_and_exit(*engine, sig, {});
}

}  // namespace

InterruptionReport::InterruptionReport(Engine& engine) {
  if (!crash_report_installed()) return;
  installed_ = true;
  noted.store(0);
  interrupted_engine.store(&engine);
  struct sigaction action {};
  action.sa_handler = on_interruption;
  // SA_ONSTACK: the crash report's alternate stack (a rank's own may be nearly full). The other
  // two are held off while the report is written, so one report is written whole.
  action.sa_flags = SA_RESTART | SA_ONSTACK;
  action.sa_mask = interruption_set();
  for (int i = 0; i < 3; ++i) ::sigaction(interruptions[i], &action, &previous_[i]);
}

InterruptionReport::~InterruptionReport() {
  if (!installed_) return;
  interrupted_engine.store(nullptr);
  for (int i = 0; i < 3; ++i) ::sigaction(interruptions[i], &previous_[i], nullptr);
}

void InterruptionReport::wake_on_signal(std::atomic<uint32_t>* word) { watcher_word.store(word); }

int InterruptionReport::noted_signal() { return noted.load(); }

InterruptionsBlocked::InterruptionsBlocked() {
  const sigset_t set = interruption_set();
  ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
}

InterruptionsBlocked::~InterruptionsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace ranks::sim::detail
