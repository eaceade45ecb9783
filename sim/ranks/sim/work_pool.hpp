#pragma once
// Recycled memory for the simulator's per-op records. Every rank-operation makes one SimWork
// (shared with the Work handle it returns); through malloc that is the largest single cost of a
// simulated barrier, and a free list of same-sized blocks, reused last-in first-out, also hands
// back memory that is still in cache.
//
// Single-threaded, like the rest of the simulator. A Work handle may outlive its run (a program
// can keep one), so the engine does not delete its pool: it orphans it, and the pool deletes
// itself once the last block has come back.

#include <cstddef>
#include <new>
#include <vector>

namespace ranks::sim::detail {

class WorkPool {
 public:
  static WorkPool* create() { return new WorkPool(); }
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void* allocate(size_t bytes) {
    ++live_;
    if (bytes == block_bytes_ && !free_.empty()) {
      void* block = free_.back();
      free_.pop_back();
      return block;
    }
    if (block_bytes_ == 0) block_bytes_ = bytes;  // one block size: the first one asked for
    return ::operator new(bytes, kLine);
  }

  void deallocate(void* block, size_t bytes) noexcept {
    --live_;
    if (orphaned_ || bytes != block_bytes_) {
      ::operator delete(block, bytes, kLine);
    } else {
      try {
        free_.push_back(block);
      } catch (...) {
        ::operator delete(block, bytes, kLine);
      }
    }
    if (orphaned_ && live_ == 0) delete this;
  }

  // The engine is done with the pool: frees what it can now and the rest as it comes back.
  void orphan() noexcept {
    orphaned_ = true;
    for (void* block : free_) ::operator delete(block, block_bytes_, kLine);
    free_.clear();
    if (live_ == 0) delete this;
  }

 private:
  WorkPool() = default;
  ~WorkPool() = default;

  // Blocks start on a cache line: a SimWork then spans the fewest lines (6, not 7), and each op
  // writes all of its work's lines.
  static constexpr std::align_val_t kLine{64};

  std::vector<void*> free_;
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
