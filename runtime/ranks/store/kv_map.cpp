#include "ranks/store/kv_map.hpp"

#include <fmt/format.h>

#include <charconv>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"

namespace ranks::store {

namespace {
std::string prefix(std::string_view store) {
  return store.empty() ? std::string() : fmt::format("{}: ", store);
}
}  // namespace

Bytes encode_counter(int64_t value) {
  const std::string text = std::to_string(value);
  return Bytes(text.begin(), text.end());
}

const Bytes* KvMap::find(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

std::vector<std::string> KvMap::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    if (!contains(key)) out.push_back(key);
  }
  return out;
}

int64_t KvMap::count_prefix(std::string_view prefix) const {
  if (prefix.empty()) return size();
  int64_t n = 0;
  for (const auto& [key, value] : map_) {
    if (std::string_view(key).substr(0, prefix.size()) == prefix) ++n;
  }
  return n;
}

int64_t KvMap::counter_after_add(std::string_view store, const std::string& key,
                                 int64_t delta) const {
  int64_t current = 0;
  if (const Bytes* value = find(key)) {
    const auto* begin = reinterpret_cast<const char*>(value->data());
    const auto* end = begin + value->size();
    auto [stop, error] = std::from_chars(begin, end, current);
    if (value->empty() || error != std::errc() || stop != end) {
      throw InvalidArgument(fmt::format(
          "{}add({}, {}): the key holds {} that {} not a decimal 64-bit integer; add() only "
          "works on keys that add() created (or that were set to decimal text)",
          prefix(store), quote_key(key), delta, describe_size(value->size()),
          value->size() == 1 ? "is" : "are"));
    }
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum)) {
    throw InvalidArgument(
        fmt::format("{}add({}, {}): the counter holds {} and the sum would "
                    "overflow a 64-bit integer",
                    prefix(store), quote_key(key), delta, current));
  }
  return sum;
}

int64_t KvMap::add(std::string_view store, const std::string& key, int64_t delta) {
  const int64_t sum = counter_after_add(store, key, delta);
  set(key, encode_counter(sum));
  return sum;
}

KvMap::CompareSet KvMap::compare_set_outcome(const std::string& key, const Bytes& expected,
                                             const Bytes& desired) const {
  const Bytes* current = find(key);
  if ((current == nullptr && expected.empty()) || (current != nullptr && *current == expected)) {
    return {desired, true};
  }
  if (current == nullptr) return {expected, false};
  return {*current, false};
}

Bytes KvMap::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  CompareSet outcome = compare_set_outcome(key, expected, desired);
  if (outcome.store_desired) set(key, desired);
  return std::move(outcome.current);
}

}  // namespace ranks::store
