#pragma once
// The deadlines of gloo ops. gloo's own timeout closes every connection of the context the moment
// a wait expires (tcp UnboundBuffer::waitRecv signals the whole context), so the first rank of a
// stuck group to give up broke the op of every peer that waited a millisecond less: they reported
// a broken connection instead of their own timeout, and never said where they were stuck
// (detail/stuck_peers.hpp). Which rank came first was a race between processes.
//
// So gloo waits get a timeout past the op's deadline and the stuck-peer window (gloo_timeout),
// and one thread per process, started with the first op, times ops out at their deadline
// instead: Communicator::time_out writes where this rank is stuck, reads the others' records,
// and only then closes the group. Peers that time out at about the same moment have their own
// deadline pass before any connection closes.
//
// A watch costs a lock and a map insertion and removal per op (gloo ops take tens of
// microseconds). The thread is woken only for a deadline earlier than the one it sleeps until.

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "ranks/backends/gloo/work.hpp"

namespace ranks::backends::gloo::detail {

// How long gloo itself waits in an op whose deadline is `deadline`: long enough for the watchdog
// to have timed the op out, heard from the peers and closed the group first.
std::chrono::milliseconds gloo_timeout(std::chrono::milliseconds deadline);

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  // One op being watched from construction to destruction (on the waiting thread's stack).
  // When its deadline passes first, comm.time_out(request, timeout) runs on a thread of its own;
  // the destructor waits until that has returned.
  class Watch {
   public:
    Watch(Communicator& comm, const OpRequest& request, std::chrono::milliseconds timeout);
    ~Watch();
    // Stops watching (waiting for a time_out in progress) and says whether the deadline fired:
    // then the group is failed with this op's Timeout, even if the op completed meanwhile.
    bool finish();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    friend class Watchdog;
    Communicator& comm_;
    const OpRequest& request_;
    const std::chrono::milliseconds timeout_;
    std::multimap<Clock::time_point, Watch*>::iterator at_;  // its entry in watches_
    bool armed_ = false;                                     // guarded by the watchdog's lock
    bool fired_ = false;                                     // guarded by the watchdog's lock
    bool finished_ = false;
  };

 private:
  static Watchdog& instance();
  Watchdog();
  void add(Watch* watch, Clock::time_point deadline);
  bool remove(Watch* watch);  // whether it fired
  [[noreturn]] void loop();
  void fire(Watch* watch);  // on a thread of its own

  std::mutex mutex_;
  std::condition_variable wake_;   // the loop: a new earliest deadline
  std::condition_variable fired_;  // removers: a time_out has returned
  std::multimap<Clock::time_point, Watch*> watches_;
  std::set<Watch*> firing_;
};

}  // namespace ranks::backends::gloo::detail
