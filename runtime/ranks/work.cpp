#include "ranks/work.hpp"

#include <string>

#include "ranks/errors.hpp"

namespace ranks {

void Work::wait(std::source_location where) {
  if (!state_) return;
  if (!state_->done) state_->block();
  state_->observed = true;
  state_->on_observed(where);
  if (state_->error) std::rethrow_exception(state_->error);
  if (state_->on_completion) (*std::exchange(state_->on_completion, nullptr))();
}

void Work::wait(std::chrono::milliseconds timeout, std::source_location where) {
  if (timeout.count() <= 0) {
    throw InvalidArgument("Work::wait: the timeout must be positive, got " +
                          std::to_string(timeout.count()) + " ms");
  }
  if (!state_) return;
  if (!state_->done) state_->block_for(timeout);
  state_->observed = true;
  state_->on_observed(where);
  if (state_->error) std::rethrow_exception(state_->error);
  if (state_->on_completion) (*std::exchange(state_->on_completion, nullptr))();
}

bool Work::is_completed(std::source_location where) const {
  if (!state_) return true;
  if (!state_->done) state_->on_poll();
  if (!state_->done) return false;
  state_->observed = true;
  state_->on_observed(where);
  return true;
}

std::exception_ptr Work::exception() const { return state_ ? state_->error : nullptr; }

int Work::source_rank() const {
  if (!state_) return -1;
  if (!state_->done) state_->on_read_before_completion("source_rank()");
  return state_->source_rank;
}

}  // namespace ranks
