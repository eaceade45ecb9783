#include "ranks/store/tcp_store.hpp"

#include <fmt/format.h>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"
#include "ranks/store/socket.hpp"
#include "ranks/store/tcp_client.hpp"

namespace ranks {

namespace {

using store::ConnectionError;
using store::wire::Op;
using store::wire::Reply;
using store::wire::Request;
using store::wire::Status;

// How much longer than the server's own deadline a client waits for a parked request's answer
// before it decides the server is gone (the server answers at its deadline itself).
constexpr auto kReplyGrace = std::chrono::seconds(2);

// wait + grace without overflowing for a timeout of "forever".
std::chrono::milliseconds with_grace(std::chrono::milliseconds wait) {
  const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(kReplyGrace);
  return wait > std::chrono::milliseconds::max() - grace ? std::chrono::milliseconds::max()
                                                         : wait + grace;
}

Request request(Op op, const std::string& key = {}) {
  Request r;
  r.op = op;
  r.key = key;
  return r;
}

std::string what_keys(const char* op, const std::vector<std::string>& keys) {
  return fmt::format("{}({})", op, keys.empty() ? "no keys" : store::describe_keys(keys));
}

std::string clients_context(const Reply& reply) {
  if (reply.world_size > 0) {
    return fmt::format(" ({}/{} clients connected to the server)", reply.clients, reply.world_size);
  }
  return fmt::format(" ({} clients connected to the server)", reply.clients);
}

}  // namespace

TCPStore::TCPStore(std::string host, int port, int world_size, bool is_server,
                   std::chrono::milliseconds timeout, std::string token)
    : TCPStore([&] {
        TCPStoreOptions options;
        options.host = std::move(host);
        options.port = port;
        options.world_size = world_size;
        options.is_server = is_server;
        options.timeout = timeout;
        options.token = std::move(token);
        return options;
      }()) {}

TCPStore::TCPStore(TCPStoreOptions options) : options_(std::move(options)) {
  const std::string where = store::host_port(options_.host, options_.port);
  if (options_.host.empty()) {
    throw InvalidArgument("tcp store: the host is empty; give the server's address (MASTER_ADDR)");
  }
  if (options_.port < 0 || options_.port > 65535 || (options_.port == 0 && !options_.is_server)) {
    throw InvalidArgument(fmt::format(
        "tcp store {}: port {} is out of range; a client needs the server's port (1..65535); "
        "only a server may ask for 0 (a free port)",
        where, options_.port));
  }
  if (options_.timeout.count() <= 0) {
    throw InvalidArgument(fmt::format("tcp store {}: the timeout is {} ms; it must be positive",
                                      where, options_.timeout.count()));
  }
  if (options_.is_server) {
    server_ = std::make_unique<TCPStoreServer>(options_);
    options_.port = server_->port();
  }
  name_ = "tcp store " + store::host_port(options_.host, options_.port);
  // Connect now, so that a wrong address or token fails here and not in the first call.
  release(acquire(store::deadline_after(options_.timeout)));
}

TCPStore::~TCPStore() {
  // Close the connections before the server stops, so it sees clients leave normally.
  idle_.clear();
  server_.reset();
}

std::unique_ptr<store::ClientConnection> TCPStore::acquire(store::Clock::time_point deadline) {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<store::ClientConnection> connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  auto connection = std::make_unique<store::ClientConnection>(
      options_.host, options_.port, options_.token, deadline, served_.load());
  served_ = true;
  return connection;
}

void TCPStore::release(std::unique_ptr<store::ClientConnection> connection) {
  if (connection->broken()) return;
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(connection));
}

Reply TCPStore::call(const Request& r, const std::string& what, std::chrono::milliseconds wait) {
  const bool waits = r.op == Op::Get || r.op == Op::Wait;
  const std::vector<std::string> keys = r.op == Op::Wait ? r.keys : std::vector{r.key};
  const auto started = store::Clock::now();
  const auto deadline =
      store::CallCap::apply(store::deadline_after(waits ? with_grace(wait) : options_.timeout));
  const auto allowed = std::chrono::ceil<std::chrono::milliseconds>(deadline - started);
  std::unique_ptr<store::ClientConnection> connection = acquire(deadline);
  const std::string violation =
      store::wire::limit_violation(r, connection->max_key(), connection->max_value());
  if (!violation.empty()) {
    release(std::move(connection));
    throw InvalidArgument(fmt::format("{}: {}", name_, violation));
  }
  Reply reply;
  try {
    reply = connection->call(r, deadline);
  } catch (const ConnectionError& e) {
    switch (e.why()) {
      case ConnectionError::Why::Overdue:
        if (waits && !store::CallCap::active()) {
          throw Timeout(
              store::timeout_message(name_, wait, keys,
                                     " (and the server did not answer at that deadline: it may be "
                                     "overloaded or stopped)"));
        }
        throw Timeout(
            fmt::format("{}: {}: no reply from the server within {}; it may be "
                        "overloaded or stopped",
                        name_, what, store::describe_duration(allowed)));
      case ConnectionError::Why::Lost:
        throw RendezvousError(
            fmt::format("{}: {}: lost the connection to the server ({}); the server (rank 0 or the "
                        "launcher) has probably exited or failed",
                        name_, what, e.what()));
      case ConnectionError::Why::Malformed:
        throw RendezvousError(
            fmt::format("{}: {}: the server sent {}; is another program "
                        "listening on that port?",
                        name_, what, e.what()));
    }
  }
  if (reply.status == Status::Ok) {
    release(std::move(connection));
    return reply;
  }
  if (reply.status == Status::Timeout) {
    release(std::move(connection));
    throw Timeout(store::timeout_message(name_, wait, reply.missing, clients_context(reply)));
  }
  if (reply.error == store::wire::ErrorKind::InvalidArgument) {
    release(std::move(connection));
    throw InvalidArgument(fmt::format("{}: {}", name_, reply.message));
  }
  // The server closes a connection after any other error; the next call opens a new one.
  throw RendezvousError(
      fmt::format("{}: {}: the server refused the request: {}", name_, what, reply.message));
}

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  Request r = request(Op::Set, key);
  r.value = value;
  call(r, fmt::format("set({})", store::quote_key(key)), {});
}

std::vector<uint8_t> TCPStore::get(const std::string& key) {
  Request r = request(Op::Get, key);
  r.number = options_.timeout.count();
  return call(r, fmt::format("get({})", store::quote_key(key)), options_.timeout).value;
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  Request r = request(Op::Add, key);
  r.number = delta;
  return call(r, fmt::format("add({}, {})", store::quote_key(key), delta), {}).number;
}

std::vector<uint8_t> TCPStore::compare_set(const std::string& key,
                                           const std::vector<uint8_t>& expected,
                                           const std::vector<uint8_t>& desired) {
  Request r = request(Op::CompareSet, key);
  r.expected = expected;
  r.value = desired;
  return call(r, fmt::format("compare_set({})", store::quote_key(key)), {}).value;
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  Request r = request(Op::Check);
  r.keys = keys;
  return call(r, what_keys("check", keys), {}).flag;
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  store::check_wait_timeout(name_, timeout);
  Request r = request(Op::Wait);
  r.keys = keys;
  r.number = timeout.count();
  call(r, what_keys("wait", keys), timeout);
}

bool TCPStore::delete_key(const std::string& key) {
  return call(request(Op::DeleteKey, key), fmt::format("delete_key({})", store::quote_key(key)), {})
      .flag;
}

int64_t TCPStore::num_keys() { return num_keys_with_prefix(""); }

int64_t TCPStore::num_keys_with_prefix(const std::string& prefix) {
  return call(request(Op::NumKeys, prefix), "num_keys()", {}).number;
}

}  // namespace ranks
