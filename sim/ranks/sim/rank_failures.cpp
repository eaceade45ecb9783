// How a rank's failure is recorded: what its body threw (an op's error, or the body's own), a
// child forked from it that went on, a stack it overflowed; and the text reports place it by.

#include <fmt/format.h>

#include <boost/context/detail/exception.hpp>

#include "ranks/detail/rejected_op.hpp"
#include "ranks/errors.hpp"
#include "ranks/sim/engine.hpp"
#include "ranks/sim/stack.hpp"

namespace ranks::sim::detail {

void Engine::run_rank(SimRank& rank, const std::function<void()>& body) {
  // A child forked in the body that comes back here would go on to run the other ranks.
  struct ChildStops {
    int rank;
    ~ChildStops() {
      if (in_forked_child.load(std::memory_order_relaxed)) [[unlikely]] {
        stop_forked_child(rank, "reached the end of the rank's body");
      }
    }
  } child_stops{rank.rank};
  try {
    body();
    rank.state = RankState::Finished;
  } catch (const boost::context::detail::forced_unwind&) {
    throw;
  } catch (const CrashUnwind&) {
    rank.state = RankState::Crashed;  // crash() has recorded why
  } catch (const Error& e) {
    // An argument error that no op raised (the front end's rejections carry their op; failed
    // ops deliver their own error) is the body's: Tensor::to_vector<double>() on a float tensor
    // after an all_reduce is not the all_reduce failing.
    if (const ranks::detail::RejectedOp* op = ranks::detail::rejected_op_of(e)) rank.rejected = *op;
    const bool from_op = rank.rejected.has_value() ||
                         std::current_exception() == rank.last_op_error ||
                         std::string_view(e.kind()) != "invalid_argument";
    if (from_op) {
      record_failure(rank, e.kind(), e.what());
    } else {
      record_body_failure(rank, e.what(), e.kind());
    }
  } catch (const std::exception& e) {
    record_body_failure(rank, e.what());
  } catch (...) {
    record_body_failure(rank, "the body threw something that is not a std::exception");
  }
}

std::string Engine::stack_overflow_text(const SimRank& rank) const {
  const size_t kib = stacks_ != nullptr ? stacks_->size_bytes() / 1024 : 0;
  return fmt::format(
      "rank {} overflowed its stack of {} KiB ({}): deep recursion or large local arrays; give "
      "each rank more with sim::Options::stack_bytes (ranks.sim.run(stack_bytes=...)), or run "
      "ranks on threads of their own (8 MiB stacks)",
      rank.rank, kib, after_last_op(rank));
}

std::string Engine::after_last_op(const SimRank& rank) const {
  char text[1024];
  return std::string(after_last_op_to(text, rank));
}

void Engine::record_body_failure(SimRank& rank, std::string message, std::string kind) {
  if (!rank.stopped_by_engine) {
    rank.failed_between_ops = true;
    if (rank.ops_entered > 0)
      message += fmt::format(" (thrown by the body {})", after_last_op(rank));
  }
  record_failure(rank, std::move(kind), std::move(message));
}

void Engine::record_failure(SimRank& rank, std::string kind, std::string message) {
  if (rank.stopped_by_engine) {  // unwinding a stuck run: the report keeps where it stood
    rank.state = RankState::Stuck;
    return;
  }
  rank.state = RankState::Failed;
  rank.error_kind = kind;
  rank.error = message;
  if (!first_failure_)
    first_failure_ = Failure{now_, rank.rank, std::move(kind), std::move(message)};
  if (trace_) trace_->instant(rank.rank, "failed", now_, rank.error);
}

}  // namespace ranks::sim::detail
