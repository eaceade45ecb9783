#pragma once
// The gloo backend's communicator state and its asynchronous Work.
//
// Collectives run one at a time, in submission order, from one queue per communicator (its own
// thread, or the caller that waits; see RunQueue), so submit() returns at once and every rank runs
// a group's collectives in the same order (gloo requires it). Point-to-point ops are posted to gloo
// directly in submit() (gloo's unbound buffers are asynchronous) and finished by the thread that
// waits, so an irecv posted before a send never queues the send behind it.
//
// Waiting. Every Work waits on its communicator's one condition variable, so a failure of the
// group wakes every waiter at once. The deadline is the op's timeout (OpRequest::timeout), or
// block_for's. The watchdog (watchdog.hpp) times ops out at it; gloo's own timeout is set later.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ranks/backend.hpp"
#include "ranks/real/group_failure.hpp"
#include "ranks/op.hpp"
#include "ranks/work.hpp"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace ranks::backends::gloo::detail {

// One group's connected gloo context, plus what every op of the group shares: its failure state
// and the lock that works wait under.
class Communicator {
 public:
  // endpoints: (group rank, "[ip]:port") for each way gloo's error messages may name the
  // connection to that rank, so that an IoException can be traced back to a rank. reverse: the
  // reverse lane of a group of two, else null.
  Communicator(GroupSpec spec, std::shared_ptr<::gloo::Context> context,
               std::shared_ptr<::gloo::Context> reverse,
               std::vector<std::pair<int, std::string>> endpoints,
               std::chrono::milliseconds default_timeout);

  const GroupSpec& spec() const { return spec_; }
  const std::shared_ptr<::gloo::Context>& context() const { return context_; }
  // A group of two has a second connection between its members, so that an exchange can send
  // each way over its own socket: group rank 0 sends on context(), rank 1 on the reverse lane.
  // gloo guards each connection with a lock that the thread writing to it holds for the whole
  // write, while the device thread that reads arriving data skips a locked connection and polls
  // again at once; when both directions share one socket, every large exchange of a two-rank
  // group has each process's device thread spinning for as long as its own rank writes, taking
  // a core from the ranks' own work (measured: 23,000 epoll_wait calls in 22 all_gather_objects
  // of 566 KB; reports/objects.md). Null in larger groups, whose rings send and receive on
  // different connections anyway.
  const std::shared_ptr<::gloo::Context>& reverse_lane() const { return reverse_; }
  int rank() const { return spec_.rank; }
  int size() const { return spec_.size(); }
  // The op's deadline: its own timeout, or the group's when dispatch gave none.
  std::chrono::milliseconds timeout_of(const OpRequest& request) const;

  // "all_reduce on group 'world' seq 3 at file.cpp:42"
  std::string describe(const OpRequest& request) const;
  // "rank 2" on the world; "group rank 1 (global rank 3)" on a sub-group.
  std::string peer_name(int group_rank) const;
  // The Timeout text of request after `waited` (detail/failure_text.hpp), e.g. "rank 1 timed out
  // after 200 ms in recv ...; rank 2 has sent no message with tag 7; group 'world' is closed".
  std::string timeout_message(const OpRequest& request, std::chrono::milliseconds waited) const;

  // Turns what an op threw (a gloo exception or a ranks error) into the ranks error to report,
  // records the first failure and shuts the group down (see backend.hpp). Returns the error for
  // request: its own when it is the first failure, else "failed earlier" with the first one.
  // waited: the deadline the op had, when it is not timeout_of(request) (block_for's).
  std::exception_ptr fail(const OpRequest& request, std::exception_ptr thrown,
                          std::chrono::milliseconds waited = {});
  // request's deadline (`timeout` after it started) passed: fails the group with a Timeout that
  // says where the ranks it waits on are stuck, unless it failed already, and returns request's
  // error as fail() does. The watchdog calls it, and waits that give up before the op. One at a
  // time: while it waits for the others' records, fail() and another time_out wait for it.
  std::exception_ptr time_out(const OpRequest& request, std::chrono::milliseconds timeout);
  // A Timeout, with what the ranks it waits on say of themselves (real/stuck_peers.hpp);
  // any other error as it is.
  std::exception_ptr with_stuck_peers(const OpRequest& request, std::exception_ptr error,
                                      std::chrono::milliseconds waited) const;
  // Ends the group without an op to blame (a communicator destroyed with ops in flight).
  void abandon(const std::string& why);
  // When the group has failed, an error for request of the same kind as the first failure.
  std::exception_ptr failure_for(const OpRequest& request) const;

  // Collectives submitted and not yet finished, for the backend's destructor.
  void add_in_flight() {
    update([this] { ++in_flight_; });
  }
  int in_flight() const;
  // Runs f under the lock as a collective finishes, and wakes every waiter.
  template <class F>
  void finish_collective(F&& f) {
    update([&] {
      f();
      --in_flight_;
    });
  }

  // Runs f under the lock and wakes every waiter.
  template <class F>
  void update(F&& f) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      f();
    }
    changed_.notify_all();
  }
  template <class F>
  auto locked(F&& f) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return f();
  }

  enum class Wake { Done, Failed, TimedOut };
  // Waits until done() (evaluated under the lock), the group failed or the deadline passed.
  template <class F>
  Wake wait_until(std::chrono::steady_clock::time_point deadline, F&& done) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline, [&] { return done() || !failure_.empty(); });
    if (done()) return Wake::Done;
    return failure_.empty() ? Wake::TimedOut : Wake::Failed;
  }

  // Keeps a finished collective's gloo options (and so its unbound buffers) until the group's
  // next collective has finished, and lets go of the previous ones. An unbound buffer's destructor
  // yield-spins until gloo's device thread has dropped its reference, which that thread does just
  // after the op completes: destroyed at once, on a busy 2-core machine, the spin lasted a
  // scheduler tick (4 ms) per op. The buffers may point at staging memory freed since; nothing
  // reads it, the op is done. Collectives of a group run one at a time (RunQueue), so this needs
  // no lock.
  void keep_until_next(std::shared_ptr<void> options) { kept_options_ = std::move(options); }

  // At least `bytes` of memory for the running collective's own use (a two-member all_reduce
  // receives the peer's pieces there), kept for the group's next ones: a fresh block per call
  // would fault in its pages every time. Collectives run one at a time, so it needs no lock.
  uint8_t* scratch(size_t bytes) {
    if (bytes > scratch_bytes_) {
      scratch_ = std::make_unique_for_overwrite<uint8_t[]>(bytes);
      scratch_bytes_ = bytes;
    }
    return scratch_.get();
  }

  // A point-to-point wait in progress: fail() aborts it (gloo does not fail a pending
  // receive-from-any when the group breaks). begin_wait is false when the group has failed.
  bool begin_wait(::gloo::transport::UnboundBuffer* buffer, bool is_send);
  void end_wait(::gloo::transport::UnboundBuffer* buffer);

 private:
  std::exception_ptr translate(const OpRequest& request, std::exception_ptr thrown,
                               std::chrono::milliseconds waited) const;
  int peer_in(const std::string& gloo_text) const;  // -1 when no endpoint matches
  // Makes error (of request, when given) the group's failure unless it already has one; false
  // when it had.
  bool record(std::exception_ptr error, const OpRequest* request);
  void abort_transport();

  const GroupSpec spec_;
  const std::shared_ptr<::gloo::Context> context_;
  const std::shared_ptr<::gloo::Context> reverse_;
  const std::vector<std::pair<int, std::string>> endpoints_;
  const std::chrono::milliseconds default_timeout_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  ranks::detail::GroupFailure failure_;
  int in_flight_ = 0;
  bool timing_out_ = false;  // a time_out is waiting for the others' records
  std::vector<std::pair<::gloo::transport::UnboundBuffer*, bool>> waiting_;
  std::shared_ptr<void> kept_options_;  // see keep_until_next
  std::unique_ptr<uint8_t[]> scratch_;  // see scratch
  size_t scratch_bytes_ = 0;
};

class CollectiveWork;

// A communicator's collectives, run one at a time in the order posted. Its own thread runs them,
// so submit() returns at once and an op nobody waits for still progresses; but a caller that
// waits for the next op before that thread has taken it runs it itself, which saves the blocking
// form (submit, then wait at once) two thread switches. The blocking API goes further (run_now):
// when the queue is idle it runs the op inside submit(), so the thread is not woken at all.
// Shared by the backend and its works, so a Work waited on after its group was destroyed finds a
// stopped, empty queue rather than a dangling one.
class RunQueue {
 public:
  RunQueue();
  ~RunQueue();
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  void post(std::shared_ptr<CollectiveWork> work);
  // On the submitting thread: when nothing is queued or running, runs work here (with the op's
  // own timeout) and returns true; otherwise returns false and work is to be posted.
  bool run_now(CollectiveWork& work);
  // On a waiting thread: when no collective is running and target is the next one, runs it here
  // with gloo timeout `timeout` and returns true.
  bool run_here(const CollectiveWork* target, std::chrono::milliseconds timeout);
  // Runs what is still queued, then joins the thread.
  void stop();

 private:
  void loop();
  void release();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<CollectiveWork>> queue_;
  bool running_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

// A collective: run from its communicator's queue, waited on by the caller.
class CollectiveWork final : public ranks::detail::WorkState {
 public:
  CollectiveWork(std::shared_ptr<Communicator> comm, std::shared_ptr<RunQueue> queue,
                 OpRequest request);
  void block() override;
  void block_for(std::chrono::milliseconds timeout) override;
  // The queue's thread runs the op whether anyone waits or not: a poll only looks.
  void on_poll() override;
  // Runs the op with gloo timeout `timeout` (the op's own when zero), on whichever thread got it.
  void run(std::chrono::milliseconds timeout = {});
  // After run() on the thread that will wait: completes the Work with run's result, so wait()
  // neither blocks nor takes a lock.
  void complete();

 private:
  void wait(std::chrono::milliseconds timeout);

  const std::shared_ptr<Communicator> comm_;
  const std::shared_ptr<RunQueue> queue_;
  OpRequest request_;  // holds the tensors alive while gloo writes into them
  // Guarded by the communicator's lock.
  bool finished_ = false;
  std::exception_ptr result_;
};

// A send or receive: posted at construction, finished by the waiting thread. gloo can only block
// on one (a wait that times out closes every connection of the context), so the first
// Work::is_completed() starts a watcher thread that waits with the op's deadline and records the
// outcome; polls read it, and a later wait waits for the watcher.
class PointToPointWork final : public ranks::detail::WorkState {
 public:
  PointToPointWork(std::shared_ptr<Communicator> comm, OpRequest request);
  ~PointToPointWork() override;
  void block() override;
  void block_for(std::chrono::milliseconds timeout) override;
  void on_poll() override;

 private:
  struct Outcome {
    bool completed = false;
    int peer = -1;
    std::exception_ptr error;
  };
  // Waits on gloo for up to `timeout`; touches none of WorkState's fields (a watcher runs it).
  Outcome await(std::chrono::milliseconds timeout);
  void settle(const Outcome& outcome);  // sets error, source_rank, then done
  void wait_for_watcher(std::chrono::milliseconds timeout);

  const std::shared_ptr<Communicator> comm_;
  OpRequest request_;  // declared before buffer_: the tensor outlives gloo's view of it
  std::unique_ptr<::gloo::transport::UnboundBuffer> buffer_;
  std::exception_ptr post_error_;
  std::thread watcher_;
  // Guarded by the communicator's lock.
  bool watched_ = false;
  Outcome watched_outcome_;
};

// collectives.cpp: the ops themselves, in gloo's algorithms. They throw what gloo throws.
// Runs a collective (or new_group's agreement) on the calling thread, with gloo timeout `timeout`.
void run_collective(Communicator& comm, OpRequest& request, std::chrono::milliseconds timeout);
// Posts a send or receive on buffer (which covers the request's tensor).
void post_point_to_point(Communicator& comm, const OpRequest& request,
                         ::gloo::transport::UnboundBuffer& buffer);

}  // namespace ranks::backends::gloo::detail
