#pragma once
// The meaning of every store operation on an in-memory map. HashStore, FileStore (the map it
// replays from its log) and the TCP server all use it, so the stores agree on add, compare_set
// and key counting to the byte.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ranks::store {

using Bytes = std::vector<uint8_t>;

// add() keeps counters as decimal text, as torch does, so get() of a counter reads "42".
Bytes encode_counter(int64_t value);

class KvMap {
 public:
  // What compare_set does: the value the caller gets back, and whether desired is stored.
  struct CompareSet {
    Bytes current;
    bool store_desired = false;
  };

  void set(const std::string& key, Bytes value) { map_[key] = std::move(value); }
  bool erase(const std::string& key) { return map_.erase(key) > 0; }
  const Bytes* find(const std::string& key) const;
  bool contains(const std::string& key) const { return map_.count(key) > 0; }
  // The keys of `keys` that are not here, in the caller's order.
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  int64_t size() const { return static_cast<int64_t>(map_.size()); }
  int64_t count_prefix(std::string_view prefix) const;

  // The counter's value after adding delta (a missing key counts from 0). Throws
  // InvalidArgument when the key holds something else or the sum overflows; the message starts
  // with "<store>: " unless store is empty (the TCP server's client adds its own).
  int64_t counter_after_add(std::string_view store, const std::string& key, int64_t delta) const;
  int64_t add(std::string_view store, const std::string& key, int64_t delta);

  // torch's rule: a missing key with an empty `expected`, or a present key equal to `expected`,
  // takes `desired`; the caller gets the value the key then holds. A missing key with a
  // non-empty `expected` is left missing and the caller gets `expected` back (torch does the
  // same), so "result == desired" still tells a caller whether the swap happened.
  CompareSet compare_set_outcome(const std::string& key, const Bytes& expected,
                                 const Bytes& desired) const;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired);

 private:
  std::unordered_map<std::string, Bytes> map_;
};

}  // namespace ranks::store
