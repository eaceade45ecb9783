#pragma once
// The watchdog of blocking MPI calls. A blocking collective runs on the caller's thread (see
// blocking.hpp), and MPI can neither time it out nor cancel it; so one thread per process,
// started with the first such call, sleeps until the earliest deadline of the calls in progress,
// and a call still inside MPI past its deadline ends the process the way an uncaught Timeout
// ends a ranks::main program (detail::exit_on: the message, the job's first failure when another
// rank published one, exit status 1). The launcher (mpirun, srun, ranks run) then stops the
// other ranks. This is torch's blocking-wait and NCCL-watchdog model.
//
// A call costs a clock read and two compare-and-swaps on a slot of a fixed table (no lock: this
// is on every blocking op's path, where 8 B all_reduces take well under a microsecond). The
// thread is woken only when a call's deadline is earlier than the one it sleeps until, which in
// steady state is about once per timeout period.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "ranks/backends/mpi/work.hpp"

namespace ranks::backends::mpi {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  // One call being watched, from construction to destruction (on the caller's stack). A zero
  // timeout watches nothing: the call may wait for ever, as asked.
  class Watch {
   public:
    Watch(const Comm& comm, const OpRequest& op, std::chrono::milliseconds timeout);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    friend class Watchdog;
    const Comm& comm_;
    const OpRequest& op_;
    const std::chrono::milliseconds timeout_;
    const Clock::time_point start_;
    const Clock::time_point deadline_;
    size_t slot_ = 0;  // where add() put it
  };

 private:
  static Watchdog& instance();
  Watchdog();
  size_t add(Watch* watch);  // the slot it took
  void remove(Watch* watch);
  [[noreturn]] void loop();
  // The earliest deadline in the table (max when empty); fires a watch past its deadline.
  Clock::time_point scan(Clock::time_point now);

  // One slot per call in progress: empty (null), a call, or claimed by the watchdog while it
  // checks an overdue call and reports it (a call whose slot is claimed waits in remove(); if
  // it is reported, it never returns).
  static constexpr size_t kSlots = 64;
  std::array<std::atomic<Watch*>, kSlots> slots_{};
  // The deadline the thread sleeps until, as a count of Clock ticks.
  std::atomic<Clock::rep> sleeps_until_{Clock::time_point::max().time_since_epoch().count()};
  std::mutex mutex_;  // held by the thread except while it sleeps: no wake-up is lost
  std::condition_variable wake_;
};

}  // namespace ranks::backends::mpi
