#pragma once
// The server half of TCPStore, on its own for hosts that serve without being a client (the
// launcher). TCPStore with is_server = true owns one of these.

#include <memory>
#include <thread>

#include "ranks/store/tcp_store_options.hpp"

namespace ranks {

namespace store {
class ServerLoop;
}

class TCPStoreServer {
 public:
  // Listens on every interface at options.port (0: a free port) and serves from a background
  // thread. Uses port, world_size, token, the two limits and log; ignores the rest. Throws
  // RendezvousError when the port is taken, InvalidArgument for a bad port or limit.
  explicit TCPStoreServer(const TCPStoreOptions& options);
  // Stops serving: every connection is closed (waiting clients fail at once rather than at
  // their deadline) and the thread is joined.
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  int port() const;
  // Clients that completed the handshake and are still connected.
  int num_clients() const;
  // get/wait requests parked on the server waiting for their keys.
  int parked_requests() const;

 private:
  std::unique_ptr<store::ServerLoop> loop_;
  std::thread thread_;
};

}  // namespace ranks
