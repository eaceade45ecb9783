// The simulator's per-op record pool (sim/ranks/sim/work_pool.hpp): blocks are reused last-in
// first-out, other sizes bypass it, and a Work handle that outlives its run stays usable.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ranks/ranks.hpp>
#include <ranks/sim.hpp>
#include <set>
#include <vector>

#include "ranks/sim/work_pool.hpp"

namespace ranks::testing {
namespace {

using ranks::sim::detail::WorkPool;

TEST(SimWorkPool, AFreedBlockIsTheNextOneHandedOut) {
  WorkPool* pool = WorkPool::create();
  void* a = pool->allocate(96);
  void* b = pool->allocate(96);
  ASSERT_NE(a, b);
  pool->deallocate(a, 96);
  EXPECT_EQ(pool->allocate(96), a);
  pool->deallocate(a, 96);
  pool->deallocate(b, 96);
  pool->orphan();
}

TEST(SimWorkPool, OtherSizesAreNotPooled) {
  WorkPool* pool = WorkPool::create();
  void* first = pool->allocate(96);  // fixes the pooled size
  pool->deallocate(first, 96);
  void* other = pool->allocate(200);
  EXPECT_NE(other, first);
  pool->deallocate(other, 200);
  EXPECT_EQ(pool->allocate(96), first);  // the 200-byte block did not join the free list
  pool->deallocate(first, 96);
  pool->orphan();
}

TEST(SimWorkPool, BlocksReturnedAfterOrphaningAreFreed) {
  WorkPool* pool = WorkPool::create();
  void* live = pool->allocate(64);
  pool->orphan();              // the engine is gone; one block is still out
  pool->deallocate(live, 64);  // frees the block and then the pool itself
  SUCCEED();                   // (a leak or double free shows under ASan/valgrind)
}

// Blocks are carved out of slabs of 64: every one distinct and on a cache line, a freed one
// handed out again first, and a pool orphaned while one block of its second slab is still out
// lives until that block comes back.
TEST(SimWorkPool, BlocksFromSeveralSlabsAreDistinctAlignedAndReused) {
  WorkPool* pool = WorkPool::create();
  std::vector<void*> blocks;
  for (int i = 0; i < 130; ++i) blocks.push_back(pool->allocate(320));
  std::set<void*> distinct(blocks.begin(), blocks.end());
  EXPECT_EQ(distinct.size(), blocks.size());
  for (void* b : blocks) EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0U) << b;
  pool->deallocate(blocks[70], 320);
  EXPECT_EQ(pool->allocate(320), blocks[70]);
  for (void* b : blocks) {
    if (b != blocks[100]) pool->deallocate(b, 320);
  }
  pool->orphan();
  static_cast<char*>(blocks[100])[319] = 1;  // still the pool's memory: no fault, no report
  pool->deallocate(blocks[100], 320);
  SUCCEED();  // (a leak or double free shows under ASan/valgrind)
}

TEST(SimWorkPool, AWorkKeptAfterItsRunIsStillComplete) {
  std::optional<Work> kept;
  ranks::sim::Options options;
  options.world_size = 2;
  auto report = ranks::sim::run(options, [&] {
    auto t = Tensor::of<int32_t>({get_rank() + 1});
    Work work = all_reduce_async(t);
    work.wait();
    EXPECT_EQ(t.item<int32_t>(), 3);
    if (get_rank() == 0) kept = work;
  });
  ASSERT_EQ(report.outcome, ranks::sim::Outcome::Ok) << report.to_text();
  ASSERT_TRUE(kept.has_value());
  EXPECT_TRUE(kept->is_completed());
  EXPECT_NO_THROW(kept->wait());
  kept.reset();  // its record goes back to the orphaned pool, which then frees itself
}

}  // namespace
}  // namespace ranks::testing
