#include "ranks/backends/mpi/work.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "ranks/collectives.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/errors.hpp"
#include "ranks/real/frozen_peers.hpp"

namespace ranks::backends::mpi {

using namespace std::chrono_literals;
using ranks::detail::where_str;

namespace {

// Process-wide, like MPI itself (one real rank per process).
std::atomic<bool> serialize_calls{true};
std::atomic<int> abandoned_operations{0};

std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

// Works still in MPI's hands when their communicator's backend went away. Never freed: MPI may
// write into their buffers at any later time, and a leak beats a use-after-free.
void keep_forever(std::shared_ptr<MpiWork> work) {
  static auto* kept = new std::vector<std::shared_ptr<MpiWork>>;
  static std::mutex m;
  std::lock_guard guard(m);
  kept->push_back(std::move(work));
}

bool finalized() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

}  // namespace

std::unique_lock<std::mutex> lock_mpi() {
  if (!serialize_calls.load(std::memory_order_relaxed)) return {};
  return std::unique_lock(mpi_mutex());
}

void set_thread_level(int provided) {
  serialize_calls.store(provided < MPI_THREAD_MULTIPLE, std::memory_order_relaxed);
}

bool thread_multiple() { return !serialize_calls.load(std::memory_order_relaxed); }

std::string error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return fmt::format("mpi error {}", rc);
  int error_class = rc;
  MPI_Error_class(rc, &error_class);
  char class_text[MPI_MAX_ERROR_STRING] = {};
  int class_length = 0;
  MPI_Error_string(error_class, class_text, &class_length);
  return fmt::format("{} (mpi error {}, class {})", std::string_view(text, length), rc,
                     std::string_view(class_text, class_length));
}

void check_mpi(int rc, std::string_view call, std::string_view context) {
  if (rc == MPI_SUCCESS) return;
  throw BackendError(fmt::format("{}{}{} failed: {}", context, context.empty() ? "" : ": ", call,
                                 error_string(rc)));
}

bool has_abandoned_operations() { return abandoned_operations.load() > 0; }

Comm::Comm(MPI_Comm comm, std::string group_name, std::shared_ptr<const std::vector<int>> ranks,
           int group_rank)
    : handle(comm), name(std::move(group_name)), members(std::move(ranks)), rank(group_rank) {
  void* value = nullptr;
  int flag = 0;
  auto lock = lock_mpi();
  if (MPI_Comm_get_attr(handle, MPI_TAG_UB, &value, &flag) == MPI_SUCCESS && flag != 0) {
    tag_ub = *static_cast<int*>(value);
  }
}

Comm::~Comm() {
  if (handle == MPI_COMM_NULL || finalized()) return;
  auto lock = lock_mpi();
  MPI_Comm_free(&handle);  // pending operations still complete (MPI defers the free)
}

void Comm::track(std::shared_ptr<MpiWork> work) {
  std::lock_guard guard(mutex_);
  // A work only this list holds has no waiter left: drive it so MPI finishes with its buffers,
  // then let it go. Nobody else can reach it, so polling it here races with no one.
  std::erase_if(in_flight_, [](const std::shared_ptr<MpiWork>& w) {
    return w.use_count() == 1 && w->progress();
  });
  in_flight_.push_back(std::move(work));
}

void Comm::release_all() {
  std::lock_guard guard(mutex_);
  if (finalized()) {
    in_flight_.clear();
    return;
  }
  // Orphans still in MPI get a moment to finish (a late peer may just have arrived) before they
  // are kept for good. The others are not polled: another thread may be waiting on them.
  const auto deadline = std::chrono::steady_clock::now() + 100ms;
  for (auto& work : in_flight_) {
    if (work.use_count() == 1) {
      while (!work->progress() && std::chrono::steady_clock::now() < deadline) {
      }
    }
    if (work->in_mpi()) keep_forever(std::move(work));
  }
  in_flight_.clear();
}

std::string Comm::broken() {
  if (!is_broken_.load(std::memory_order_acquire)) return {};
  std::lock_guard guard(mutex_);
  return broken_;
}

void Comm::mark_broken(std::string why) {
  std::lock_guard guard(mutex_);
  if (broken_.empty()) broken_ = std::move(why);
  is_broken_.store(true, std::memory_order_release);
}

MpiWork::MpiWork(std::shared_ptr<Comm> c, OpRequest&& r)
    : comm(std::move(c)), op(std::move(r)), spin(20ms) {
  size_t bytes = 0;
  for (const auto* list : {&op.inputs, &op.outputs}) {
    for (const Tensor& t : *list) bytes += t.nbytes();
  }
  // Non-blocking collectives advance only inside MPI calls, so napping stalls them: poll flat
  // out for at least as long as the data takes to move at 0.5 GB/s, then back off.
  spin += std::chrono::nanoseconds(static_cast<int64_t>(std::min<size_t>(bytes, 1ULL << 40) * 2));
}

std::string describe(const Comm& comm, const OpRequest& op) {
  return ranks::detail::describe(ranks::detail::place_of(op, comm.name));
}

std::string MpiWork::describe() const { return mpi::describe(*comm, op); }

bool MpiWork::progress() {
  while (request != MPI_REQUEST_NULL) {
    int flag = 0;
    MPI_Status status{};
    int rc = MPI_SUCCESS;
    {
      auto lock = lock_mpi();
      rc = MPI_Test(&request, &flag, &status);
    }
    if (rc != MPI_SUCCESS) {
      request = MPI_REQUEST_NULL;  // MPI has completed (and freed) a request that failed
      if (!done) {
        error = failure(rc);
        done = true;
      }
      break;
    }
    if (flag == 0) {
      update_in_mpi();
      return false;
    }
    if (done || next_step >= steps.size()) break;  // a timed-out op's late completion
    try {
      steps[next_step++](*this, status);
    } catch (...) {
      error = std::current_exception();
      done = true;
      // A step that throws has posted nothing, so MPI is done with the buffers.
    }
  }
  if (abandoned_) {
    abandoned_ = false;
    abandoned_operations.fetch_sub(1);
  }
  done = true;
  update_in_mpi();
  return true;
}

void MpiWork::wait_for(std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  if (done) return;
  const auto start = clock::now();
  const bool bounded = timeout.count() > 0;
  std::chrono::nanoseconds nap = 50us;
  bool napping = false;
  unsigned polls = 0;
  while (!progress()) {
    // Reading the clock can cost more than an MPI_Test (a third of a small all_reduce on a VM
    // whose clock source is slow): while spinning, look at it every 64th poll only.
    if (!napping && ++polls % 64 != 0) continue;
    const auto waited = clock::now() - start;
    if (bounded && waited >= timeout) return time_out(waited, timeout);
    if (waited < spin) continue;
    napping = true;
    const std::chrono::nanoseconds left = bounded ? timeout - waited : nap;
    std::this_thread::sleep_for(std::min(nap, left));
    nap = std::min<std::chrono::nanoseconds>(nap * 2, 1ms);
  }
}

void MpiWork::time_out(std::chrono::nanoseconds waited, std::chrono::milliseconds timeout) {
  if (op.kind == OpKind::Recv) {
    // A receive can be cancelled; if a message matched it meanwhile, the op finished after all.
    int cancelled = 0;
    MPI_Status status{};
    int rc = MPI_SUCCESS;
    {
      auto lock = lock_mpi();
      MPI_Cancel(&request);
      rc = MPI_Wait(&request, &status);
      if (rc == MPI_SUCCESS) MPI_Test_cancelled(&status, &cancelled);
    }
    request = MPI_REQUEST_NULL;
    update_in_mpi();
    if (rc != MPI_SUCCESS) {
      error = failure(rc);  // e.g. a message that matched meanwhile but did not fit
      done = true;
      return;
    }
    if (cancelled == 0) {
      try {
        if (next_step < steps.size()) steps[next_step++](*this, status);
      } catch (...) {
        error = std::current_exception();
      }
      done = true;
      return;
    }
  } else {
    // MPI cannot cancel a collective (nor, reliably, a send): keep its buffers until MPI lets go.
    abandoned_ = true;
    abandoned_operations.fetch_add(1);
    if (!is_point_to_point(op.kind)) {
      comm->mark_broken(fmt::format("rank {}'s {} timed out at {}", comm->global_rank(comm->rank),
                                    op_label(op), where_str(op.where)));
    }
  }
  error = std::make_exception_ptr(Timeout(timeout_text(
      *comm, op, waited, timeout,
      is_point_to_point(op.kind) ? ""
                                 : "later collectives on this group fail, since MPI cannot cancel "
                                   "one in flight")));
  done = true;
}

std::exception_ptr MpiWork::failure(int rc) const {
  int error_class = rc;
  MPI_Error_class(rc, &error_class);
  if (op.kind == OpKind::Recv && error_class == MPI_ERR_TRUNCATE) {
    return std::make_exception_ptr(
        Mismatch(fmt::format("{}: the message is larger than the receiving tensor {} ({})",
                             describe(), op.outputs.front().describe(), error_string(rc))));
  }
  return std::make_exception_ptr(
      BackendError(fmt::format("{}: MPI failed: {}", describe(), error_string(rc))));
}

namespace {

// Who the op waits for, as far as MPI can tell.
std::string missing(const Comm& comm, const OpRequest& op) {
  if (is_point_to_point(op.kind)) {
    return ranks::detail::unmatched_point_to_point(
        op.kind, op.root == any_source ? any_source : comm.global_rank(op.root), op.tag);
  }
  // MPI_Finalize waits for every rank, so a rank that left its body early sits there, alive
  // and silent: unlike gloo, its peers can only notice it at this timeout.
  return "MPI cannot tell which ranks have not arrived (RANKS_DEBUG=detail or `ranks sim` "
         "names them); a rank that returned or exited early waits in MPI_Finalize, where "
         "MPI shows it to no one";
}

// Those of the ranks the op waits on that are frozen, as far as this host can see.
std::string frozen(const Comm& comm, const OpRequest& op) {
  std::vector<int> awaited;
  if (is_point_to_point(op.kind)) {
    if (op.root != any_source) awaited.push_back(comm.global_rank(op.root));
  } else {
    for (int r = 0; r < static_cast<int>(comm.members->size()); ++r) {
      if (r != comm.rank) awaited.push_back(comm.global_rank(r));
    }
  }
  return ranks::detail::frozen_peers(awaited);
}

}  // namespace

std::string timeout_text(const Comm& comm, const OpRequest& op, std::chrono::nanoseconds waited,
                         std::chrono::milliseconds timeout, std::string_view consequence) {
  return ranks::detail::timeout_text(comm.global_rank(comm.rank), timeout,
                                     ranks::detail::place_of(op, comm.name),
                                     ranks::detail::waited_details(waited, "mpi"),
                                     missing(comm, op) + frozen(comm, op), consequence);
}

}  // namespace ranks::backends::mpi
