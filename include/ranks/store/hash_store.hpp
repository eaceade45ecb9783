#pragma once
// A store inside one process: threads (and the simulator's ranks) rendezvous through a map.

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "ranks/store.hpp"
#include "ranks/store/defaults.hpp"
#include "ranks/store/key_count.hpp"
#include "ranks/store/kv_map.hpp"

namespace ranks {

class HashStore final : public Store, public KeyCountByPrefix {
 public:
  // get() waits at most `timeout` for its key.
  explicit HashStore(std::chrono::milliseconds timeout = kDefaultStoreTimeout);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  int64_t num_keys_with_prefix(const std::string& prefix) override;

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // Waits (with mutex_ held through `lock`) until every key is present; throws Timeout.
  void wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                   std::chrono::milliseconds timeout);

  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  store::KvMap map_;
};

}  // namespace ranks
