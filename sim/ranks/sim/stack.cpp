#include "ranks/sim/stack.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <array>
#include <new>

#include "ranks/errors.hpp"
#include "ranks/sim/fiber_end.hpp"
#include "ranks/sim/prefetch.hpp"

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

// Where in its page a stack's top lies. Between two ops a rank's stack touches ~19 lines at a
// fixed distance below its top (Boost's control block, then ~1 KiB of frames); with every top at
// the same page offset those lines of all ranks compete for the same quarter of a cache's sets
// (which sets a line goes to is given by its offset within the page, in L1 and in every level
// the kernel's random page frames feed). Four offsets spread them over the whole page: a
// 512-rank all_reduce runs 31 % faster than with one (reports/simulator.md). Each leaves the
// control block and the frames of a rank blocked in an op (~1.9 KiB) in the top page: at 2,240,
// a quarter of a 4,096-rank run's stacks would write a second page (page faults counted).
constexpr std::array<size_t, 4> top_offsets = {0, 576, 1152, 1728};

// The pages below its top that every rank writes: the top one, and the next only where the
// rank's fiber ends on its own stack (fiber_end.hpp: Boost's terminate() goes 5 KiB deep).
constexpr size_t hot_pages = FiberEnd::enabled() ? 1 : 2;

// What making a fiber writes below its stack's top: Boost's control block (the context, with
// the rank's function) on a 256-byte boundary, the Boost.Context record under it, and the
// first frame.
constexpr size_t top_bytes_written = 768;

// The pages at the bottom of a stack that a rank within its stack never writes (at most a
// sixteenth of it): a frame of a large local array writes sparsely, but some word at least every
// few pages.
constexpr size_t low_pages = 4;
}  // namespace

StackPool::StackPool(size_t count, size_t stack_bytes) : count_(count) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_bytes_ = (stack_bytes + page - 1) / page * page;
  stack_bytes_ = size_bytes_;
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
    guard_bytes_ = page;
  }
  populate_tops(page);
}

void StackPool::populate_tops(size_t page) {
#ifdef MADV_POPULATE_WRITE
  // Populating the pages every rank writes here, one call per stack, spares each page its own
  // fault: 3-4 % of a 4,096-rank run (reports/simulator.md). A kernel older than 5.14
  // refuses the call; the pages then fault in as before.
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
  sctx.sp = top_of(slot);  // stacks grow down from the top
  sctx.size = static_cast<size_t>(static_cast<char*>(sctx.sp) - (base_ + slot * stack_bytes_));
  return sctx;
}

char* StackPool::top_of(size_t slot) const {
  const size_t offset = count_ > max_guarded_stacks ? top_offsets[slot % top_offsets.size()] : 0;
  return base_ + (slot + 1) * stack_bytes_ - offset;
}

void StackPool::prefetch_top(size_t ahead) const noexcept {
  if (!free_.empty() || next_ + ahead >= count_) return;
  prefetch_range(top_of(next_ + ahead) - top_bytes_written, top_bytes_written);
}

long StackPool::overflowed(const void* fault) const noexcept {
  const auto* at = static_cast<const char*>(fault);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (guard_bytes_ > 0 && at >= base_ && at < base_ + mapped_bytes_) {
    const auto slot = static_cast<size_t>(at - base_) / stack_bytes_;
    if (static_cast<size_t>(at - base_) - slot * stack_bytes_ < guard_bytes_) {
      return static_cast<long>(slot);
    }
  }
  // Only pages a rank has touched are mapped (mincore says which, for the whole reservation in a
  // few calls): a stack whose lowest pages were never touched did not overflow, and is not read.
  const size_t pages_per_slot = stack_bytes_ / page;
  // At most a sixteenth of the stack: a rank of a tiny stack may use all but its last pages.
  const size_t low = std::min(low_pages, (pages_per_slot - guard_bytes_ / page) / 16);
  static unsigned char resident[4096];  // static: this also runs in a signal handler
  const size_t slots_per_call = std::max<size_t>(1, sizeof resident / pages_per_slot);
  for (size_t first = 0; low > 0 && first < count_; first += slots_per_call) {
    const size_t slots = std::min(slots_per_call, count_ - first);
    if (::mincore(base_ + first * stack_bytes_, slots * stack_bytes_, resident) != 0) return -1;
    for (size_t i = 0; i < slots; ++i) {
      const size_t lowest = i * pages_per_slot + guard_bytes_ / page;
      bool touched = false;
      for (size_t p = lowest; p < lowest + low; ++p) touched = touched || (resident[p] & 1) != 0;
      if (!touched) continue;
      const auto* words = reinterpret_cast<const volatile uint64_t*>(
          base_ + (first + i) * stack_bytes_ + guard_bytes_);
      for (size_t w = 0; w < low * page / sizeof(uint64_t); ++w) {
        if (words[w] != 0) return static_cast<long>(first + i);
      }
    }
  }
  return -1;
}

void StackPool::deallocate(boost::context::stack_context& sctx) noexcept {
  // The top lies within the slot's last page (top_offsets), so rounding up finds the slot's end.
  const auto top = static_cast<size_t>(static_cast<char*>(sctx.sp) - base_);
  free_.push_back((top + stack_bytes_ - 1) / stack_bytes_ - 1);
}

}  // namespace ranks::sim::detail
