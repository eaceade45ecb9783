#include "ranks/store/prefix_store.hpp"

#include <fmt/format.h>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"

namespace ranks {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : prefix_(std::move(prefix)), store_(std::move(store)) {
  if (!store_) {
    throw InvalidArgument(
        fmt::format("prefix store {}: the inner store is null; pass the store "
                    "that holds the keys",
                    store::quote_key(prefix_)));
  }
}

void PrefixStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  store_->set(full(key), value);
}

std::vector<uint8_t> PrefixStore::get(const std::string& key) { return store_->get(full(key)); }

int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return store_->add(full(key), delta);
}

std::vector<uint8_t> PrefixStore::compare_set(const std::string& key,
                                              const std::vector<uint8_t>& expected,
                                              const std::vector<uint8_t>& desired) {
  return store_->compare_set(full(key), expected, desired);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> full_keys;
  full_keys.reserve(keys.size());
  for (const std::string& key : keys) full_keys.push_back(full(key));
  return store_->check(full_keys);
}

void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::vector<std::string> full_keys;
  full_keys.reserve(keys.size());
  for (const std::string& key : keys) full_keys.push_back(full(key));
  store_->wait(full_keys, timeout);
}

bool PrefixStore::delete_key(const std::string& key) { return store_->delete_key(full(key)); }

int64_t PrefixStore::num_keys() { return num_keys_with_prefix(""); }

int64_t PrefixStore::num_keys_with_prefix(const std::string& prefix) {
  if (auto* counter = dynamic_cast<KeyCountByPrefix*>(store_.get())) {
    return counter->num_keys_with_prefix(full(prefix));
  }
  return store_->num_keys();
}

}  // namespace ranks
