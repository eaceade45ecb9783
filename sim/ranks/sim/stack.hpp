#pragma once
// Fiber stacks carved out of one reserved mapping: one mmap for all ranks keeps 100,000 ranks
// under the kernel's map-count limit, and untouched stack pages cost no memory.

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <vector>

namespace ranks::sim::detail {

class StackPool {
 public:
  StackPool(size_t count, size_t stack_bytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  boost::context::stack_context allocate();
  // Starts loading the top of the slot handed out `ahead` allocations from now, where Boost will
  // write that fiber's control block: the pages were populated long before, so their lines are
  // no longer cached, and a world's fibers are made one after another.
  void prefetch_top(size_t ahead) const noexcept;
  void deallocate(boost::context::stack_context&) noexcept;

  // A stack that overflowed: slots are handed out in rank order, so slot r is rank r's. Without
  // a guard page an overflow writes on into the stack below it, the next rank's, which crashes
  // later and would be blamed. The lowest pages of a stack (above its guard page, where it has
  // one) are never written by a rank that stays within its stack (16 KiB, or a sixteenth of a
  // smaller stack: a rank that came that close counts too): the first slot that wrote one, or whose guard page holds `fault` (a
  // fault's address; may be null). Async-signal-safe. -1: none.
  long overflowed(const void* fault) const noexcept;
  // The stack size a rank was given (Options::stack_bytes, or the default), whole pages.
  size_t size_bytes() const noexcept { return size_bytes_; }

 private:
  void populate_tops(size_t page);
  char* top_of(size_t slot) const;

  char* base_ = nullptr;
  size_t size_bytes_;
  size_t stack_bytes_;  // a slot: the size, and a page of skew at scale
  size_t guard_bytes_ = 0;  // a page per stack at its bottom, up to max_guarded_stacks
  size_t count_;
  size_t mapped_bytes_;
  std::vector<size_t> free_;  // slots handed back
  size_t next_ = 0;           // slots never handed out start here
};

// The StackAllocator concept Boost.Fiber expects, over a pool.
struct PooledStack {
  StackPool* pool;
  boost::context::stack_context allocate() { return pool->allocate(); }
  void deallocate(boost::context::stack_context& sctx) noexcept { pool->deallocate(sctx); }
};

}  // namespace ranks::sim::detail
