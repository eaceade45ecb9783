#include "ranks/backends/nccl/work.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "ranks/backends/join.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/backends/nccl/types.hpp"
#include "ranks/backends/nccl/watchdog.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/real/stuck_peers.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::nccl::detail {

using ranks::detail::where_str;

// ---------------------------------------------------------------------------- Communicator

Communicator::Communicator(GroupSpec spec, int device, ncclComm_t comm,
                           std::chrono::milliseconds timeout)
    : spec_(std::move(spec)), device_(device), default_timeout_(timeout), comm_(comm) {
  const std::string context = fmt::format("nccl: group '{}' on cuda:{}", spec_.name, device_);
  DeviceGuard guard(device_, context);
  // Non-blocking: the legacy default stream must not serialise with it implicitly; the events
  // in collectives.cpp order the two explicitly.
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate",
             context);
  check_cuda(cudaEventCreateWithFlags(&ready_event_, cudaEventDisableTiming), "cudaEventCreate",
             context);
  int pools = 0;
  memory_pools_ =
      cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device_) == cudaSuccess &&
      pools != 0;
}

void* Communicator::allocate(size_t bytes) {
  void* pointer = nullptr;
  const size_t size = std::max<size_t>(bytes, 1);  // a unique, non-null address even for none
  auto what = [&] {
    return fmt::format("nccl: group '{}': {} bytes of staging memory on cuda:{}", spec_.name, bytes,
                       device_);
  };
  if (memory_pools_) {
    check_cuda(cudaMallocAsync(&pointer, size, stream_), "cudaMallocAsync", what);
  } else {
    check_cuda(cudaMalloc(&pointer, size), "cudaMalloc", what);
  }
  return pointer;
}

void Communicator::release(void* pointer) noexcept {
  if (pointer == nullptr) return;
  if (memory_pools_) {
    cudaFreeAsync(pointer, stream_);
  } else {
    cudaFree(pointer);
  }
}

cudaEvent_t Communicator::take_event() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_events_.empty()) {
      cudaEvent_t event = free_events_.back();
      free_events_.pop_back();
      return event;
    }
  }
  cudaEvent_t event = nullptr;
  check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate",
             [this] { return fmt::format("nccl: group '{}' on cuda:{}", spec_.name, device_); });
  return event;
}

void Communicator::return_event(cudaEvent_t event, bool fired) {
  if (event == nullptr) return;
  if (fired) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_events_.push_back(event);
    return;
  }
  cudaEventDestroy(event);  // CUDA releases it once it has fired, if it ever does
}

Communicator::~Communicator() {
  if (comm_ != nullptr) {
    if (failed()) {
      abort();
    } else {
      try {
        // Finalize waits for the ops still in flight; a peer that never comes must not keep
        // this process from exiting, hence the deadline and the abort.
        check_nccl(ncclCommFinalize(comm_), "ncclCommFinalize", spec_.name, comm_);
        settle(comm_, Clock::now() + default_timeout_, "nccl: finalising group " + spec_.name, {});
        ncclCommDestroy(comm_);
      } catch (const std::exception&) {
        ncclCommAbort(comm_);
      }
      comm_ = nullptr;
    }
  }
  for (cudaEvent_t event : free_events_) cudaEventDestroy(event);
  if (ready_event_ != nullptr) cudaEventDestroy(ready_event_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::chrono::milliseconds Communicator::timeout_of(const OpRequest& request) const {
  return timeout_or(request, default_timeout_);
}

std::string Communicator::describe(const OpRequest& request) const {
  return ranks::detail::describe(ranks::detail::place_of(request, spec_.name));
}

std::string Communicator::peer_name(int group_rank) const {
  return ranks::detail::peer_name(spec_, group_rank);
}

std::exception_ptr Communicator::failure() const {
  if (!failed()) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_.first();
}

bool Communicator::fail(std::exception_ptr error, const OpRequest* cause) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.record(std::move(error), cause)) return false;
    failed_.store(true, std::memory_order_release);
  }
  changed_.notify_all();
  return true;
}

std::exception_ptr Communicator::failure_for(const OpRequest& request) const {
  if (!failed()) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_.for_op(request, describe(request), spec_.name);
}

void Communicator::abort() {
  std::lock_guard<std::mutex> launch(launch_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_ || comm_ == nullptr) return;
    aborted_ = true;
  }
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

void Communicator::check_async_error() {
  std::unique_lock<std::mutex> launch(launch_mutex_, std::try_to_lock);
  if (!launch.owns_lock() || comm_ == nullptr || failed()) return;
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return;
  if (state == ncclSuccess || state == ncclInProgress) return;
  const bool remote = state == ncclRemoteError || state == ncclSystemError;
  const std::string text = fmt::format(
      "group '{}' (rank {} of {}): NCCL reported an asynchronous error{}: {}", spec_.name,
      spec_.rank, spec_.size(), remote ? " (a peer died or its network failed)" : "",
      nccl_error_text(state, comm_));
  fail(remote ? std::make_exception_ptr(RankFailure(text))
              : std::make_exception_ptr(BackendError(text)));
}

// ---------------------------------------------------------------------------- NcclWork

NcclWork::NcclWork(std::shared_ptr<Communicator> comm, OpRequest request)
    : comm_(std::move(comm)), request_(std::move(request)) {
  entry_.group = comm_->spec().name;
  entry_.op = request_.kind;
  entry_.seq = request_.seq;
  entry_.enqueued = Clock::now();
  deadline_ = entry_.enqueued + comm_->timeout_of(request_);
}

NcclWork::~NcclWork() {
  for (const Staged& s : staged) comm_->release(s.device);
  comm_->return_event(done_event, finished_.load(std::memory_order_acquire) && result_ == nullptr);
}

FlightEntry NcclWork::entry() const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Formatted here, off the launch path: the watchdog reads each entry once, at retirement.
  if (entry_.where.empty()) {
    entry_.sizes = describe_sizes(request_);
    entry_.where = where_str(request_.where);
  }
  return entry_;
}

void NcclWork::finish(std::exception_ptr failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_.load(std::memory_order_relaxed)) return;
  result_ = std::move(failure);
  entry_.state = result_ == nullptr ? "completed" : "failed";
  finished_.store(true, std::memory_order_release);
  // Published for Work::is_completed(), whoever finishes the op; Work::wait() still runs the
  // completion step (copying staged cpu tensors back) on the waiting thread.
  error = result_;
  done = true;
}

std::string NcclWork::timeout_message(Clock::time_point now,
                                      std::chrono::milliseconds timeout) const {
  const Communicator& c = *comm_;
  // "; rank 1 timed out in this all_reduce too; rank 2 wrote nothing ..." (through the store)
  const std::string others =
      ranks::detail::stuck_peers(c.spec(), request_, ranks::detail::stuck_window(timeout));
  std::string waits_for;
  if (is_point_to_point(request_.kind)) {
    waits_for = ranks::detail::unmatched_point_to_point(
        request_.kind, c.spec().global_ranks()[static_cast<size_t>(request_.root)], request_.tag,
        capabilities("nccl").matches_tags);
    waits_for += others;
  } else {
    waits_for = others.empty() ? "NCCL cannot tell which ranks have not arrived (`ranks sim "
                                 "--backend nccl` names them)"
                               : "what the ranks it waits on say: " + others.substr(2);
  }
  return ranks::detail::timeout_text(
      c.global_rank(), timeout, ranks::detail::place_of(request_, c.spec().name),
      ranks::detail::waited_details(now - entry_.enqueued, "nccl"), waits_for,
      fmt::format("{}; the communicator is aborted, so later ops of this group fail too",
                  Watchdog::instance().flight_record(c.spec().name, now)));
}

void NcclWork::time_out(Clock::time_point now, std::chrono::milliseconds timeout) {
  const std::string message = timeout_message(now, timeout);
  if (exit_on_timeout()) {
    std::fprintf(stderr,
                 "ranks: error: %s\nranks: RANKS_NCCL_ON_TIMEOUT=exit: exiting without "
                 "ncclCommAbort\n",
                 message.c_str());
    Watchdog::instance().dump(now);
    std::fflush(nullptr);
    std::_Exit(1);
  }
  comm_->fail(std::make_exception_ptr(Timeout(message)), &request_);
}

bool NcclWork::poll(Clock::time_point deadline, std::chrono::milliseconds timeout) {
  if (finished_.load(std::memory_order_acquire)) return true;
  if (std::exception_ptr failure = comm_->failure_for(request_)) {
    finish(std::move(failure));
    return true;
  }
  const cudaError_t state = cudaEventQuery(done_event);
  if (state == cudaSuccess) {
    finish(nullptr);
    return true;
  }
  if (state != cudaErrorNotReady) {
    cudaGetLastError();
    comm_->fail(std::make_exception_ptr(BackendError(fmt::format(
                    "{}: the op's CUDA event reports {} ({})", comm_->describe(request_),
                    cudaGetErrorName(state), cudaGetErrorString(state)))),
                &request_);
    return poll(deadline, timeout);
  }
  const auto now = Clock::now();
  if (now < deadline) return false;
  time_out(now, timeout);
  return poll(deadline, timeout);
}

bool NcclWork::poll() { return poll(deadline_, comm_->timeout_of(request_)); }

void NcclWork::wait_until(Clock::time_point deadline, std::chrono::milliseconds timeout) {
  // Most ops finish within microseconds of the call: spin on the event first, then back off to
  // short sleeps (a long op costs at most 50 us of extra latency, a stuck one no CPU).
  auto pause = std::chrono::microseconds(0);
  while (!poll(deadline, timeout)) {
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = std::chrono::microseconds(1);
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(50));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (result_ == nullptr) {
    // Later work on the caller's stream (kernels, cudaMemcpy) comes after the op's writes.
    cudaStreamWaitEvent(nullptr, done_event, 0);
  }
}

void NcclWork::block() { wait_until(deadline_, comm_->timeout_of(request_)); }

void NcclWork::block_for(std::chrono::milliseconds timeout) {
  // This call's own deadline, counted from the call; the op's own still applies when earlier.
  // NCCL cannot cancel an op in flight, so either one ends the group.
  const auto mine = Clock::now() + timeout;
  if (mine < deadline_) {
    wait_until(mine, timeout);
  } else {
    block();
  }
}

std::string describe_sizes(const OpRequest& request) {
  auto list = [](const TensorList& tensors) -> std::string {
    if (tensors.empty()) return "-";
    if (tensors.size() == 1) return tensors.front().describe();
    return fmt::format("{} x {}", tensors.size(), tensors.front().describe());
  };
  return fmt::format("{} -> {}", list(request.inputs), list(request.outputs));
}

}  // namespace ranks::backends::nccl::detail
