#include "ranks/store/tcp_store_server.hpp"

#include "ranks/store/tcp_server_loop.hpp"

namespace ranks {

TCPStoreServer::TCPStoreServer(const TCPStoreOptions& options)
    : loop_(std::make_unique<store::ServerLoop>(options)),
      thread_([loop = loop_.get()] { loop->run(); }) {}

TCPStoreServer::~TCPStoreServer() {
  loop_->stop();
  thread_.join();
}

int TCPStoreServer::port() const { return loop_->port(); }
int TCPStoreServer::num_clients() const { return loop_->num_clients(); }
int TCPStoreServer::parked_requests() const { return loop_->parked_requests(); }

}  // namespace ranks
