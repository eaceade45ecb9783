#pragma once
// The handle of an operation in flight. Every collective and point-to-point call has an
// asynchronous form that returns one; the blocking form is the asynchronous form plus wait().

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <source_location>
#include <utility>

namespace ranks {

namespace detail {
// What a backend implements for one operation. Backends derive from it; Work only reads it.
class WorkState {
 public:
  virtual ~WorkState() = default;
  // Blocks the calling rank until the operation has finished or failed (never throws); the
  // deadline is the group's timeout, or `timeout` for block_for.
  virtual void block() = 0;
  virtual void block_for(std::chrono::milliseconds timeout) = 0;
  // Work::is_completed() found the op not done. Real backends progress on their own; the
  // simulator lets the other ranks run, since a rank spinning on this would otherwise starve them.
  virtual void on_poll() {}
  // The program has seen the op end: a wait returned or threw, or is_completed() said true. The
  // simulator checks here that the op's buffers were left alone while it was in flight.
  // `where` is the call site of the wait.
  virtual void on_observed(const std::source_location& /*where*/) {}
  // The program read a result (source_rank) of an op that has not completed.
  virtual void on_read_before_completion(const char* /*what*/) const {}

  // Atomic because a backend may finish an op on another thread (nccl's watchdog) while the
  // program polls Work::is_completed(); error is written before done is set.
  std::atomic<bool> done{false};
  // The program has seen the op end (set by Work before on_observed): a wait returned or threw,
  // or is_completed() said true. Only the program's own thread reads it.
  bool observed = false;
  int source_rank = -1;  // the sender, for receives
  std::exception_ptr error;
  // Runs once on the waiting rank after a successful wait. Behind a pointer: the simulator makes
  // a state per rank-operation, and 32 bytes of std::function would cost each a cache line.
  std::unique_ptr<std::function<void()>> on_completion;
  void set_completion(std::function<void()> step) {
    on_completion = std::make_unique<std::function<void()>>(std::move(step));
  }
};

// A state that is already finished: the no-op cases (not distributed, world size 1).
class CompletedWork final : public WorkState {
 public:
  CompletedWork() { done = true; }
  void block() override {}
  void block_for(std::chrono::milliseconds) override {}
};
}  // namespace detail

// [[nodiscard]]: a Work dropped unwaited is an op whose completion, and errors, no one sees (the
// simulator reports it as a hazard).
class [[nodiscard]] Work {
 public:
  Work() = default;  // an empty Work is complete
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  // Rethrows the operation's error. `where` (the caller's line) names the wait in hazard reports.
  void wait(std::source_location where = std::source_location::current());
  // As wait(), with this call's own deadline instead of the group's (torch's work.wait(timeout)).
  void wait(std::chrono::milliseconds timeout,
            std::source_location where = std::source_location::current());
  // True once the op has ended; that counts as a wait (MPI_Test's rule).
  bool is_completed(std::source_location where = std::source_location::current()) const;
  std::exception_ptr exception() const;
  int source_rank() const;  // for irecv: the rank (within the group) that sent the message

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace ranks
