#pragma once
// The nccl backend's communicator state and its asynchronous Work. See backend.hpp for the model
// (streams, staging, failure).

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ranks/backend.hpp"
#include "ranks/real/group_failure.hpp"
#include "ranks/op.hpp"
#include "ranks/work.hpp"

namespace ranks::backends::nccl::detail {

using Clock = std::chrono::steady_clock;

// One group's NCCL communicator, its stream and device, and its failure state. Shared by the
// backend, the works in flight and the watchdog.
class Communicator {
 public:
  Communicator(GroupSpec spec, int device, ncclComm_t comm, std::chrono::milliseconds timeout);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  // Healthy: ncclCommFinalize (bounded by the timeout), then ncclCommDestroy. Failed: the abort
  // has happened already (watchdog), or happens here.
  ~Communicator();

  const GroupSpec& spec() const { return spec_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  // Recorded on the caller's stream and waited for by ours at each launch; only used inside
  // launch(), which serialises it.
  cudaEvent_t ready_event() const { return ready_event_; }
  // Device memory on the communicator's stream (cudaMallocAsync where the device has memory
  // pools, else cudaMalloc); release queues the free behind everything enqueued so far.
  void* allocate(size_t bytes);
  void release(void* pointer) noexcept;
  // Completion events are reused: creating one per op costs more than the rest of the launch.
  cudaEvent_t take_event();
  // A fired event goes back to the pool; one of a failed op is destroyed (it may never fire).
  void return_event(cudaEvent_t event, bool fired);
  std::chrono::milliseconds default_timeout() const { return default_timeout_; }
  std::chrono::milliseconds timeout_of(const OpRequest& request) const;

  // "all_reduce on group 'world' seq 3 at file.cpp:42"
  std::string describe(const OpRequest& request) const;
  // "rank 2" on the world; "group rank 1 (global rank 3)" on a sub-group.
  std::string peer_name(int group_rank) const;
  int global_rank() const { return spec_.global_ranks()[static_cast<size_t>(spec_.rank)]; }

  // Runs launch (the NCCL calls of one op) with the communicator held, so that the watchdog's
  // abort never runs concurrently with it. Throws the group's failure when it has one.
  template <class F>
  void launch(F&& f) {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    if (std::exception_ptr error = failure()) std::rethrow_exception(error);
    f(comm_);
  }

  // The group's first failure, or null.
  std::exception_ptr failure() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Records error as the group's failure unless it has one (then returns false), and wakes every
  // waiter. The communicator is aborted later by abort() (the watchdog calls it), never on the
  // caller's thread: ncclCommAbort can hang, and a waiter must get its error regardless.
  bool fail(std::exception_ptr error, const OpRequest* cause = nullptr);
  // The group's failure as request reports it: as is when request caused it, else "<op>: group
  // '<name>' failed earlier and can no longer be used: <first error>", of the same kind. Null while the group is healthy.
  std::exception_ptr failure_for(const OpRequest& request) const;
  // ncclCommAbort, once; what the watchdog does after a failure.
  void abort();
  // Fails the group with BackendError when NCCL reports an asynchronous error (a peer's network
  // failure, an internal error). Skipped while an op is being launched.
  void check_async_error();

  // Waits until done() (under the lock), a failure or the deadline; done() is re-evaluated when
  // woken. Returns done().
  template <class F>
  bool wait_until(Clock::time_point deadline, F&& done) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline, [&] { return done() || failed(); });
    return done();
  }
  void notify() { changed_.notify_all(); }

 private:
  const GroupSpec spec_;
  const int device_;
  const std::chrono::milliseconds default_timeout_;
  ncclComm_t comm_;  // null once aborted or destroyed
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_event_ = nullptr;
  bool memory_pools_ = false;
  std::vector<cudaEvent_t> free_events_;  // under mutex_

  std::mutex launch_mutex_;  // held while NCCL calls run on comm_
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> failed_{false};
  ranks::detail::GroupFailure failure_;
  bool aborted_ = false;
};

// What the flight recorder keeps of one op: enough to name it after the fact.
struct FlightEntry {
  std::string group;
  OpKind op = OpKind::Barrier;
  uint64_t seq = 0;
  std::string sizes;  // "float32[1024] -> 4 x float32[1024]" (filled when first read)
  std::string where;  // "file.cpp:42" (filled when first read)
  Clock::time_point enqueued;
  std::string state = "enqueued";  // enqueued | completed | timed out | failed
};

// One op in flight: its events, the tensors (and staging buffers) NCCL reads and writes, and
// its deadline. Finished by whoever sees its event fire first: the waiting thread or the
// watchdog.
class NcclWork final : public ranks::detail::WorkState {
 public:
  NcclWork(std::shared_ptr<Communicator> comm, OpRequest request);
  ~NcclWork() override;
  void block() override;
  void block_for(std::chrono::milliseconds timeout) override;

  // One poll (any thread, never blocks): true once the op has finished, failed or timed out. At
  // the op's deadline it fails the group with the Timeout of this op.
  bool poll();
  const std::shared_ptr<Communicator>& comm() const { return comm_; }
  const OpRequest& request() const { return request_; }
  OpRequest& request() { return request_; }
  FlightEntry entry() const;  // a copy: the state changes as the op finishes
  Clock::time_point deadline() const { return deadline_; }
  // Device memory of this op (staged cpu tensors, scratch buffers): stream-ordered on the
  // communicator's stream and freed there when the work goes away, so that freeing never waits
  // for the whole device (cudaFree would, and hang behind another group's stuck op).
  struct Staged {
    void* device = nullptr;
    size_t bytes = 0;
    Tensor host;             // the cpu tensor it stands for; undefined for scratch
    bool copy_back = false;  // NCCL writes it: copied to host once the op has completed
  };
  std::vector<Staged> staged;
  cudaEvent_t done_event = nullptr;  // recorded on the communicator's stream after the op

  // The Timeout this op raises after `timeout` (the simulator's shape, the flight recorder
  // appended).
  std::string timeout_message(Clock::time_point now, std::chrono::milliseconds timeout) const;

 private:
  bool poll(Clock::time_point deadline, std::chrono::milliseconds timeout);
  void time_out(Clock::time_point now, std::chrono::milliseconds timeout);
  void wait_until(Clock::time_point deadline, std::chrono::milliseconds timeout);
  void finish(std::exception_ptr failure);

  const std::shared_ptr<Communicator> comm_;
  OpRequest request_;
  mutable FlightEntry entry_;  // its text fields are filled lazily by entry()
  Clock::time_point deadline_;
  mutable std::mutex mutex_;  // guards the finish and entry_.state
  std::atomic<bool> finished_{false};
  std::exception_ptr result_;  // set with finished_; copied to WorkState::error by the waiter
};

// Starts one op on comm (collectives.cpp): stages cpu tensors, orders the communicator's stream
// after the caller's, launches the NCCL calls and records the op's event. Errors of a request
// that breaks op.hpp's conventions are InvalidArgument; NCCL's refusals BackendError; both come
// back through the returned Work.
Work start(const std::shared_ptr<Communicator>& comm, OpRequest&& request);

// "float32[1024]", "4 x float32[1024]": what a flight entry says about an op's tensors.
std::string describe_sizes(const OpRequest& request);

}  // namespace ranks::backends::nccl::detail
