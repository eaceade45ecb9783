#include "ranks/work.hpp"

namespace ranks {

void Work::wait() {
  if (!state_) return;
  if (!state_->done) state_->block();
  if (state_->error) std::rethrow_exception(state_->error);
  if (state_->on_completion) std::exchange(state_->on_completion, nullptr)();
}

bool Work::is_completed() const { return !state_ || state_->done; }

std::exception_ptr Work::exception() const { return state_ ? state_->error : nullptr; }

int Work::source_rank() const { return state_ ? state_->source_rank : -1; }

}  // namespace ranks
