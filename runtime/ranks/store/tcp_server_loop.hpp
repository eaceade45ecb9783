#pragma once
// The TCP store server's event loop: one listening socket and every client connection served
// by poll() on one thread, so requests are atomic without locks. Requests that wait for keys
// are parked (ServerState), never answered by polling the map.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ranks/store/deadline.hpp"
#include "ranks/store/socket.hpp"
#include "ranks/store/tcp_server_state.hpp"
#include "ranks/store/tcp_store_options.hpp"
#include "ranks/store/wire.hpp"

namespace ranks::store {

class ServerLoop {
 public:
  // Binds and listens (port 0: a free port); throws RendezvousError when it cannot.
  explicit ServerLoop(const TCPStoreOptions& options);

  // Serves until stop() is called from another thread.
  void run();
  void stop();

  int port() const { return port_; }
  int num_clients() const { return clients_.load(); }
  int parked_requests() const { return parked_.load(); }

 private:
  struct Connection {
    ConnId id = 0;
    Fd fd;
    std::string peer;
    std::vector<uint8_t> in;
    std::vector<uint8_t> out;
    std::size_t out_sent = 0;
    bool hello_done = false;
    Clock::time_point hello_by{};  // closed if it has not said hello by then
    Clock::time_point request_by{};  // closed if the request begun in `in` is not whole by then
    bool counted = false;  // in clients_
    // After a fatal error the reply is flushed, input is drained until the peer closes (so the
    // peer reads the reply instead of a reset) and then the connection is closed.
    bool closing = false;
    bool write_shut = false;
    bool dead = false;
    Clock::time_point close_by{};
  };

  void serve_once();
  // Connections past their handshake deadline, or stalled in the middle of a request, are
  // dropped.
  void drop_silent(Clock::time_point now);
  // Whether c is still in its handshake (and not on its way out).
  static bool handshaking(const Connection& c) { return !c.hello_done && !c.closing && !c.dead; }
  void accept_all();
  void read_from(Connection& c);
  void process(Connection& c);
  void hello(Connection& c, const wire::Request& request);
  void write_to(Connection& c);
  void deliver(std::vector<Answer>& answers);
  void queue(Connection& c, wire::Op op, const wire::Reply& reply);
  // Answers c with a protocol or rendezvous error, logs why, and closes c after the reply.
  void reject(Connection& c, wire::ErrorKind kind, const std::string& reason);
  // Closes c at the end of this round; reason (when not empty) goes to the log.
  void drop(Connection& c, const std::string& reason);
  void reap();
  // Whether c is in the middle of a request whose bytes have not all arrived.
  bool mid_request(const Connection& c) const {
    return c.hello_done && !c.closing && !c.dead && !c.in.empty() && !backlogged(c);
  }
  // The bytes of unfinished requests over every connection.
  std::size_t buffered_bytes() const;
  // The live connection with the most bytes of requests still arriving (`reading` on a tie).
  Connection& largest_buffer(Connection& reading);
  // Whether c has more unsent replies than one frame: it is not reading them.
  bool backlogged(const Connection& c) const;
  void uncount(Connection& c);
  int poll_timeout_ms() const;
  // To the log, at most once per log_interval: later messages within it are counted and the
  // latest kept, and go out with the next one that may (or when the loop ends).
  void log(const std::string& message);
  void flush_held_log();
  void emit(const std::string& message) const;
  void publish_counts();

  const std::string token_;
  const std::size_t max_frame_;
  const std::size_t max_key_;
  const std::size_t max_value_;
  const std::function<void(const std::string&)> log_;
  const std::chrono::milliseconds log_interval_;
  const std::chrono::milliseconds handshake_timeout_;
  const std::size_t max_handshaking_;
  const std::size_t max_connections_;
  const std::size_t max_buffered_;
  const std::chrono::milliseconds request_timeout_;
  Clock::time_point log_quiet_until_{};
  uint64_t log_held_ = 0;
  std::string log_latest_held_;
  Fd listener_;
  Fd wake_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> clients_{0};
  std::atomic<int> parked_{0};
  Clock::time_point listener_paused_until_{};
  ServerState state_;
  ConnId next_id_ = 1;
  std::map<ConnId, Connection> conns_;
};

}  // namespace ranks::store
