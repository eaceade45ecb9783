#pragma once
// Our Boost.Fiber scheduling algorithm. It decides which ready rank runs next (FIFO, or a seeded
// random choice for schedule exploration) and hands control to the engine when none is ready:
// Boost's own idle handling would read the real clock, which the simulator must never do.

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/properties.hpp>

#include "ranks/context.hpp"
#include "ranks/sim/ring_queue.hpp"

namespace ranks::sim::detail {

class Engine;
struct SimRank;

// Fiber-local storage: which simulated rank a fiber is. Asked only when Boost itself wakes a
// rank's fiber (a program that uses Boost.Fiber's own primitives inside a rank): the engine names
// the rank of every fiber it wakes, which spares each wake a read of the fiber's properties.
class RankProps final : public boost::fibers::fiber_properties {
 public:
  RankProps(boost::fibers::context* fiber, SimRank* simulated)
      : fiber_properties(fiber), rank(simulated) {}
  SimRank* rank;
};

class Scheduler final : public boost::fibers::algo::algorithm {
 public:
  Scheduler(Engine& engine, uint64_t seed, int world_size);
  ~Scheduler() override;

  void awakened(boost::fibers::context* ctx) noexcept override;
  boost::fibers::context* pick_next() noexcept override;
  bool has_ready_fibers() const noexcept override {
    return !ready_.empty() || dispatcher_ != nullptr;
  }
  void suspend_until(std::chrono::steady_clock::time_point const&) noexcept override;
  void notify() noexcept override {}

  // A rank the engine wakes, queued without Boost's context::schedule(): that reads the fiber's
  // control block (its scheduler, its sleep-queue hook) only to call awakened(), and a rank
  // blocked in the engine is in no Boost queue. One miss less per member of a collective at
  // 16,384 ranks.
  void ready(boost::fibers::context* fiber, SimRank* rank) noexcept;
  // The running rank's fiber is ending: Boost's dispatcher goes next, to free it (see
  // fiber_end.hpp), and then the ranks in their order.
  void free_ended_next() noexcept { free_ended_ = true; }

 private:
  // From here on the ranks' stacks and records no longer fit in a core's 2 MiB L2: prefetching
  // gains 9 % on an all_reduce at 1,024 ranks, 20 % at 4,096, 75 % at 16,384 (sim_bench,
  // reports/simulator.md). Smaller worlds were not measured.
  static constexpr int prefetch_from = 1024;

  struct Ready {
    boost::fibers::context* fiber;
    SimRank* rank;           // null: not a rank's fiber (the main fiber)
    const char* stack_mark;  // its SimRank's, read here while wake() has that line in cache
  };
  // Starts loading what the rank `ahead` places down the queue will touch when it runs.
  void prefetch_ahead() const noexcept;

  Engine& engine_;
  RingQueue<Ready> ready_;
  // Boost's dispatcher, kept out of the queue: it frees ended fibers and, when nothing else is
  // ready, asks us to wait (suspend_until, where the engine moves the virtual clock). It runs
  // when a fiber has ended or the queue is empty, not once per turn of the queue as it would in
  // it.
  boost::fibers::context* dispatcher_ = nullptr;
  bool free_ended_ = false;
  ranks::detail::Rng rng_;
  bool seeded_;
  bool prefetch_;
};

}  // namespace ranks::sim::detail
