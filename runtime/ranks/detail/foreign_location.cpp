#include "ranks/detail/foreign_location.hpp"

#include <bit>
#include <deque>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace ranks::detail {

namespace {

// libstdc++'s std::source_location is one pointer to a record of this layout (what
// __builtin_source_location() returns); the static_asserts and the test in
// tests/foreign_location_test.cpp hold the library to it.
struct LocationRecord {
  const char* file_name;
  const char* function_name;
  unsigned line;
  unsigned column;
};
static_assert(sizeof(std::source_location) == sizeof(const LocationRecord*));
static_assert(std::is_trivially_copyable_v<std::source_location>);

struct Key {
  std::string_view file;
  std::string_view function;
  unsigned line;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& key) const {
    const size_t h = std::hash<std::string_view>{}(key.file) * 31 +
                     std::hash<std::string_view>{}(key.function);
    return h * 1000003 + key.line;
  }
};

struct Interned {
  std::mutex mutex;
  std::unordered_set<std::string> strings;  // node-based: the views into it stay valid
  std::deque<LocationRecord> records;       // never moves what it holds
  std::unordered_map<Key, const LocationRecord*, KeyHash> by_key;

  std::string_view intern(std::string_view text) { return *strings.emplace(text).first; }
};

Interned& interned() {
  static auto* table = new Interned;  // outlives every report that may print a location
  return *table;
}

}  // namespace

std::source_location foreign_location(std::string_view file, std::string_view function,
                                      unsigned line) {
  Interned& table = interned();
  std::lock_guard lock(table.mutex);
  if (auto found = table.by_key.find(Key{file, function, line}); found != table.by_key.end()) {
    return std::bit_cast<std::source_location>(found->second);
  }
  const std::string_view kept_file = table.intern(file);
  const std::string_view kept_function = table.intern(function);
  const LocationRecord* record =
      &table.records.emplace_back(LocationRecord{kept_file.data(), kept_function.data(), line, 0});
  table.by_key.emplace(Key{kept_file, kept_function, line}, record);
  return std::bit_cast<std::source_location>(record);
}

}  // namespace ranks::detail
