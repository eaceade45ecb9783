#pragma once
// A client of torch's own TCPStore server: the store that torchrun's agent hosts for its workers
// (TORCHELASTIC_USE_AGENT_STORE=True), at MASTER_ADDR:MASTER_PORT, where rank 0 cannot host one
// of its own. It speaks the wire protocol of the servers of torch 2.4 and newer (both the libuv
// server, their default, and the older poll loop): each connection opens with a validation query
// (its type byte and a 32-bit magic number, unanswered); then a query is one type byte and its
// arguments (a string or byte vector as a 64-bit length and its
// bytes; integers in the host's byte order, as torch writes them); keys get torch's own "/"
// prefix, so that they are the keys a torch worker would use. The server has no access control
// and no timeouts of its own: every call here has a deadline, and a connection that missed one
// is dropped, because the server would still answer the abandoned request on it.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ranks/store.hpp"
#include "ranks/store/deadline.hpp"
#include "ranks/store/fd.hpp"

namespace ranks::store {

class TorchStoreClient final : public Store {
 public:
  // Connects (retrying while nothing listens, until timeout) and checks that the server answers
  // a query of torch 2.x's protocol. Throws Timeout, or RendezvousError naming the protocol
  // when something else listens there.
  TorchStoreClient(std::string host, int port, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  // Every key on the server (torch's workers' and agent's too): the protocol cannot count by
  // prefix.
  int64_t num_keys() override;

  // Every query of torch 2.x's protocol that this client sends.
  enum class Query : uint8_t {
    Validate = 0,
    Set = 1,
    CompareSet = 2,
    Get = 3,
    Add = 4,
    Check = 5,
    Wait = 6,
    NumKeys = 7,
    DeleteKey = 8,
  };
  // What follows Validate's type byte on every new connection; the server takes nothing else
  // from a connection before it.
  static constexpr uint32_t kValidationMagic = 0x3C85F7CE;

 private:
  class Exchange;
  Fd acquire(Clock::time_point deadline);
  void release(Fd connection);
  // Waits until every key is set or deadline passes; false at the deadline (the connection is
  // then dropped).
  bool wait_on(Fd& connection, const std::vector<std::string>& keys, Clock::time_point deadline);
  // Those of keys that are not set (for a timeout's message).
  std::vector<std::string> missing(const std::vector<std::string>& keys);

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds timeout_;
  const std::string name_;
  std::mutex mutex_;
  std::vector<Fd> idle_;
};

}  // namespace ranks::store
