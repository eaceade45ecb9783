#pragma once
// A namespace inside another store: key k is stored as "prefix/k". One physical store serves
// many groups or subsystems without their keys colliding.

#include <memory>
#include <string>

#include "ranks/store.hpp"
#include "ranks/store/key_count.hpp"

namespace ranks {

class PrefixStore final : public Store, public KeyCountByPrefix {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  // The keys under this prefix when the inner store can count by prefix (every store in this
  // library can: it implements KeyCountByPrefix); otherwise the inner store's total, as torch
  // does, because the Store interface has no way to list keys.
  int64_t num_keys() override;
  int64_t num_keys_with_prefix(const std::string& prefix) override;

  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& inner() const { return store_; }

 private:
  std::string full(const std::string& key) const { return prefix_ + "/" + key; }

  const std::string prefix_;
  const std::shared_ptr<Store> store_;
};

}  // namespace ranks
