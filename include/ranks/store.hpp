#pragma once
// Key-value rendezvous between ranks. Every call has a deadline.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ranks {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  virtual std::vector<uint8_t> get(const std::string& key) = 0;  // waits for the key
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual std::vector<uint8_t> compare_set(const std::string& key,
                                           const std::vector<uint8_t>& expected,
                                           const std::vector<uint8_t>& desired) = 0;
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;
};

}  // namespace ranks
