#pragma once
// Defaults shared by every store, so that a file store and a TCP store reject the same things.

#include <chrono>
#include <cstddef>

namespace ranks {

// Derived from the library's one timeout policy (30 minutes, like a process group's).
inline constexpr std::chrono::milliseconds kDefaultStoreTimeout = std::chrono::minutes(30);

// Keys are names, not data: a bound keeps a hostile or buggy peer from making a server allocate
// without limit. Values carry addresses, ids and small objects; big data belongs elsewhere.
inline constexpr std::size_t kDefaultMaxKeyBytes = 4 * 1024;
inline constexpr std::size_t kDefaultMaxValueBytes = 64 * 1024 * 1024;
inline constexpr std::size_t kDefaultMaxStoredBytes = std::size_t{1} << 30;

}  // namespace ranks
