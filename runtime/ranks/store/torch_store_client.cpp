#include "ranks/store/torch_store_client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"
#include "ranks/store/socket.hpp"
#include "ranks/store/stream_io.hpp"

namespace ranks::store {

namespace {

using Query = TorchStoreClient::Query;
using Why = ConnectionError::Why;

// torch's server answers WAIT with this byte once every key is set; CHECK with READY or
// NOT_READY.
constexpr uint8_t kStopWaiting = 0;
constexpr uint8_t kReady = 0;
constexpr uint8_t kNotReady = 1;

// The largest value this client accepts in a reply. torch's server has no limit of its own;
// the library's own store allows no more, and a larger length means the bytes are not a reply.
constexpr uint64_t kMaxReplyValue = uint64_t{1} << 30;

// How long a server that accepted the connection may take to answer the first query before it
// is taken for something that does not speak torch 2.x's protocol.
constexpr auto kProbeTimeout = std::chrono::seconds(5);

// One query's bytes, as torch's client lays them out.
class QueryBytes {
 public:
  explicit QueryBytes(Query query) { bytes_.push_back(static_cast<uint8_t>(query)); }
  template <class T>
  QueryBytes& value(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof v);
    return *this;
  }
  QueryBytes& bytes(const uint8_t* data, std::size_t size) {
    value<uint64_t>(size);
    bytes_.insert(bytes_.end(), data, data + size);
    return *this;
  }
  QueryBytes& bytes(const std::vector<uint8_t>& data) { return bytes(data.data(), data.size()); }
  // torch's TCPStore puts every key under "/".
  QueryBytes& key(const std::string& key) {
    const std::string full = "/" + key;
    return bytes(reinterpret_cast<const uint8_t*>(full.data()), full.size());
  }
  QueryBytes& keys(const std::vector<std::string>& keys) {
    value<uint64_t>(keys.size());
    for (const std::string& k : keys) key(k);
    return *this;
  }
  void send(int fd, Clock::time_point deadline) const {
    send_all(fd, bytes_.data(), bytes_.size(), deadline);
  }

 private:
  std::vector<uint8_t> bytes_;
};

template <class T>
T read_value(int fd, Clock::time_point deadline) {
  T v;
  recv_exact(fd, reinterpret_cast<uint8_t*>(&v), sizeof v, deadline);
  return v;
}

std::vector<uint8_t> read_bytes(int fd, Clock::time_point deadline) {
  const auto size = read_value<uint64_t>(fd, deadline);
  if (size > kMaxReplyValue) {
    throw ConnectionError(Why::Malformed,
                          fmt::format("a value of {} bytes, more than the {} a value may have",
                                      size, describe_size(kMaxReplyValue)));
  }
  std::vector<uint8_t> data(size);
  recv_exact(fd, data.data(), data.size(), deadline);
  return data;
}

uint8_t read_answer(int fd, Clock::time_point deadline, std::initializer_list<uint8_t> allowed) {
  const auto answer = read_value<uint8_t>(fd, deadline);
  if (std::find(allowed.begin(), allowed.end(), answer) == allowed.end()) {
    throw ConnectionError(Why::Malformed, fmt::format("the answer byte {}", answer));
  }
  return answer;
}

std::string what_keys(const char* op, const std::vector<std::string>& keys) {
  return fmt::format("{}({})", op, keys.empty() ? "no keys" : describe_keys(keys));
}

}  // namespace

// One call: a connection from the pool, the query, the reply; a connection error becomes the
// ranks error that says which call failed, and the connection is dropped.
class TorchStoreClient::Exchange {
 public:
  Exchange(TorchStoreClient& client, std::string what, Clock::time_point deadline)
      : client_(client), what_(std::move(what)), deadline_(CallCap::apply(deadline)) {}

  template <class Body>
  auto operator()(Body body) {
    Fd connection = client_.acquire(deadline_);
    try {
      if constexpr (std::is_void_v<decltype(body(connection))>) {
        body(connection);
        client_.release(std::move(connection));
      } else {
        auto result = body(connection);
        client_.release(std::move(connection));
        return result;
      }
    } catch (const ConnectionError& e) {
      fail(e);
    }
  }

 private:
  [[noreturn]] void fail(const ConnectionError& e) const {
    switch (e.why()) {
      case Why::Overdue:
        throw Timeout(fmt::format(
            "{}: {}: no reply from the server within {}; torchrun's agent, which hosts it, may "
            "be overloaded or stopped",
            client_.name_, what_, describe_duration(client_.timeout_)));
      case Why::Lost:
        throw RendezvousError(fmt::format(
            "{}: {}: lost the connection to the server ({}); torchrun's agent, which hosts it, "
            "has probably exited",
            client_.name_, what_, e.what()));
      case Why::Malformed:
        break;
    }
    throw RendezvousError(fmt::format(
        "{}: {}: the server sent {}; is the program listening there the store of torch 2.4 or "
        "newer?",
        client_.name_, what_, e.what()));
  }

  TorchStoreClient& client_;
  const std::string what_;
  const Clock::time_point deadline_;
};

TorchStoreClient::TorchStoreClient(std::string host, int port, std::chrono::milliseconds timeout)
    : host_(std::move(host)),
      port_(port),
      timeout_(timeout),
      name_("torchrun's agent store " + host_port(host_, port_)) {
  if (host_.empty() || port_ <= 0 || port_ > 65535 || timeout_.count() <= 0) {
    throw InvalidArgument(fmt::format(
        "{}: needs a host, a port in 1..65535 and a positive timeout (got {} ms)", name_,
        timeout_.count()));
  }
  const auto deadline = deadline_after(timeout_);
  Fd connection = acquire(deadline);
  const auto probe = std::min<std::chrono::milliseconds>(timeout_, kProbeTimeout);
  const auto probe_deadline = deadline_after(probe);
  try {
    QueryBytes(Query::NumKeys).send(connection.get(), probe_deadline);
    (void)read_value<int64_t>(connection.get(), probe_deadline);
  } catch (const ConnectionError& e) {
    throw RendezvousError(fmt::format(
        "{}: the server accepted the connection but did not answer a query of the store "
        "protocol of torch 2.4 and newer ({}): this torchrun is an older torch release, whose "
        "agent store this library cannot join; start the job with `ranks run` (one node or several) or give the "
        "ranks a store of their own (init_method tcp://)",
        name_,
        e.why() == Why::Overdue ? fmt::format("no answer within {}", describe_duration(probe))
                                : std::string(e.what())));
  }
  release(std::move(connection));
}

Fd TorchStoreClient::acquire(Clock::time_point deadline) {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      Fd connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  const auto start = Clock::now();
  Fd connected;
  const std::string why = retry_until(deadline, [&] {
    ConnectAttempt attempt = connect_stream(host_, port_, deadline);
    connected = std::move(attempt.fd);
    return attempt.why;
  });
  if (why.empty()) {
    try {
      QueryBytes(Query::Validate).value<uint32_t>(kValidationMagic).send(connected.get(), deadline);
    } catch (const ConnectionError& e) {
      throw RendezvousError(
          fmt::format("{}: the server closed a new connection before its validation: {}", name_,
                      e.what()));
    }
  }
  if (!why.empty()) {
    throw Timeout(fmt::format(
        "{}: could not reach the server within {} (last attempt: {}); torchrun's agent hosts "
        "it at MASTER_ADDR:MASTER_PORT: is the agent still running?",
        name_,
        describe_duration(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                                start)),
        why));
  }
  return connected;
}

void TorchStoreClient::release(Fd connection) {
  if (!connection) return;  // dropped after a missed deadline
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(connection));
}

bool TorchStoreClient::wait_on(Fd& connection, const std::vector<std::string>& keys,
                               Clock::time_point deadline) {
  QueryBytes(Query::Wait).keys(keys).send(connection.get(), deadline_after(timeout_));
  try {
    read_answer(connection.get(), deadline, {kStopWaiting});
    return true;
  } catch (const ConnectionError& e) {
    if (e.why() != Why::Overdue) throw;
    // The server would answer the abandoned wait later on this connection (a CANCEL_WAIT may
    // race with that answer): the connection is dropped instead.
    connection.reset();
    return false;
  }
}

void TorchStoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  Exchange(*this, fmt::format("set({})", quote_key(key)), deadline_after(timeout_))([&](Fd& c) {
    const auto deadline = deadline_after(timeout_);
    QueryBytes(Query::Set).key(key).bytes(value).send(c.get(), deadline);
    // SET has no reply; the server handles each connection's queries in order, so once a CHECK
    // behind it is answered the value is stored, and any other connection sees it, as with
    // every other store of this library.
    QueryBytes(Query::Check).keys({key}).send(c.get(), deadline);
    read_answer(c.get(), deadline, {kReady, kNotReady});
  });
}

std::vector<uint8_t> TorchStoreClient::get(const std::string& key) {
  const auto deadline = deadline_after(timeout_);
  auto value = Exchange(*this, fmt::format("get({})", quote_key(key)), deadline)([&](Fd& c) {
    if (!wait_on(c, {key}, deadline)) return std::optional<std::vector<uint8_t>>();
    QueryBytes(Query::Get).key(key).send(c.get(), deadline_after(timeout_));
    return std::optional(read_bytes(c.get(), deadline_after(timeout_)));
  });
  if (!value) throw Timeout(timeout_message(name_, timeout_, {key}));
  return *value;
}

int64_t TorchStoreClient::add(const std::string& key, int64_t delta) {
  const auto deadline = deadline_after(timeout_);
  return Exchange(*this, fmt::format("add({})", quote_key(key)), deadline)([&](Fd& c) {
    QueryBytes(Query::Add).key(key).value<int64_t>(delta).send(c.get(), deadline);
    return read_value<int64_t>(c.get(), deadline);
  });
}

std::vector<uint8_t> TorchStoreClient::compare_set(const std::string& key,
                                                   const std::vector<uint8_t>& expected,
                                                   const std::vector<uint8_t>& desired) {
  const auto deadline = deadline_after(timeout_);
  return Exchange(*this, fmt::format("compare_set({})", quote_key(key)), deadline)([&](Fd& c) {
    QueryBytes(Query::CompareSet).key(key).bytes(expected).bytes(desired).send(c.get(), deadline);
    return read_bytes(c.get(), deadline);
  });
}

bool TorchStoreClient::check(const std::vector<std::string>& keys) {
  const auto deadline = deadline_after(timeout_);
  return Exchange(*this, what_keys("check", keys), deadline)([&](Fd& c) {
    QueryBytes(Query::Check).keys(keys).send(c.get(), deadline);
    return read_answer(c.get(), deadline, {kReady, kNotReady}) == kReady;
  });
}

void TorchStoreClient::wait(const std::vector<std::string>& keys,
                            std::chrono::milliseconds timeout) {
  check_wait_timeout(name_, timeout);
  // Zero: do not wait. A round trip to the server takes time, so ask whether they are there.
  const bool there = timeout.count() == 0 ? check(keys) : [&] {
    const auto deadline = deadline_after(timeout);
    return Exchange(*this, what_keys("wait", keys), deadline)(
        [&](Fd& c) { return wait_on(c, keys, deadline); });
  }();
  if (!there) throw Timeout(timeout_message(name_, timeout, missing(keys)));
}

std::vector<std::string> TorchStoreClient::missing(const std::vector<std::string>& keys) {
  std::vector<std::string> absent;
  for (const std::string& key : keys) {
    if (!check({key})) absent.push_back(key);
  }
  return absent;
}

bool TorchStoreClient::delete_key(const std::string& key) {
  const auto deadline = deadline_after(timeout_);
  return Exchange(*this, fmt::format("delete_key({})", quote_key(key)), deadline)([&](Fd& c) {
    QueryBytes(Query::DeleteKey).key(key).send(c.get(), deadline);
    return read_value<int64_t>(c.get(), deadline) == 1;
  });
}

int64_t TorchStoreClient::num_keys() {
  const auto deadline = deadline_after(timeout_);
  return Exchange(*this, "num_keys()", deadline)([&](Fd& c) {
    QueryBytes(Query::NumKeys).send(c.get(), deadline);
    return read_value<int64_t>(c.get(), deadline);
  });
}

}  // namespace ranks::store
