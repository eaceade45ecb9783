#pragma once
// Cache-line-aligned allocation for the small objects a simulated rank keeps (its group's
// GroupImpl, its SimComm, its small tensors): each starts on a line of its own so that a
// rank-operation touches as few lines as it can. glibc's aligned allocation (what operator new
// with std::align_val_t calls) costs ~550 instructions for 64 bytes, skips the thread cache, and
// leaves split-off fragments that a later large malloc walks; here one ordinary malloc of 64
// bytes more, aligned by hand, costs about a fifth of that. With the aligned allocator a
// 4,096-rank program spends a fifth of its instructions there (measured: reports/simulator.md).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace ranks::detail {

inline constexpr size_t kCacheLine = 64;

// bytes starting on a cache line; free with free_line_aligned. Throws std::bad_alloc.
inline void* allocate_line_aligned(size_t bytes) {
  // malloc aligns to 16, so the aligned start lies 16 to 64 bytes into the block: always room
  // for the block's own address just below it.
  void* block = std::malloc(bytes + kCacheLine);
  if (block == nullptr) throw std::bad_alloc();
  auto start = (reinterpret_cast<uintptr_t>(block) + kCacheLine) & ~uintptr_t{kCacheLine - 1};
  reinterpret_cast<void**>(start)[-1] = block;
  return reinterpret_cast<void*>(start);
}

inline void free_line_aligned(void* p) noexcept {
  if (p != nullptr) std::free(static_cast<void**>(p)[-1]);
}

// The allocator for std::allocate_shared of line-aligned objects (the reference count, then the
// object on the next line).
template <class T>
struct LineAligned {
  using value_type = T;
  LineAligned() = default;
  template <class U>
  LineAligned(const LineAligned<U>&) {}  // NOLINT: allocators convert implicitly
  T* allocate(size_t n) { return static_cast<T*>(allocate_line_aligned(n * sizeof(T))); }
  void deallocate(T* p, size_t) noexcept { free_line_aligned(p); }
  template <class U>
  bool operator==(const LineAligned<U>&) const {
    return true;
  }
};

// For a class whose objects are made with new (a unique_ptr's): its own operator new and delete.
struct LineAlignedNew {
  static void* operator new(size_t bytes) { return allocate_line_aligned(bytes); }
  static void* operator new(size_t bytes, std::align_val_t alignment) {
    // Only for types aligned to a line at most (alignas(64)); a wider one needs another scheme.
    if (static_cast<size_t>(alignment) > kCacheLine) throw std::bad_alloc();
    return allocate_line_aligned(bytes);
  }
  static void operator delete(void* p) noexcept { free_line_aligned(p); }
  static void operator delete(void* p, std::align_val_t) noexcept { free_line_aligned(p); }
};

}  // namespace ranks::detail
