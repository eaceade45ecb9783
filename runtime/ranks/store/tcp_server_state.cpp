#include "ranks/store/tcp_server_state.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"

namespace ranks::store {

namespace {

using wire::Op;
using wire::Reply;
using wire::Status;

Reply error(wire::ErrorKind kind, std::string message) {
  Reply r;
  r.status = Status::Error;
  r.error = kind;
  r.message = std::move(message);
  return r;
}

Reply invalid(std::string message) {
  return error(wire::ErrorKind::InvalidArgument, std::move(message));
}

}  // namespace

std::optional<Reply> ServerState::check_limits(const wire::Request& request) const {
  std::string violation = wire::limit_violation(request, max_key_, max_value_);
  if (violation.empty()) return std::nullopt;
  return invalid(std::move(violation));
}

void ServerState::handle(ConnId conn, const wire::Request& request, Clock::time_point now,
                         std::vector<Answer>& out) {
  if (auto e = check_limits(request)) {
    out.push_back({conn, request.op, std::move(*e)});
    return;
  }
  const bool waits = request.op == Op::Get || request.op == Op::Wait;
  if (waits) {
    const std::vector<std::string> keys =
        request.op == Op::Get ? std::vector<std::string>{request.key} : request.keys;
    if (!map_.missing(keys).empty()) {
      park(conn, request, now);
      // A zero timeout answers at once, through expire().
      expire(now, out);
      return;
    }
  }
  std::vector<std::string> changed;
  Reply reply;
  try {
    reply = apply(request, changed);
  } catch (const InvalidArgument& e) {
    reply = invalid(e.what());
  }
  out.push_back({conn, request.op, std::move(reply)});
  for (const std::string& key : changed) release_waiters(key, out);
}

std::size_t ServerState::entry_bytes(const std::string& key) const {
  const Bytes* value = map_.find(key);
  return value != nullptr ? key.size() + value->size() : 0;
}

void ServerState::check_room(std::size_t before, std::size_t after, const std::string& key) const {
  if (after > before && stored_ - before + after > max_stored_) {
    throw InvalidArgument(fmt::format(
        "the store holds {} of keys and values and may hold at most {}; storing {} more under "
        "'{}' is refused (TCPStoreOptions::max_stored_bytes)",
        describe_size(stored_), describe_size(max_stored_), describe_size(after - before), key));
  }
}

void ServerState::charge(const std::string& key, std::size_t value_bytes) {
  const std::size_t before = entry_bytes(key);
  const std::size_t after = key.size() + value_bytes;
  check_room(before, after, key);
  stored_ = stored_ - before + after;
}

Reply ServerState::apply(const wire::Request& r, std::vector<std::string>& changed) {
  Reply reply;
  switch (r.op) {
    case Op::Set:
      charge(r.key, r.value.size());
      map_.set(r.key, r.value);
      changed.push_back(r.key);
      break;
    case Op::Get:
      reply.value = *map_.find(r.key);
      break;
    case Op::Add: {
      // A counter is its decimal text: room for its longest, a sign and 19 digits.
      const std::size_t before = entry_bytes(r.key);
      check_room(before, r.key.size() + 20, r.key);
      reply.number = map_.add("", r.key, r.number);
      stored_ = stored_ - before + entry_bytes(r.key);
      changed.push_back(r.key);
      break;
    }
    case Op::CompareSet: {
      KvMap::CompareSet outcome = map_.compare_set_outcome(r.key, r.expected, r.value);
      if (outcome.store_desired) {
        charge(r.key, r.value.size());
        map_.set(r.key, r.value);
        changed.push_back(r.key);
      }
      reply.value = std::move(outcome.current);
      break;
    }
    case Op::Check:
      reply.flag = map_.missing(r.keys).empty();
      break;
    case Op::Wait:
      break;
    case Op::DeleteKey:
      stored_ -= entry_bytes(r.key);
      reply.flag = map_.erase(r.key);
      break;
    case Op::NumKeys:
      reply.number = map_.count_prefix(r.key);
      break;
    case Op::Hello:
      return error(wire::ErrorKind::Protocol, "a second hello on one connection");
  }
  return reply;
}

void ServerState::park(ConnId conn, const wire::Request& request, Clock::time_point now) {
  Parked p;
  p.op = request.op;
  p.keys = request.op == Op::Get ? std::vector<std::string>{request.key} : request.keys;
  const auto timeout = std::chrono::milliseconds(request.number);
  const auto room =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  p.timer = deadlines_.emplace(now + std::min(timeout, room), conn);
  for (const std::string& key : p.keys) {
    std::vector<ConnId>& list = waiters_[key];
    if (std::find(list.begin(), list.end(), conn) == list.end()) list.push_back(conn);
  }
  parked_.emplace(conn, std::move(p));
}

void ServerState::unpark(ConnId conn) {
  auto it = parked_.find(conn);
  if (it == parked_.end()) return;
  for (const std::string& key : it->second.keys) {
    auto w = waiters_.find(key);
    if (w == waiters_.end()) continue;
    std::erase(w->second, conn);
    if (w->second.empty()) waiters_.erase(w);
  }
  deadlines_.erase(it->second.timer);
  parked_.erase(it);
}

Reply ServerState::ready_reply(const Parked& parked) const {
  Reply reply;
  if (parked.op == Op::Get) reply.value = *map_.find(parked.keys[0]);
  return reply;
}

void ServerState::release_waiters(const std::string& key, std::vector<Answer>& out) {
  auto w = waiters_.find(key);
  if (w == waiters_.end()) return;
  const std::vector<ConnId> candidates = w->second;
  for (ConnId conn : candidates) {
    const Parked& p = parked_.at(conn);
    if (!map_.missing(p.keys).empty()) continue;
    out.push_back({conn, p.op, ready_reply(p)});
    unpark(conn);
  }
}

void ServerState::expire(Clock::time_point now, std::vector<Answer>& out) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const ConnId conn = deadlines_.begin()->second;
    const Parked& p = parked_.at(conn);
    Reply reply;
    reply.status = Status::Timeout;
    reply.missing = map_.missing(p.keys);
    reply.clients = clients_;
    reply.world_size = world_size_;
    out.push_back({conn, p.op, std::move(reply)});
    unpark(conn);
  }
}

void ServerState::forget(ConnId conn) { unpark(conn); }

std::optional<Clock::time_point> ServerState::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

}  // namespace ranks::store
