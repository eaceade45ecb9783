#pragma once
// An operation in flight on an MPI communicator, and the communicator state it shares with the
// backend. MPI has no timeouts of its own: MpiWork::block() is the watchdog.

// The C API only: Open MPI's (deprecated) C++ bindings would need libmpi_cxx, which MPI::MPI_C
// does not link.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/op.hpp"
#include "ranks/work.hpp"

namespace ranks::backends::mpi {

// Every MPI call holds this while it runs unless MPI granted MPI_THREAD_MULTIPLE (then it is an
// empty lock).
std::unique_lock<std::mutex> lock_mpi();
void set_thread_level(int provided);
// Whether MPI granted MPI_THREAD_MULTIPLE (then lock_mpi() locks nothing).
bool thread_multiple();

// MPI's text for a return code, with the code and its error class.
std::string error_string(int rc);
// Throws BackendError naming the call, the context and MPI's text when rc is not MPI_SUCCESS.
void check_mpi(int rc, std::string_view call, std::string_view context = {});

// Whether a timed-out operation may still be in MPI's hands: then MPI_Finalize could wait for
// peers that never come, so the process exits without it.
bool has_abandoned_operations();

class MpiWork;
struct AllToAllPlan;

// Staging memory and all_to_all's sizes, counts and displacements (requests.hpp), which MPI reads
// and writes until the op's requests complete.
struct Staging {
  std::unique_ptr<std::byte[]> send;
  std::unique_ptr<std::byte[]> recv;
  std::shared_ptr<AllToAllPlan> plan;
};

// One group's communicator, shared by its Backend and the works in flight on it.
struct Comm {
  Comm(MPI_Comm comm, std::string group_name, std::shared_ptr<const std::vector<int>> ranks,
       int group_rank);
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();  // frees the communicator unless MPI is finalised

  int size() const { return static_cast<int>(members->size()); }
  int global_rank(int group_rank) const { return (*members)[static_cast<size_t>(group_rank)]; }
  // Keeps work alive while MPI may use its buffers, and drops finished works nobody else holds.
  void track(std::shared_ptr<MpiWork> work);
  // Called by the backend's destructor: orphans get up to 100 ms to finish; works still in MPI's
  // hands after that are kept alive for good.
  void release_all();
  // Why collectives can no longer run here; empty while they can.
  std::string broken();
  void mark_broken(std::string why);

  MPI_Comm handle;
  const std::string name;
  const std::shared_ptr<const std::vector<int>> members;  // global ranks, by group rank
  const int rank;                                         // this process's group rank
  int tag_ub = 32767;                                     // MPI guarantees at least this
  // The deadline for requests that carry none (dispatch always sets one; direct callers may not).
  std::chrono::milliseconds default_timeout{0};

 private:
  std::mutex mutex_;
  std::string broken_;
  std::atomic<bool> is_broken_{false};  // broken_ is set: every collective asks, few find it
  std::vector<std::shared_ptr<MpiWork>> in_flight_;
};

class MpiWork final : public ranks::detail::WorkState {
 public:
  // Runs when the current request completes. It may post the next request into `request`; the
  // op is finished once a step posts none. Throwing fails the op.
  using Step = std::function<void(MpiWork&, const MPI_Status&)>;

  MpiWork(std::shared_ptr<Comm> c, OpRequest&& r);
  void block() override { wait_for(timeout_or(op, comm->default_timeout)); }
  void block_for(std::chrono::milliseconds timeout) override { wait_for(timeout); }
  // A program polling Work::is_completed() is the only thing that moves the op along.
  void on_poll() override { progress(); }

  // One MPI_Test and the steps it unlocks; never throws, never blocks. True once MPI is done with
  // the op's buffers (finished, failed, or given up on and since completed).
  bool progress();
  // "all_reduce on group 'world' seq 3 at f.cpp:10"
  std::string describe() const;
  // Whether MPI holds a request of this op; safe to ask from any thread.
  bool in_mpi() const { return in_mpi_.load(std::memory_order_acquire); }
  // Records that `request` has been posted (or not); start() calls it after the first post.
  void update_in_mpi() { in_mpi_.store(request != MPI_REQUEST_NULL, std::memory_order_release); }

  const std::shared_ptr<Comm> comm;
  OpRequest op;                   // owns the tensors MPI reads and writes
  std::chrono::nanoseconds spin;  // how long to poll flat out before napping
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<Step> steps;
  size_t next_step = 0;
  Staging staging;  // MPI reads and writes it until the request completes

 private:
  void wait_for(std::chrono::milliseconds timeout);
  void time_out(std::chrono::nanoseconds waited, std::chrono::milliseconds timeout);
  // The error for a request MPI completed with code rc.
  std::exception_ptr failure(int rc) const;
  bool abandoned_ = false;  // timed out while MPI still held the request
  std::atomic<bool> in_mpi_{false};
};

// "all_reduce on group 'world' seq 3 at f.cpp:10"
std::string describe(const Comm& comm, const OpRequest& op);
// The Timeout text of op after waiting `waited` of `timeout`: "rank 1 timed out after 200 ms in
// all_reduce on group 'world' seq 3 at f.cpp:10 (waited 200.4 ms; mpi backend); <who is missing>;
// <consequence>" (no consequence when it is empty).
std::string timeout_text(const Comm& comm, const OpRequest& op, std::chrono::nanoseconds waited,
                         std::chrono::milliseconds timeout, std::string_view consequence);

// Starts one operation on comm (collectives.cpp). Throws InvalidArgument for a request that breaks
// op.hpp's conventions, Unsupported for non-cpu tensors, BackendError when MPI refuses.
Work start(const std::shared_ptr<Comm>& comm, OpRequest&& request);

}  // namespace ranks::backends::mpi
