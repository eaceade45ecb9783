#pragma once
// The deadlines of gloo ops. gloo's own timeout closes every connection of the context the moment
// a wait expires (tcp UnboundBuffer::waitRecv signals the whole context), so the first rank of a
// stuck group to give up would break the op of every peer that waited a millisecond less: they
// would report a broken connection instead of their own timeout, and never say where they were
// stuck (real/stuck_peers.hpp), and which rank came first would be a race between processes.
//
// So gloo waits get a timeout past the op's deadline and the stuck-peer window (gloo_timeout),
// and the process's deadline watchdog (real/deadline_watchdog.hpp, call-back policy) times ops
// out at their deadline instead: Communicator::time_out writes where this rank is stuck, reads
// the others' records, and only then closes the group. Peers that time out at about the same
// moment have their own deadline pass before any connection closes.

#include <chrono>

#include "ranks/backends/gloo/work.hpp"
#include "ranks/real/deadline_watchdog.hpp"

namespace ranks::backends::gloo::detail {

// How long gloo itself waits in an op whose deadline is `deadline`: long enough for the watchdog
// to have timed the op out, heard from the peers and closed the group first.
std::chrono::milliseconds gloo_timeout(std::chrono::milliseconds deadline);

// One op being watched from construction to destruction (on the waiting thread's stack). When
// its deadline passes first, comm.time_out(request, timeout) runs on a thread of its own; finish()
// and the destructor wait until that has returned.
class Watch final : public ranks::detail::DeadlineWatchdog::Watch {
 public:
  using Base = ranks::detail::DeadlineWatchdog;
  Watch(Communicator& comm, const OpRequest& request, std::chrono::milliseconds timeout)
      : Base::Watch(Base::Policy::CallBack), comm_(comm), request_(request) {
    start(timeout);
  }
  ~Watch() override { finish(); }

 private:
  void on_deadline(Base::Clock::time_point) override { comm_.time_out(request_, timeout()); }

  Communicator& comm_;
  const OpRequest& request_;
};

}  // namespace ranks::backends::gloo::detail
