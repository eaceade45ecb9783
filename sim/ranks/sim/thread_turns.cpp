#include "ranks/sim/thread_turns.hpp"

#include <fmt/format.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/sim/engine.hpp"
#include "ranks/sim/interruption.hpp"

namespace ranks::sim::detail {

namespace {

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  // EINTR (the wall guard's signal), EAGAIN (already given): the caller looks again.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
            nullptr, 0);
}

void futex_wake_one(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}

// A rank thread's own stack for signal handlers, so that the crash report of a rank that
// overflowed its stack can still be written (the caller's thread has ranks::main's).
constexpr size_t signal_stack_bytes = 64 * 1024;

}  // namespace

ThreadTurns::ThreadTurns(Engine& engine, uint64_t seed, int world_size, size_t stack_bytes,
                         std::chrono::milliseconds timeout, Hooks hooks)
    : engine_(engine),
      hooks_(std::move(hooks)),
      stack_bytes_(stack_bytes),
      timeout_(timeout),
      rng_(seed),
      seeded_(seed != 0),
      world_size_(world_size),
      seats_(std::make_unique<Seat[]>(static_cast<size_t>(world_size))) {}

ThreadTurns::~ThreadTurns() = default;

void ThreadTurns::give(Seat& seat) {
  seat.turn.store(1, std::memory_order_release);
  futex_wake_one(seat.turn);
}

void ThreadTurns::take(Seat& seat) {
  while (seat.turn.exchange(0, std::memory_order_acquire) == 0) futex_wait(seat.turn, 0);
}

void* ThreadTurns::thread_main(void* start) {
  const Start where = *static_cast<Start*>(start);
  where.turns->live(*where.rank);
  return nullptr;
}

void ThreadTurns::live(SimRank& rank) {
  pthread_attr_t attributes;
  if (::pthread_getattr_np(::pthread_self(), &attributes) == 0) {
    void* low = nullptr;
    size_t size = 0;
    if (::pthread_attr_getstack(&attributes, &low, &size) == 0) {
      seats_[static_cast<size_t>(rank.rank)].stack_low.store(reinterpret_cast<uintptr_t>(low));
    }
    ::pthread_attr_destroy(&attributes);
  }
  std::vector<char> signal_stack(signal_stack_bytes);
  stack_t alternate{};
  alternate.ss_sp = signal_stack.data();
  alternate.ss_size = signal_stack.size();
  ::sigaltstack(&alternate, nullptr);
  take(seats_[static_cast<size_t>(rank.rank)]);
  if (!abandoned_) (*entry_)(rank);
  ++ended_;
  pass_from(nullptr);
  alternate.ss_flags = SS_DISABLE;
  ::sigaltstack(&alternate, nullptr);
}

bool ThreadTurns::ran_off_stack(int rank, const void* address) const {
  if (rank < 0 || rank >= world_size_ || address == nullptr) return false;
  const uintptr_t low = seats_[static_cast<size_t>(rank)].stack_low.load();
  const auto at = reinterpret_cast<uintptr_t>(address);
  // The guard page lies just below; a large local array can jump past it, so anything within
  // the reach of one frame below counts, and the lowest page of the stack itself.
  constexpr uintptr_t kBelow = 1 << 20;
  constexpr uintptr_t kPage = 4096;
  return low != 0 && at + kBelow >= low && at < low + kPage;
}

void ThreadTurns::run(const std::function<void(SimRank&)>& entry) {
  entry_ = &entry;
  std::vector<Start> starts(static_cast<size_t>(world_size_));
  std::vector<pthread_t> threads;
  threads.reserve(starts.size());
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, stack_bytes_);
  int failed = 0;
  // The ranks' threads leave SIGINT, SIGTERM and SIGHUP to this one (interruption.hpp).
  std::optional<InterruptionsBlocked> blocked(std::in_place);
  for (int r = 0; r < world_size_ && failed == 0; ++r) {
    SimRank& rank = engine_.rank(r);
    starts[static_cast<size_t>(r)] = Start{this, &rank};
    pthread_t thread;
    failed = pthread_create(&thread, &attributes, thread_main, &starts[static_cast<size_t>(r)]);
    if (failed == 0) {
      threads.push_back(thread);
      ready_.push_back(&rank);
    }
  }
  pthread_attr_destroy(&attributes);
  blocked.reset();
  if (failed != 0) {
    // The threads made so far end without running their rank; nothing of the run has happened.
    abandoned_ = true;
    world_size_ = static_cast<int>(threads.size());
  }
  if (!threads.empty()) {
    pass_from(nullptr);
    watch_until_done();
  }
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
  if (failed != 0) {
    throw BackendError(fmt::format(
        "sim: could not start the thread of rank {} ({}): each simulated rank runs on a thread "
        "of its own here, with a {} KiB stack; fewer ranks, or a higher limit on threads "
        "(ulimit -u, /proc/sys/kernel/threads-max) or memory",
        threads.size(), std::strerror(failed), stack_bytes_ / 1024));
  }
}

bool ThreadTurns::pass_from(SimRank* me) {
  for (;;) {
    if (!ready_.empty()) {
      if (seeded_) bring_seeded_pick_to_front(ready_, rng_);
      SimRank* next = ready_.front();
      ready_.pop_front();
      engine_.switching_to(nullptr, next);
      if (next == me) return true;
      if (me != nullptr && hooks_.giving) hooks_.giving();
      give(seats_[static_cast<size_t>(next->rank)]);
      return false;
    }
    if (ended_ == world_size_) {
      engine_.switching_to(nullptr, nullptr);
      give(caller_);
      return false;
    }
    engine_.on_idle();
  }
}

void ThreadTurns::watch_until_done() {
  // A timeout past what a timespec holds comfortably (years) is as good as none.
  constexpr auto longest = std::chrono::hours(24 * 365 * 100);
  const auto wait = std::min<std::chrono::milliseconds>(timeout_, longest);
  timespec period{};
  period.tv_sec = static_cast<time_t>(wait.count() / 1000);
  period.tv_nsec = static_cast<long>(wait.count() % 1000 * 1'000'000);
  uint64_t seen = engine_.switches();
  // A signal that interrupts the run wakes this thread, which reports it (interruption.hpp).
  InterruptionReport::wake_on_signal(&caller_.turn);
  const auto where_is_running = [this] {
    const SimRank* running = engine_.running();
    const auto& where_is = engine_.options().where_is_rank;
    return running != nullptr && where_is ? where_is(running->rank) : std::string();
  };
  for (;;) {
    if (caller_.turn.exchange(0, std::memory_order_acquire) != 0) {
      InterruptionReport::wake_on_signal(nullptr);
      return;
    }
    const long waited = ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&caller_.turn),
                                  FUTEX_WAIT_PRIVATE, 0, &period, nullptr, 0);
    if (const int sig = InterruptionReport::noted_signal(); sig != 0) {
      report_interruption_and_exit(engine_, sig, where_is_running());
    }
    if (waited == 0 || errno != ETIMEDOUT) continue;
    const uint64_t switches = engine_.switches();
    if (switches != seen) {
      // The rank that has the turn now may have taken it at any moment since the last look: it
      // is reported once it has kept it for a whole timeout (at most two after it took it).
      seen = switches;
      continue;
    }
    report_stall_and_exit(engine_, where_is_running());
  }
}

void ThreadTurns::wait_turn(SimRank& rank) {
  if (pass_from(&rank)) return;
  take(seats_[static_cast<size_t>(rank.rank)]);
  if (hooks_.taken) hooks_.taken();
}

void ThreadTurns::block(SimRank& rank) { wait_turn(rank); }

void ThreadTurns::yield(SimRank& rank) {
  ready_.push_back(&rank);
  wait_turn(rank);
}

}  // namespace ranks::sim::detail
