#include "ranks/backends/gloo/work.hpp"

#include <fmt/format.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cctype>

#include "ranks/backends/gloo/watchdog.hpp"
#include "ranks/collectives.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/error_kind.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/real/stuck_peers.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::gloo::detail {

namespace {

// gloo reports every timeout as an IoException; only the text tells them from broken
// connections ("Timed out waiting 100ms for recv operation to complete", "Read timeout [addr]",
// "Connect timeout [addr]", "Application timeout caused pair closure").
bool is_timeout_text(const std::string& text) {
  return text.find("Timed out") != std::string::npos || text.find("timeout") != std::string::npos;
}

}  // namespace

Communicator::Communicator(GroupSpec spec, std::shared_ptr<::gloo::Context> context,
                           std::shared_ptr<::gloo::Context> reverse,
                           std::vector<std::pair<int, std::string>> endpoints,
                           std::chrono::milliseconds default_timeout)
    : spec_(std::move(spec)),
      context_(std::move(context)),
      reverse_(std::move(reverse)),
      endpoints_(std::move(endpoints)),
      default_timeout_(default_timeout) {}

std::chrono::milliseconds Communicator::timeout_of(const OpRequest& request) const {
  return timeout_or(request, default_timeout_);
}

std::string Communicator::describe(const OpRequest& request) const {
  return ranks::detail::describe(ranks::detail::place_of(request, spec_.name));
}

std::string Communicator::peer_name(int group_rank) const {
  return ranks::detail::peer_name(spec_, group_rank);
}

int Communicator::peer_in(const std::string& text) const {
  for (const auto& [rank, endpoint] : endpoints_) {
    // "[127.0.0.1]:4000" must not match "[127.0.0.1]:40001".
    for (size_t at = text.find(endpoint); at != std::string::npos;
         at = text.find(endpoint, at + 1)) {
      const size_t end = at + endpoint.size();
      if (end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end]))) {
        return rank;
      }
    }
  }
  return -1;
}

std::string Communicator::timeout_message(const OpRequest& request,
                                          std::chrono::milliseconds waited) const {
  std::string waits_for =
      "gloo cannot tell which ranks have not arrived (`ranks sim --backend gloo` names them)";
  if (is_point_to_point(request.kind)) {
    const int peer = request.root == any_source || request.root < 0 || request.root >= size()
                         ? any_source
                         : spec_.global_ranks()[static_cast<size_t>(request.root)];
    waits_for = ranks::detail::unmatched_point_to_point(request.kind, peer, request.tag);
  }
  return ranks::detail::timeout_text(spec_.global_ranks()[static_cast<size_t>(spec_.rank)],
                                     waited, ranks::detail::place_of(request, spec_.name),
                                     "gloo backend", waits_for,
                                     fmt::format("group '{}' is closed", spec_.name));
}

std::exception_ptr Communicator::translate(const OpRequest& request, std::exception_ptr thrown,
                                           std::chrono::milliseconds waited) const {
  const std::string op = describe(request);
  try {
    std::rethrow_exception(thrown);
  } catch (const Error&) {
    return thrown;
  } catch (const ::gloo::IoException& e) {
    const std::string text = e.what();
    if (is_timeout_text(text)) {
      return std::make_exception_ptr(Timeout(fmt::format(
          "{} (gloo: {})",
          timeout_message(request, waited.count() > 0 ? waited : timeout_of(request)), text)));
    }
    int peer = is_point_to_point(request.kind) && request.root != any_source ? request.root
                                                                             : peer_in(text);
    return std::make_exception_ptr(RankFailure(ranks::detail::lost_peer_text(
        spec_.global_ranks()[static_cast<size_t>(spec_.rank)], peer_name(peer),
        fmt::format("the connection broke: that process died, or gave up on group '{}' after an "
                    "error of its own; gloo: {}",
                    spec_.name, text),
        ranks::detail::place_of(request, spec_.name), {})));
  } catch (const ::gloo::EnforceNotMet& e) {
    return std::make_exception_ptr(BackendError(fmt::format("{}: gloo failed: {}", op, e.what())));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(BackendError(fmt::format("{}: gloo failed: {}", op, e.what())));
  } catch (...) {
    return std::make_exception_ptr(BackendError(op + ": gloo threw an unknown exception"));
  }
}

std::exception_ptr Communicator::fail(const OpRequest& request, std::exception_ptr thrown,
                                      std::chrono::milliseconds waited) {
  {
    // A peer that timed out may close its connections while this rank's own time_out still
    // waits for the records: the broken connection is a consequence, the Timeout the verdict.
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !timing_out_; });
  }
  std::exception_ptr error = translate(request, std::move(thrown), waited);
  if (failure_for(request) == nullptr) error = with_stuck_peers(request, error, waited);
  if (!record(error, &request)) return failure_for(request);
  return error;
}

std::exception_ptr Communicator::time_out(const OpRequest& request,
                                          std::chrono::milliseconds timeout) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !timing_out_; });
    if (!failure_.empty()) {
      lock.unlock();
      return failure_for(request);
    }
    timing_out_ = true;
  }
  std::exception_ptr error = std::make_exception_ptr(Timeout(timeout_message(request, timeout)));
  try {
    error = with_stuck_peers(request, error, timeout);
    record(error, &request);
  } catch (...) {
    record(std::current_exception(), &request);
  }
  update([this] { timing_out_ = false; });
  return failure_for(request);
}

std::exception_ptr Communicator::with_stuck_peers(const OpRequest& request,
                                                  std::exception_ptr error,
                                                  std::chrono::milliseconds waited) const {
  try {
    std::rethrow_exception(error);
  } catch (const Timeout& e) {
    const auto limit = waited.count() > 0 ? waited : timeout_of(request);
    const std::string others =
        ranks::detail::stuck_peers(spec_, request, ranks::detail::stuck_window(limit));
    if (!others.empty()) return std::make_exception_ptr(Timeout(e.what() + others));
  } catch (...) {
  }
  return error;
}

void Communicator::abandon(const std::string& why) {
  record(std::make_exception_ptr(BackendError(why)), nullptr);
}

bool Communicator::record(std::exception_ptr error, const OpRequest* request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.record(error, request)) return false;
    for (auto [buffer, is_send] : waiting_) {
      if (is_send) {
        buffer->abortWaitSend();
      } else {
        buffer->abortWaitRecv();
      }
    }
  }
  changed_.notify_all();
  abort_transport();
  return true;
}

std::exception_ptr Communicator::failure_for(const OpRequest& request) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_.for_op(request, describe(request), spec_.name);
}

void Communicator::abort_transport() {
  // gloo has no public abort, but its own timeout path closes every connection of the context
  // and fails every op pending on them (the peers then see their connection close). A
  // zero-length wait on a buffer that expects nothing takes that path.
  for (const auto* context : {&context_, &reverse_}) {
    if (*context == nullptr) continue;
    try {
      uint8_t dummy = 0;
      auto buffer = (*context)->createUnboundBuffer(&dummy, sizeof(dummy));
      buffer->waitRecv(nullptr, std::chrono::milliseconds(0));
    } catch (...) {
      // The IoException that announces the closure is the expected outcome.
    }
  }
}

int Communicator::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_;
}

bool Communicator::begin_wait(::gloo::transport::UnboundBuffer* buffer, bool is_send) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) return false;
  waiting_.emplace_back(buffer, is_send);
  return true;
}

void Communicator::end_wait(::gloo::transport::UnboundBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(waiting_, [buffer](const auto& entry) { return entry.first == buffer; });
}

RunQueue::RunQueue() : thread_([this] { loop(); }) {}

RunQueue::~RunQueue() {
  // The backend stops the queue; this only guards a path that forgot to.
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      stop();
    }
  }
}

void RunQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RunQueue::post(std::shared_ptr<CollectiveWork> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_all();
}

bool RunQueue::run_now(CollectiveWork& work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Ops posted earlier run first (every rank must run a group's collectives in one order).
    if (running_ || !queue_.empty() || stopping_) return false;
    running_ = true;  // the thread starts nothing until release()
  }
  work.run();
  release();
  return true;
}

void RunQueue::release() {
  bool more = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    more = !queue_.empty() || stopping_;
  }
  if (more) wake_.notify_all();  // the thread sleeps while there is nothing to run
}

bool RunQueue::run_here(const CollectiveWork* target, std::chrono::milliseconds timeout) {
  std::shared_ptr<CollectiveWork> next;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Only the next op: running ops queued before it here could outlast this caller's deadline.
    if (running_ || queue_.empty() || queue_.front().get() != target) return false;
    next = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
  }
  next->run(timeout);
  release();
  return true;
}

void RunQueue::loop() {
  for (;;) {
    std::shared_ptr<CollectiveWork> next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock,
                 [this] { return (!running_ && !queue_.empty()) || (stopping_ && !running_); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      next = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    next->run();  // never throws: run() catches everything
    next.reset();
    release();
  }
}

CollectiveWork::CollectiveWork(std::shared_ptr<Communicator> comm, std::shared_ptr<RunQueue> queue,
                               OpRequest request)
    : comm_(std::move(comm)), queue_(std::move(queue)), request_(std::move(request)) {}

void CollectiveWork::run(std::chrono::milliseconds timeout) {
  std::exception_ptr result = comm_->failure_for(request_);
  if (result == nullptr) {
    const auto limit = timeout.count() > 0 ? timeout : comm_->timeout_of(request_);
    try {
      Watch watch(*comm_, request_, limit);
      run_collective(*comm_, request_, gloo_timeout(limit));
      // Completed after its deadline, while this rank was telling the others where it is
      // stuck: the group is closed by now, and the op reports the Timeout that closed it.
      if (watch.finish()) result = comm_->failure_for(request_);
    } catch (const Mismatch&) {
      // new_group's agreement: every rank reached the same verdict, the group is intact.
      result = std::current_exception();
    } catch (...) {
      result = comm_->fail(request_, std::current_exception(), limit);
    }
  }
  comm_->finish_collective([&] {
    finished_ = true;
    result_ = result;
  });
}

void CollectiveWork::complete() {
  error = comm_->locked([this] { return result_; });
  done = true;
}

void CollectiveWork::on_poll() {
  auto [finished, result] = comm_->locked([this] { return std::pair{finished_, result_}; });
  if (!finished) return;
  error = result;
  done = true;
}

void CollectiveWork::block() { wait(comm_->timeout_of(request_)); }

void CollectiveWork::block_for(std::chrono::milliseconds timeout) { wait(timeout); }

void CollectiveWork::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Run here, the op keeps its own deadline, as on the queue's thread: a wait's longer timeout
  // must not extend it, a shorter one ends it (and closes the group, as a gloo wait would).
  queue_->run_here(this, std::min(timeout, comm_->timeout_of(request_)));
  switch (comm_->wait_until(deadline, [this] { return finished_; })) {
    case Communicator::Wake::Done:
      error = comm_->locked([this] { return result_; });
      break;
    case Communicator::Wake::Failed:
      error = comm_->failure_for(request_);
      break;
    case Communicator::Wake::TimedOut:
      error = comm_->time_out(request_, timeout);
      break;
  }
  done = true;
}

PointToPointWork::PointToPointWork(std::shared_ptr<Communicator> comm, OpRequest request)
    : comm_(std::move(comm)), request_(std::move(request)) {
  post_error_ = comm_->failure_for(request_);
  if (post_error_ != nullptr) return;
  Tensor& tensor =
      request_.kind == OpKind::Send ? request_.inputs.front() : request_.outputs.front();
  try {
    buffer_ = comm_->context()->createUnboundBuffer(tensor.data_ptr(), tensor.nbytes());
    post_point_to_point(*comm_, request_, *buffer_);
  } catch (...) {
    post_error_ = comm_->fail(request_, std::current_exception());
  }
}

PointToPointWork::~PointToPointWork() {
  if (!watcher_.joinable()) return;
  // Dropped while its watcher still waits: end that wait (the op is abandoned, as an unwaited
  // send or receive is).
  if (request_.kind == OpKind::Send) {
    buffer_->abortWaitSend();
  } else {
    buffer_->abortWaitRecv();
  }
  watcher_.join();
}

void PointToPointWork::block() { block_for(comm_->timeout_of(request_)); }

PointToPointWork::Outcome PointToPointWork::await(std::chrono::milliseconds timeout) {
  const bool is_send = request_.kind == OpKind::Send;
  // After the group failed, only collect what completed before: a zero wait.
  const bool registered = comm_->begin_wait(buffer_.get(), is_send);
  const auto limit = registered ? timeout : std::chrono::milliseconds(0);
  Outcome outcome;
  std::exception_ptr thrown;
  try {
    // The watchdog times the wait out at the deadline: fail() then aborts it (and closes the
    // group), where gloo's own timeout would close the group at once.
    Watch watch(*comm_, request_, limit);
    const auto gloo_limit = limit.count() > 0 ? gloo_timeout(limit) : limit;
    outcome.completed = is_send ? buffer_->waitSend(&outcome.peer, gloo_limit)
                                : buffer_->waitRecv(&outcome.peer, gloo_limit);
    if (watch.finish()) outcome.completed = false;  // past its deadline: the Timeout, below
  } catch (...) {
    thrown = std::current_exception();
  }
  if (registered) comm_->end_wait(buffer_.get());
  if (outcome.completed) return outcome;
  if (thrown != nullptr && registered) {
    outcome.error = comm_->fail(request_, thrown, timeout);
  } else {
    // The group failed (fail() may have aborted this wait), or the wait was abandoned.
    outcome.error = comm_->failure_for(request_);
  }
  return outcome;
}

void PointToPointWork::settle(const Outcome& outcome) {
  error = outcome.error;
  if (outcome.completed && request_.kind != OpKind::Send) source_rank = outcome.peer;
  done = true;
}

void PointToPointWork::block_for(std::chrono::milliseconds timeout) {
  if (post_error_ != nullptr) {
    error = post_error_;
    done = true;
    return;
  }
  if (watcher_.joinable()) {
    wait_for_watcher(timeout);
    return;
  }
  settle(await(timeout));
}

void PointToPointWork::on_poll() {
  if (post_error_ != nullptr) {
    block_for({});
    return;
  }
  if (!watcher_.joinable()) {
    watcher_ = std::thread([this] {
      Outcome outcome = await(comm_->timeout_of(request_));
      comm_->update([&] {
        watched_outcome_ = outcome;
        watched_ = true;
      });
    });
    return;
  }
  if (comm_->locked([this] { return watched_; })) {
    watcher_.join();
    settle(watched_outcome_);
  }
}

void PointToPointWork::wait_for_watcher(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto wake = comm_->wait_until(deadline, [this] { return watched_; });
  if (wake == Communicator::Wake::TimedOut) {
    // This wait's own deadline, shorter than the watcher's: the op times out as a gloo wait
    // would, which closes the group (and so ends the watcher's wait).
    const std::exception_ptr timed_out = comm_->time_out(request_, timeout);
    watcher_.join();
    error = timed_out;
    done = true;
    return;
  }
  watcher_.join();  // done, or the group failed and fail() aborted the watcher's wait
  settle(watched_outcome_);
}

}  // namespace ranks::backends::gloo::detail
