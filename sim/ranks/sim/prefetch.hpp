#pragma once
// Software prefetch of what a rank is about to touch: with thousands of ranks their stacks and
// records no longer fit in cache, and the scheduler knows who runs next.

#include <cstddef>

#include "ranks/detail/line_aligned.hpp"

namespace ranks::sim::detail {

inline constexpr size_t kPrefetchLine = ranks::detail::kCacheLine;

// Starts loading the lines of [begin, begin + bytes) into the first-level cache. A prefetch
// never faults, so the range may be stale (freed, unmapped).
inline void prefetch_range(const void* begin, size_t bytes) noexcept {
  const char* p = static_cast<const char*>(begin);
  for (size_t offset = 0; offset < bytes; offset += kPrefetchLine)
    __builtin_prefetch(p + offset, 1);
  // GCC counts __builtin_prefetch as free of side effects: a function that does nothing but
  // prefetch is "const" to it, and a call to it is dead code that GCC deletes without a warning.
  // An empty volatile asm is a side effect the compiler must keep.
  asm volatile("");
}

}  // namespace ranks::sim::detail
