#include "ranks/work.hpp"

#include <string>

#include "ranks/errors.hpp"

namespace ranks {

void Work::wait() {
  if (!state_) return;
  if (!state_->done) state_->block();
  if (state_->error) std::rethrow_exception(state_->error);
  if (state_->on_completion) (*std::exchange(state_->on_completion, nullptr))();
}

void Work::wait(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw InvalidArgument("Work::wait: the timeout must be positive, got " +
                          std::to_string(timeout.count()) + " ms");
  }
  if (!state_) return;
  if (!state_->done) state_->block_for(timeout);
  if (state_->error) std::rethrow_exception(state_->error);
  if (state_->on_completion) (*std::exchange(state_->on_completion, nullptr))();
}

bool Work::is_completed() const {
  if (!state_) return true;
  if (!state_->done) state_->on_poll();
  return state_->done;
}

std::exception_ptr Work::exception() const { return state_ ? state_->error : nullptr; }

int Work::source_rank() const { return state_ ? state_->source_rank : -1; }

}  // namespace ranks
