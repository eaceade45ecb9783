#include "ranks/store/hash_store.hpp"

#include "ranks/errors.hpp"
#include "ranks/store/deadline.hpp"
#include "ranks/store/messages.hpp"

namespace ranks {

namespace {
constexpr const char* kName = "hash store";
}  // namespace

HashStore::HashStore(std::chrono::milliseconds timeout) : timeout_(timeout) {
  store::check_wait_timeout(kName, timeout);
}

void HashStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  {
    std::lock_guard lock(mutex_);
    map_.set(key, value);
  }
  changed_.notify_all();
}

std::vector<uint8_t> HashStore::get(const std::string& key) {
  std::unique_lock lock(mutex_);
  wait_locked(lock, {key}, timeout_);
  return *map_.find(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t sum = 0;
  {
    std::lock_guard lock(mutex_);
    sum = map_.add(kName, key, delta);
  }
  changed_.notify_all();
  return sum;
}

std::vector<uint8_t> HashStore::compare_set(const std::string& key,
                                            const std::vector<uint8_t>& expected,
                                            const std::vector<uint8_t>& desired) {
  std::vector<uint8_t> current;
  {
    std::lock_guard lock(mutex_);
    current = map_.compare_set(key, expected, desired);
  }
  changed_.notify_all();
  return current;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  return map_.missing(keys).empty();
}

void HashStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  store::check_wait_timeout(kName, timeout);
  std::unique_lock lock(mutex_);
  wait_locked(lock, keys, timeout);
}

bool HashStore::delete_key(const std::string& key) {
  std::lock_guard lock(mutex_);
  return map_.erase(key);
}

int64_t HashStore::num_keys() {
  std::lock_guard lock(mutex_);
  return map_.size();
}

int64_t HashStore::num_keys_with_prefix(const std::string& prefix) {
  std::lock_guard lock(mutex_);
  return map_.count_prefix(prefix);
}

void HashStore::wait_locked(std::unique_lock<std::mutex>& lock,
                            const std::vector<std::string>& keys,
                            std::chrono::milliseconds timeout) {
  const auto deadline = store::deadline_after(timeout);
  const auto all_present = [&] { return map_.missing(keys).empty(); };
  if (!changed_.wait_until(lock, deadline, all_present)) {
    throw Timeout(store::timeout_message(kName, timeout, map_.missing(keys)));
  }
}

}  // namespace ranks
