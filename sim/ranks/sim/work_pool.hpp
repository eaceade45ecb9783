#pragma once
// Recycled memory for the simulator's per-op records. Every rank-operation makes one SimWork
// (shared with the Work handle it returns); through malloc that is the largest single cost of a
// simulated barrier, and a free list of same-sized blocks, reused last-in first-out, also hands
// back memory that is still in cache.
//
// Single-threaded, like the rest of the simulator. A Work handle may outlive its run (a program
// can keep one), so the engine does not delete its pool: it orphans it, and the pool deletes
// itself (and the slabs still in use) once the last block has come back.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <new>
#include <vector>

namespace ranks::sim::detail {

class WorkPool {
 public:
  static WorkPool* create() { return new WorkPool(); }
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void* allocate(size_t bytes) {
    if (block_bytes_ == 0) block_bytes_ = bytes;  // one block size: the first one asked for
    void* block;
    if (bytes != block_bytes_) {
      block = ::operator new(bytes, kLine);
    } else if (!free_.empty()) {
      block = free_.back();
      free_.pop_back();
    } else {
      if (carved_ == kSlabBlocks) add_slab();
      block = slabs_.back() + block_bytes_ * carved_++;
    }
    ++live_;
    return block;
  }

  void deallocate(void* block, size_t bytes) noexcept {
    --live_;
    if (bytes != block_bytes_) {
      ::operator delete(block, bytes, kLine);
    } else if (!orphaned_) {
      free_.push_back(block);  // never reallocates (add_slab reserved room)
    }
    if (orphaned_ && live_ == 0) delete this;
  }

  // The engine is done with the pool: frees the slabs whose blocks have all come back now, the
  // rest with the pool once the last kept Work lets go of its block.
  void orphan() noexcept {
    orphaned_ = true;
    if (live_ == 0) {
      delete this;
      return;
    }
    std::sort(free_.begin(), free_.end(), std::less<>());
    std::vector<char*> kept;
    for (char* slab : slabs_) {
      const size_t carved = slab == slabs_.back() ? carved_ : kSlabBlocks;
      auto first =
          std::lower_bound(free_.begin(), free_.end(), static_cast<void*>(slab), std::less<>());
      auto last = std::lower_bound(
          first, free_.end(), static_cast<void*>(slab + kSlabBlocks * block_bytes_), std::less<>());
      if (static_cast<size_t>(last - first) == carved) {
        ::operator delete(slab, kLine);
      } else {
        kept.push_back(slab);
      }
    }
    slabs_.swap(kept);
    free_.clear();
    free_.shrink_to_fit();
  }

 private:
  WorkPool() = default;
  ~WorkPool() {
    for (char* slab : slabs_) ::operator delete(slab, kLine);
  }

  // Blocks start on a cache line: a SimWork then spans the fewest lines (5), and each op
  // writes all of its work's lines.
  static constexpr std::align_val_t kLine{64};
  static constexpr size_t kSlabBlocks = 64;

  // Blocks come in slabs: one aligned allocation (~600 instructions in glibc, which splits off
  // and frees the slack around it) per 64 blocks instead of per block, where the first op of
  // every rank would make one. The free list keeps room for every block carved, so that giving one
  // back never allocates.
  void add_slab() {
    char* slab = static_cast<char*>(::operator new(kSlabBlocks* block_bytes_, kLine));
    try {
      slabs_.push_back(slab);
      free_.reserve(slabs_.size() * kSlabBlocks);
    } catch (...) {
      if (!slabs_.empty() && slabs_.back() == slab) slabs_.pop_back();
      ::operator delete(slab, kLine);
      throw;
    }
    carved_ = 0;
  }

  std::vector<void*> free_;
  std::vector<char*> slabs_;
  size_t carved_ = kSlabBlocks;  // blocks handed out of the newest slab
  size_t block_bytes_ = 0;
  size_t live_ = 0;
  bool orphaned_ = false;
};

// A std::allocator over a WorkPool, for std::allocate_shared (which allocates the object and its
// reference counts as one block of a type of its own, hence the rebinding constructor).
template <class T>
struct PoolAllocator {
  using value_type = T;
  WorkPool* pool;

  explicit PoolAllocator(WorkPool* p) noexcept : pool(p) {}
  template <class U>
  PoolAllocator(const PoolAllocator<U>& other) noexcept : pool(other.pool) {}  // NOLINT

  T* allocate(size_t n) { return static_cast<T*>(pool->allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool->deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>& other) const noexcept {
    return pool == other.pool;
  }
};

}  // namespace ranks::sim::detail
