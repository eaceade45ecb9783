#pragma once
// The deadline of blocking MPI calls. A blocking collective runs on the caller's thread (see
// blocking.hpp), and MPI can neither time it out nor cancel it; so the process's deadline
// watchdog (real/deadline_watchdog.hpp, exit policy) ends the process when such a call is still
// inside MPI past its deadline, the way an uncaught Timeout ends a ranks::main program
// (detail::exit_on: the message, the job's first failure when another rank published one, exit
// status 1). The launcher (mpirun, srun, ranks run) then stops the other ranks. This is torch's
// blocking-wait and NCCL-watchdog model.

#include <chrono>

#include "ranks/backends/mpi/work.hpp"
#include "ranks/real/deadline_watchdog.hpp"

namespace ranks::backends::mpi {

// One blocking call being watched, from construction to destruction (on the caller's stack). A
// zero timeout watches nothing: the call may wait for ever, as asked.
class Watch final : public ranks::detail::DeadlineWatchdog::Watch {
 public:
  using Base = ranks::detail::DeadlineWatchdog;
  Watch(const Comm& comm, const OpRequest& op, std::chrono::milliseconds timeout)
      : Base::Watch(Base::Policy::Exit), comm_(comm), op_(op) {
    start(timeout);
  }
  ~Watch() override { finish(); }

 private:
  [[noreturn]] void on_deadline(Base::Clock::time_point now) override;

  const Comm& comm_;
  const OpRequest& op_;
};

}  // namespace ranks::backends::mpi
