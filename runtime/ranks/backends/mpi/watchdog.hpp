#pragma once
// The watchdog of blocking MPI calls. A blocking collective runs on the caller's thread (see
// blocking.hpp), and MPI can neither time it out nor cancel it; so one thread per process,
// started with the first such call, sleeps until the earliest deadline of the calls in progress,
// and a call still inside MPI past its deadline ends the process the way an uncaught Timeout
// ends a ranks::main program (detail::exit_on: the message, the job's first failure when another
// rank published one, exit status 1). The launcher (mpirun, srun, ranks run) then stops the
// other ranks. This is torch's blocking-wait and NCCL-watchdog model.
//
// A call costs a clock read and two uncontended lock round trips; the thread is woken only when a
// call's deadline is earlier than the one it sleeps until, which in steady state is about once per
// timeout period.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

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
  };

 private:
  static Watchdog& instance();
  Watchdog();
  void add(Watch* watch);
  void remove(Watch* watch);
  [[noreturn]] void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Watch*> watched_;
  Clock::time_point sleeps_until_ = Clock::time_point::max();
  bool fired_ = false;  // the process is on its way out
};

}  // namespace ranks::backends::mpi
