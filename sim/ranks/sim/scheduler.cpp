#include "ranks/sim/scheduler.hpp"

#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

void Scheduler::awakened(boost::fibers::context* ctx, RankProps&) noexcept {
  ready_.push_back(ctx);
}

boost::fibers::context* Scheduler::pick_next() noexcept {
  if (ready_.empty()) return nullptr;
  if (seeded_ && ready_.size() > 1) {
    // A seeded interleaving: any ready rank may go next. Swapping the choice to the front keeps
    // this O(1) and the sequence a pure function of the seed.
    size_t pick = static_cast<size_t>(rng_.next() % ready_.size());
    std::swap(ready_[0], ready_[pick]);
  }
  boost::fibers::context* next = ready_.front();
  ready_.pop_front();
  engine_.switching_to(next, static_cast<RankProps*>(next->get_properties())->rank);
  return next;
}

void Scheduler::suspend_until(std::chrono::steady_clock::time_point const&) noexcept {
  engine_.on_idle();
}

}  // namespace ranks::sim::detail
