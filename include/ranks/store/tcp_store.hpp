#pragma once
// A store served over TCP: one server (hosted by rank 0 or by the launcher) and a client in
// every rank. Waits are parked on the server, every call has a deadline, and clients connect
// with retries while the server comes up. The protocol is in store/wire.hpp.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ranks/store.hpp"
#include "ranks/store/key_count.hpp"
#include "ranks/store/tcp_store_options.hpp"
#include "ranks/store/tcp_store_server.hpp"

namespace ranks {

namespace store {
class ClientConnection;
namespace wire {
struct Request;
struct Reply;
}  // namespace wire
}  // namespace store

class TCPStore final : public Store, public KeyCountByPrefix {
 public:
  // torch's form. With is_server, this store also hosts the server (port 0: a free port, see
  // port()). Connects before it returns; throws Timeout when the server is not reachable
  // within timeout and RendezvousError when it turns this client away (token).
  TCPStore(std::string host, int port, int world_size, bool is_server,
           std::chrono::milliseconds timeout = kDefaultStoreTimeout, std::string token = {});
  explicit TCPStore(TCPStoreOptions options);
  ~TCPStore() override;
  TCPStore(const TCPStore&) = delete;
  TCPStore& operator=(const TCPStore&) = delete;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  // Waits on the server up to the store timeout.
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<uint8_t> compare_set(const std::string& key, const std::vector<uint8_t>& expected,
                                   const std::vector<uint8_t>& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  int64_t num_keys_with_prefix(const std::string& prefix) override;

  const std::string& host() const { return options_.host; }
  // The server's port (the one it picked when asked for port 0).
  int port() const { return options_.port; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  // The server this store hosts, or null for a plain client.
  TCPStoreServer* server() const { return server_.get(); }

 private:
  // Sends request on an idle connection (a new one when every connection is busy, so threads
  // sharing this store do not queue behind a parked get) and returns a reply with status Ok;
  // every other outcome becomes the matching ranks error. `wait` is how long the server may
  // park the request (zero for requests that never wait).
  store::wire::Reply call(const store::wire::Request& request, const std::string& what,
                          std::chrono::milliseconds wait);
  std::unique_ptr<store::ClientConnection> acquire(std::chrono::steady_clock::time_point deadline);
  void release(std::unique_ptr<store::ClientConnection> connection);

  TCPStoreOptions options_;
  std::unique_ptr<TCPStoreServer> server_;
  std::string name_;  // "tcp store host:port", the start of every message
  std::mutex mutex_;
  std::vector<std::unique_ptr<store::ClientConnection>> idle_;
  std::atomic<bool> served_{false};  // a connection has been made: the server was up
};

}  // namespace ranks
