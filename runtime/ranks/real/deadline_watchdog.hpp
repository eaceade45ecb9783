#pragma once
// The process's one deadline watchdog, for the real backends whose ops cannot time themselves out
// the way the backend wants: one thread, started with the first watch, sleeps until the earliest
// deadline of the ops being watched, and an op still watched past its deadline gets one of two
// policies:
//
//   CallBack  its on_deadline() runs on a thread of its own (it may take a while, e.g. gloo's
//             exchange of where each rank is stuck, and other ops' deadlines must not wait for
//             it); finish() waits until it has returned and says that it fired.
//   Exit      its on_deadline() runs on the watchdog's thread and ends the process (a blocking
//             MPI call can be neither interrupted nor cancelled); the op's own thread never
//             returns past finish().
//
// A watch costs a clock read and two compare-and-swaps on a slot of a fixed table, no lock: it
// is on the path of every blocking op, where a small all_reduce takes well under a microsecond.
// The thread is woken only for a deadline earlier than the one it sleeps until.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace ranks::detail {

class DeadlineWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Policy { CallBack, Exit };

  // One op being watched, from start() to finish() (or destruction, which must come from the
  // derived class's destructor: on_deadline may read its members until finish() returns).
  class Watch {
   public:
    explicit Watch(Policy policy) : policy_(policy) {}
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    virtual ~Watch() = default;

    // Starts watching with a deadline `timeout` from now; a timeout of zero or less watches
    // nothing (the op may wait for ever, as asked).
    void start(std::chrono::milliseconds timeout);
    // Stops watching, waiting for an on_deadline() in progress, and says whether the deadline
    // fired. Idempotent.
    bool finish();
    Clock::time_point started() const { return start_; }
    std::chrono::milliseconds timeout() const { return timeout_; }

   protected:
    // The deadline passed while the op was watched (see the policies above).
    virtual void on_deadline(Clock::time_point now) = 0;

   private:
    friend class DeadlineWatchdog;
    const Policy policy_;
    std::chrono::milliseconds timeout_{0};
    Clock::time_point start_;
    Clock::time_point deadline_;
    size_t slot_ = 0;
    bool watching_ = false;           // the owner's: between start() and finish()
    std::atomic<bool> fired_{false};  // written by the watchdog before it releases the slot
  };

 private:
  static DeadlineWatchdog& instance();
  DeadlineWatchdog();
  size_t add(Watch* watch);   // the slot it took
  bool remove(Watch* watch);  // whether it fired
  [[noreturn]] void loop();
  // The earliest deadline in the table (max when empty); fires the watches past theirs.
  Clock::time_point scan(Clock::time_point now);

  // One slot per watch: empty (null), a watch, or claimed by the watchdog while it checks an
  // overdue watch and runs its on_deadline (a watch whose slot is claimed waits in remove()).
  static constexpr size_t kSlots = 256;
  std::array<std::atomic<Watch*>, kSlots> slots_{};
  // The deadline the thread sleeps until, as a count of Clock ticks.
  std::atomic<Clock::rep> sleeps_until_{Clock::time_point::max().time_since_epoch().count()};
  std::mutex mutex_;  // held by the thread except while it sleeps: no wake-up is lost
  std::condition_variable wake_;
  std::mutex released_mutex_;
  std::condition_variable released_;  // a call-back has returned and released its slot
};

}  // namespace ranks::detail
