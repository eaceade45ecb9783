#pragma once
// What the TCP store server does with a request, apart from sockets: the key-value map, and
// get/wait requests parked until their keys arrive or their deadline passes. The server runs
// it on one thread, so every request is atomic.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ranks/store/deadline.hpp"
#include "ranks/store/kv_map.hpp"
#include "ranks/store/wire.hpp"

namespace ranks::store {

using ConnId = uint64_t;

// A reply to send to a connection.
struct Answer {
  ConnId conn;
  wire::Op op;
  wire::Reply reply;
};

class ServerState {
 public:
  ServerState(std::size_t max_key, std::size_t max_value, std::size_t max_stored, int world_size)
      : max_key_(max_key), max_value_(max_value), max_stored_(max_stored), world_size_(world_size) {}
  // Keys and values held, in bytes.
  std::size_t stored_bytes() const { return stored_; }

  // Handles one request (not Hello) from conn. Its reply goes to out unless it is parked; a
  // change to the map also releases parked requests, whose replies go to out too.
  void handle(ConnId conn, const wire::Request& request, Clock::time_point now,
              std::vector<Answer>& out);
  // Answers every parked request whose deadline has passed with Timeout.
  void expire(Clock::time_point now, std::vector<Answer>& out);
  // The connection is gone: drop its parked request.
  void forget(ConnId conn);
  std::optional<Clock::time_point> next_deadline() const;
  bool parked(ConnId conn) const { return parked_.count(conn) > 0; }
  std::size_t parked_count() const { return parked_.size(); }
  // How many clients are connected, for timeout replies.
  void set_clients(int clients) { clients_ = clients; }

 private:
  struct Parked {
    wire::Op op;
    std::vector<std::string> keys;
    std::multimap<Clock::time_point, ConnId>::iterator timer;
  };

  // An error reply when the request breaks a limit, else nullopt.
  std::optional<wire::Reply> check_limits(const wire::Request& request) const;
  wire::Reply apply(const wire::Request& request, std::vector<std::string>& changed);
  void park(ConnId conn, const wire::Request& request, Clock::time_point now);
  void unpark(ConnId conn);
  void release_waiters(const std::string& key, std::vector<Answer>& out);
  wire::Reply ready_reply(const Parked& parked) const;

  // What key and its value take now (0: absent).
  std::size_t entry_bytes(const std::string& key) const;
  // InvalidArgument when an entry growing from before to after bytes would take the store past
  // its quota.
  void check_room(std::size_t before, std::size_t after, const std::string& key) const;
  // check_room for key holding value_bytes, then records the change.
  void charge(const std::string& key, std::size_t value_bytes);

  const std::size_t max_key_;
  const std::size_t max_value_;
  const std::size_t max_stored_;
  const int world_size_;
  std::size_t stored_ = 0;
  int clients_ = 0;
  KvMap map_;
  std::unordered_map<ConnId, Parked> parked_;
  std::unordered_map<std::string, std::vector<ConnId>> waiters_;
  std::multimap<Clock::time_point, ConnId> deadlines_;
};

}  // namespace ranks::store
