#pragma once
// What the TCP store tests share: a server's log lines, a client of a port, a raw socket that
// speaks the wire format byte by byte, and whether an address accepts a plain connect.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include "accepts_connection.hpp"
#include "harness.hpp"
#include "ranks/store/bytes.hpp"
#include "ranks/store/wire.hpp"

namespace ranks::testing::store_tcp {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;
namespace wire = store::wire;

inline Bytes bytes(std::string_view s) { return {s.begin(), s.end()}; }

// A thread whose exception fails the running test instead of terminating the binary, and
// that is joined even when the test body throws.
template <class F>
std::jthread checked_thread(F body) {
  return std::jthread([body = std::move(body)]() mutable {
    try {
      body();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a test thread threw: " << e.what();
    }
  });
}

// Collects what a server logs; the server calls it from its own thread.
class LogLines {
 public:
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    };
  }
  size_t count() {
    std::lock_guard lock(mutex_);
    return lines_.size();
  }
  std::string all() {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const std::string& line : lines_) out += line + "\n";
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

inline TCPStoreOptions server_options(LogLines* log = nullptr) {
  TCPStoreOptions o;
  o.port = 0;
  o.log_interval = std::chrono::milliseconds(0);  // every line, as the tests read them all
  if (log != nullptr) o.log = log->sink();
  return o;
}

inline std::unique_ptr<TCPStore> client(int port, std::chrono::milliseconds timeout = 30s,
                                 std::string token = {}, int world_size = -1) {
  return std::make_unique<TCPStore>("127.0.0.1", port, world_size, false, timeout,
                                    std::move(token));
}

// Spins until pred holds: the server's own counters say when a request is parked, so the test
// needs no sleep to know the order of events.
template <class Pred>
void until(Pred pred) {
  while (!pred()) std::this_thread::yield();
}

// A socket that speaks the protocol byte by byte. Reads give up after 10 s, so a server that
// never answers fails the test instead of hanging it.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    timeval limit{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  }
  ~RawClient() { ::close(fd_); }

  void send_bytes(const Bytes& data) {
    ASSERT_EQ(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }
  void send(const wire::Request& r) { send_bytes(wire::frame(wire::encode_request(r))); }
  void hello(const std::string& token = {}, uint16_t version = wire::kVersion) {
    wire::Request r;
    r.op = wire::Op::Hello;
    r.token = token;
    r.version = version;
    send(r);
  }
  // The next reply, or nullopt when the server closed the connection instead.
  std::optional<wire::Reply> reply(wire::Op op) {
    Bytes header(4);
    if (!read_exact(header)) return std::nullopt;
    Bytes body(store::load_u32(header.data()));
    if (!read_exact(body)) return std::nullopt;
    return wire::decode_reply(op, body);
  }
  // Whether the server closes the connection (after any replies) within the read limit.
  bool closed_by_server() {
    uint8_t buffer[4096];
    while (true) {
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  bool read_exact(Bytes& out) {
    std::size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::recv(fd_, out.data() + got, out.size() - got, 0);
      if (n <= 0) return false;
      got += static_cast<std::size_t>(n);
    }
    return true;
  }
  int fd_;
};

inline wire::Request set_request(const std::string& key, const Bytes& value) {
  wire::Request r;
  r.op = wire::Op::Set;
  r.key = key;
  r.value = value;
  return r;
}


}  // namespace ranks::testing::store_tcp
