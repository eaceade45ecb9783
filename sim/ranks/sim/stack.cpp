#include "ranks/sim/stack.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "ranks/errors.hpp"

namespace ranks::sim::detail {

namespace {
// Guard pages split the mapping into two kernel maps per stack and cost a system call each
// (about 6 us per rank here): worth it for the small runs tests make, not at scale.
constexpr size_t max_guarded_stacks = 64;

// Slots a power-of-two apart would put every stack's top, where all of a rank's hot frames are,
// in the same few cache sets: with 256 KiB stacks only 8 ranks' tops fit an 8-way cache level at
// once, whatever its size. One page more per slot gives consecutive stacks' top pages different
// page colours, so the tops spread over the cache, and each top stays within one page (a skew of
// part of a page made tops straddle two, costing memory and TLB entries). Guarded stacks keep the
// plain size: a world of 64 ranks fits in any cache.
constexpr size_t slot_skew = 4096;

constexpr size_t hot_pages = 2;
}  // namespace

StackPool::StackPool(size_t count, size_t stack_bytes) : count_(count) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
  if (count_ > max_guarded_stacks) stack_bytes_ += slot_skew;
  mapped_bytes_ = stack_bytes_ * count_;
  void* base = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    throw Error(fmt::format("sim: cannot reserve {} stacks of {} KiB ({} MiB of address space)",
                            count_, stack_bytes_ / 1024, mapped_bytes_ >> 20));
  }
  base_ = static_cast<char*>(base);
  free_.reserve(count_);  // every stack comes back at the end: no regrowth then
  if (count_ <= max_guarded_stacks) {
    // A rank that overflows its stack faults here instead of corrupting its neighbour.
    for (size_t i = 0; i < count_; ++i) mprotect(base_ + i * stack_bytes_, page, PROT_NONE);
  }
  populate_tops(page);
}

void StackPool::populate_tops(size_t page) {
#ifdef MADV_POPULATE_WRITE
  // Every rank writes the top two pages of its stack: Boost's control block and the hot frames
  // in the first, and Boost's terminate() in the second (its spinlock's 5 KiB frame). Populating
  // them here, one call per stack, spares each page its own fault: 3-4 % of a 4,096-rank run
  // (reports/simulator.md, session 14). A kernel older than 5.14 refuses the call; the pages then
  // fault in as before.
  const size_t bytes = std::min(hot_pages * page, stack_bytes_ - page);
  for (size_t i = 0; i < count_; ++i) {
    if (madvise(base_ + (i + 1) * stack_bytes_ - bytes, bytes, MADV_POPULATE_WRITE) != 0) return;
  }
#else
  (void)page;
#endif
}

StackPool::~StackPool() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
}

boost::context::stack_context StackPool::allocate() {
  size_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else if (next_ < count_) {
    slot = next_++;
  } else {
    throw std::bad_alloc();
  }
  boost::context::stack_context sctx;
  sctx.size = stack_bytes_;
  sctx.sp = base_ + (slot + 1) * stack_bytes_;  // stacks grow down from the top of the slot
  return sctx;
}

void StackPool::deallocate(boost::context::stack_context& sctx) noexcept {
  char* top = static_cast<char*>(sctx.sp);
  free_.push_back(static_cast<size_t>(top - base_) / stack_bytes_ - 1);
}

}  // namespace ranks::sim::detail
