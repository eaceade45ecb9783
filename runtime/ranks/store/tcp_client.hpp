#pragma once
// One client connection to a TCP store server: connecting while the server comes up, the
// handshake, and request/reply with a deadline. TCPStore keeps a small pool of these.

#include <chrono>
#include <string>

#include "ranks/store/deadline.hpp"
#include "ranks/store/socket.hpp"
#include "ranks/store/stream_io.hpp"
#include "ranks/store/wire.hpp"

namespace ranks::store {

class ClientConnection {
 public:
  // Connects to host:port and says hello. Refused, unreachable and reset attempts are retried
  // with exponential backoff until deadline, because the server may not be up yet. Throws
  // Timeout when the deadline passes, RendezvousError when the server turns this client away
  // (token, version) or does not speak the protocol, or the host name does not resolve.
  // server_was_up: this client has been served before, so a refused connection means the server
  // has exited (its host rank ended), not that it is still starting: RankFailure at once, where
  // waiting out the deadline kept a rank that outlived rank 0 hanging for the store's timeout.
  ClientConnection(const std::string& host, int port, const std::string& token,
                   Clock::time_point deadline, bool server_was_up = false);

  // Sends request and reads its reply by deadline. Throws ConnectionError.
  wire::Reply call(const wire::Request& request, Clock::time_point deadline);

  bool broken() const { return broken_; }
  std::size_t max_key() const { return max_key_; }
  std::size_t max_value() const { return max_value_; }

 private:
  // One attempt. Returns "" on success, else why it failed in a way worth retrying.
  std::string try_connect(const std::string& token, Clock::time_point deadline);
  std::string handshake(const std::string& token, Clock::time_point deadline);

  const std::string host_;
  const int port_;
  const std::string address_;
  Fd fd_;
  bool broken_ = false;
  bool refused_ = false;  // the last attempt found nothing listening
  std::size_t max_key_ = 0;
  std::size_t max_value_ = 0;
};

}  // namespace ranks::store
