#pragma once
// How a TCP store client connects and how a TCP store server behaves.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "ranks/store/defaults.hpp"

namespace ranks {

struct TCPStoreOptions {
  // Clients connect here.
  std::string host = "127.0.0.1";
  // Where the server listens: empty, every interface (IPv6 with IPv4 mapped in, as torch's
  // does); else only that address (a name or a literal). init_process_group listens on loopback
  // for a job on one node and on MASTER_ADDR's address otherwise, so a store is reachable from
  // no network its job does not use.
  std::string listen_host;
  // The server's port. A server given 0 picks a free one; read it back with port().
  int port = 0;
  // How many clients the job will have, shown in timeout messages ("3/4 clients connected");
  // -1: unknown. Unlike torch, the server does not block until that many have connected: the
  // rendezvous on top (a barrier through the store) decides what to wait for.
  int world_size = -1;
  // Whether this store also hosts the server (rank 0 or the launcher).
  bool is_server = false;
  // The deadline of every call: connecting, get(), and each request's reply.
  std::chrono::milliseconds timeout = kDefaultStoreTimeout;
  // A shared secret. A client whose token differs from the server's is turned away before it
  // can read or write any key. Empty on both sides: no check.
  std::string token;

  // The server's limits; clients learn them at the handshake and check before they send.
  std::size_t max_key_bytes = kDefaultMaxKeyBytes;
  std::size_t max_value_bytes = kDefaultMaxValueBytes;
  // What the server holds at most, keys and values together: a set that would take it past
  // this is refused with an error naming the quota, and nothing is stored.
  std::size_t max_stored_bytes = kDefaultMaxStoredBytes;
  // A connection must say hello (the token, the protocol version) within this, or is closed:
  // a job's own clients do so at once; an idle stranger does not get to hold a descriptor.
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(10);
  // Connections still in their handshake at once, at most: one more closes the oldest of them
  // (a job's client, which says hello at once, is never the oldest for long).
  std::size_t max_handshaking = 64;
  // Connections at once, at most (the job's clients keep a few each). At the cap a new one
  // closes the oldest still in its handshake, or, when every one has said hello, is itself
  // closed.
  std::size_t max_connections = 4096;
  // The bytes of requests still arriving, over every connection: when bytes arriving take the
  // server past this, the connection holding the most is answered with an error naming the cap
  // and closed (the job's requests are small; what may make it full is a stranger's, or a flood
  // of huge values), so no one client can hold the cap against the others.
  std::size_t max_buffered_bytes = std::size_t{256} << 20;
  // A request must arrive whole within this of its first byte, or the connection is closed:
  // one that stalls in the middle of a request holds its buffer for nothing.
  std::chrono::milliseconds request_timeout = std::chrono::minutes(2);
  // Where the server reports connections it closes for a reason (garbage, wrong token, ...).
  // Called on the server's thread. Empty: one line on stderr.
  std::function<void(const std::string&)> log;
  // At most one such report per interval: the first as it happens, then how many more there
  // were, with the latest (a port scan or a stray client must not flood the job's output).
  std::chrono::milliseconds log_interval = std::chrono::seconds(10);
};

}  // namespace ranks
