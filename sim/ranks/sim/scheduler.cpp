#include "ranks/sim/scheduler.hpp"

#include "ranks/sim/comm.hpp"
#include "ranks/sim/engine.hpp"
#include "ranks/sim/prefetch.hpp"

namespace ranks::sim::detail {

namespace {

// How far down the ready queue to prefetch: far enough that the loads have landed when the rank
// runs (a rank-operation takes ~100-200 ns, a miss to memory ~100 ns), near enough that they
// are still cached.
constexpr size_t ahead = 4;
// The rank's own heap objects, found through its SimRank once the prefetch above has brought it
// in: the work it last submitted (which it reads and releases as it resumes) and its group
// (which its next op goes through first). +30 % at 16,384 ranks (reports/simulator.md).
constexpr size_t ahead_heap = 2;
// And one rank ahead, through the group line fetched a rank earlier, the first line of that
// group's backend (the rank's SimComm), which every op reads and writes first: +4 % for an
// all_reduce at 16,384 ranks, +3 % for a barrier (reports/simulator.md).
constexpr size_t ahead_backend = 1;
// What a rank touches of its own stack between being resumed and blocking again, around the
// frame it blocked in (SimRank::stack_mark): below it Boost's switch and the deeper calls an op
// makes (submit), above it the op's own frames and the bottom of the caller's, where the caller
// keeps what it uses across the call. An all_reduce touches 12 lines in this window, a barrier
// 10 (valgrind's lackey); a window fixed below the stack's top instead (the body's depth taken
// as the benchmark's) fetches 24 lines and misses 2, and this one is 35 % faster for both at
// 16,384 ranks. No call of an op reaches further than 192 bytes below the mark, and a line
// fetched for nothing is not free: a window of 384 bytes below it costs 8-10 % at 16,384 ranks
// (reports/simulator.md).
constexpr size_t stack_bytes_below_mark = 192;
constexpr size_t stack_bytes_above_mark = 320;

}  // namespace

Scheduler::Scheduler(Engine& engine, uint64_t seed, int world_size)
    : engine_(engine), rng_(seed), seeded_(seed != 0), prefetch_(world_size >= prefetch_from) {
  engine_.attach(this);
}

Scheduler::~Scheduler() { engine_.attach(nullptr); }

void Scheduler::ready(boost::fibers::context* fiber, SimRank* rank) noexcept {
  ready_.push_back(Ready{fiber, rank, rank->stack_mark});
}

void Scheduler::awakened(boost::fibers::context* ctx) noexcept {
  if (ctx->is_context(boost::fibers::type::dispatcher_context)) {
    dispatcher_ = ctx;
    return;
  }
  SimRank* rank = engine_.take_waking();
  if (rank == nullptr) {
    // Not woken by the engine: the main fiber, or a rank's fiber that Boost woke on its own.
    if (auto* props = static_cast<RankProps*>(ctx->get_properties())) rank = props->rank;
  }
  ready_.push_back(Ready{ctx, rank, rank != nullptr ? rank->stack_mark : nullptr});
}

void Scheduler::prefetch_ahead() const noexcept {
  // Each rank's stack, control block and SimRank are its own cache lines; with thousands of
  // ranks they no longer fit in cache and every rank-operation would wait on a dozen misses.
  // The queue says who runs next, so those misses can overlap with the ranks running before.
  if (!prefetch_ || ready_.size() <= ahead) return;
  const Ready& next = ready_[ahead];
  if (next.rank == nullptr) return;
  if (next.stack_mark != nullptr) {
    prefetch_range(next.stack_mark - stack_bytes_below_mark,
                   stack_bytes_below_mark + stack_bytes_above_mark);
  }
  // Boost keeps a fiber's control block at the top of its stack. Of its four lines a switch to
  // a rank blocked in the engine touches the second and the fourth (Boost 1.74's layout, seen
  // with valgrind's lackey: reports/simulator.md; the third is read by Boost's own wake-up,
  // which a rank the engine wakes does not go through: ready()).
  const char* control_block = reinterpret_cast<const char*>(next.fiber);
  prefetch_range(control_block + kPrefetchLine, kPrefetchLine);
  prefetch_range(control_block + 3 * kPrefetchLine, kPrefetchLine);
  prefetch_range(next.rank, next.rank->hot_bytes());
  if (const SimRank* next_but_one = ready_[ahead_backend].rank) {
    if (const ranks::detail::GroupImpl* group = next_but_one->context.world.get()) {
      prefetch_range(group->backend.get(), kPrefetchLine);
    }
  }
  const SimRank* soon = ready_[ahead_heap].rank;
  if (soon == nullptr) return;
  // A SimWork sits after its 16-byte reference count (work_pool.hpp). The pointers may be stale
  // (a work back in its pool, a group since destroyed): a prefetch never faults.
  if (soon->block_work != nullptr) {
    prefetch_range(work_block(soon->block_work), kWorkCountBytes + sizeof(SimWork));
  }
  // Of its group only the first line: what dispatch reads (context.hpp).
  if (const ranks::detail::GroupImpl* group = soon->context.world.get()) {
    prefetch_range(group, kPrefetchLine);
  }
}

boost::fibers::context* Scheduler::pick_next() noexcept {
  if (dispatcher_ != nullptr && (free_ended_ || ready_.empty())) {
    free_ended_ = false;
    engine_.switching_to(dispatcher_, nullptr);
    return std::exchange(dispatcher_, nullptr);
  }
  if (ready_.empty()) return nullptr;
  if (seeded_) bring_seeded_pick_to_front(ready_, rng_);
  Ready next = ready_.front();
  ready_.pop_front();
  prefetch_ahead();
  engine_.switching_to(next.fiber, next.rank);
  return next.fiber;
}

void Scheduler::suspend_until(std::chrono::steady_clock::time_point const&) noexcept {
  engine_.on_idle();
}

}  // namespace ranks::sim::detail
