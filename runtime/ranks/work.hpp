#pragma once
// The handle of an operation in flight. Every collective and point-to-point call has an
// asynchronous form that returns one; the blocking form is the asynchronous form plus wait().

#include <exception>
#include <functional>
#include <memory>
#include <utility>

namespace ranks {

namespace detail {
// What a backend implements for one operation. Backends derive from it; Work only reads it.
class WorkState {
 public:
  virtual ~WorkState() = default;
  // Blocks the calling rank until the operation has finished or failed (never throws).
  virtual void block() = 0;

  bool done = false;
  std::exception_ptr error;
  int source_rank = -1;                 // the sender, for receives
  std::function<void()> on_completion;  // runs once on the waiting rank after a successful wait
};

// A state that is already finished: the no-op cases (not distributed, world size 1).
class CompletedWork final : public WorkState {
 public:
  CompletedWork() { done = true; }
  void block() override {}
};
}  // namespace detail

class Work {
 public:
  Work() = default;  // an empty Work is complete
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  void wait();  // rethrows the operation's error
  bool is_completed() const;
  std::exception_ptr exception() const;
  int source_rank() const;  // for irecv: the rank (within the group) that sent the message

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace ranks
