#pragma once
// An optional ability of a store, beside ranks::Store (whose interface is fixed): counting only
// the keys under a prefix. PrefixStore uses it so that num_keys() counts its own namespace.

#include <cstdint>
#include <string>

namespace ranks {

class KeyCountByPrefix {
 public:
  virtual ~KeyCountByPrefix() = default;
  // The number of keys that start with prefix (every key for an empty prefix).
  virtual int64_t num_keys_with_prefix(const std::string& prefix) = 0;
};

}  // namespace ranks
