#include "ranks/store/tcp_client.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <random>
#include <thread>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"

namespace ranks::store {

namespace {

using Why = ConnectionError::Why;

constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);

// Blocks until fd is ready for events or deadline passes. Looks at least once, so that what
// is already there (a refusal, a reply) is seen even at the deadline.
void wait_ready(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left = remaining(deadline);
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) throw ConnectionError(Why::Lost, errno_text(errno));
    if (rc == 0 && left.count() == 0) throw ConnectionError(Why::Overdue, "the deadline passed");
  }
}

void send_all(int fd, const std::vector<uint8_t>& data, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_ready(fd, POLLOUT, deadline);
    } else if (n < 0 && errno != EINTR) {
      throw ConnectionError(Why::Lost, errno_text(errno));
    }
  }
}

void recv_exact(int fd, uint8_t* out, std::size_t size, Clock::time_point deadline) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::recv(fd, out + got, size - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n == 0) {
      throw ConnectionError(Why::Lost, "the server closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_ready(fd, POLLIN, deadline);
    } else if (errno != EINTR) {
      throw ConnectionError(Why::Lost, errno_text(errno));
    }
  }
}

wire::Reply exchange(int fd, const wire::Request& request, std::size_t max_reply,
                     Clock::time_point deadline) {
  send_all(fd, wire::frame(wire::encode_request(request)), deadline);
  uint8_t header[wire::kHeaderBytes];
  recv_exact(fd, header, sizeof header, deadline);
  const std::size_t length = load_u32(header);
  if (length > max_reply) {
    throw ConnectionError(Why::Malformed,
                          fmt::format("a reply of {} bytes, more than the {} a reply may have",
                                      length, describe_size(max_reply)));
  }
  std::vector<uint8_t> body(length);
  recv_exact(fd, body.data(), length, deadline);
  try {
    return wire::decode_reply(request.op, body);
  } catch (const DecodeError& e) {
    throw ConnectionError(Why::Malformed, fmt::format("a malformed reply: {}", e.what()));
  }
}

// Connects fd to address by deadline; returns 0 or the errno of the failure.
int connect_by(int fd, const addrinfo& address, Clock::time_point deadline) {
  if (::connect(fd, address.ai_addr, address.ai_addrlen) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  try {
    wait_ready(fd, POLLOUT, deadline);
  } catch (const ConnectionError&) {
    return ETIMEDOUT;
  }
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  return error;
}

}  // namespace

ClientConnection::ClientConnection(const std::string& host, int port, const std::string& token,
                                   Clock::time_point deadline, bool server_was_up)
    : host_(host), port_(port), address_(host_port(host, port)) {
  const auto start = Clock::now();
  std::minstd_rand jitter(static_cast<unsigned>(start.time_since_epoch().count() ^ ::getpid()));
  auto backoff = std::chrono::duration<double, std::milli>(kFirstBackoff);
  std::string last_error;
  while (true) {
    last_error = try_connect(token, deadline);
    if (last_error.empty()) return;
    if (server_was_up && refused_) {
      throw RankFailure(fmt::format(
          "tcp store {}: the server has gone: it served this client before and now refuses "
          "connections ({}); the process that hosted it (rank 0, or the launcher) has exited",
          address_, last_error));
    }
    if (Clock::now() >= deadline) break;
    // Jitter spreads the retries of many ranks that all started at once.
    const double factor = std::uniform_real_distribution<double>(0.75, 1.25)(jitter);
    const auto pause = std::chrono::duration_cast<std::chrono::milliseconds>(backoff * factor);
    std::this_thread::sleep_for(std::min(pause, remaining(deadline)));
    backoff = std::min(backoff * 2.0, std::chrono::duration<double, std::milli>(kMaxBackoff));
  }
  throw Timeout(fmt::format(
      "tcp store {}: could not reach the server within {} (last attempt: {}); check that the "
      "server (rank 0 or the launcher) is running and that host and port are right",
      address_,
      describe_duration(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)),
      last_error));
}

std::string ClientConnection::try_connect(const std::string& token, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port_);
  const int rc = ::getaddrinfo(host_.c_str(), service.c_str(), &hints, &found);
  if (rc == EAI_AGAIN) {
    return fmt::format("resolving '{}': {}", host_, lower_first(gai_strerror(rc)));
  }
  if (rc != 0) {
    throw RendezvousError(fmt::format(
        "tcp store {}: cannot resolve the host name '{}': {}; check the address (MASTER_ADDR)",
        address_, host_, rc == EAI_SYSTEM ? errno_text(errno) : lower_first(gai_strerror(rc))));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  std::string why = "no address to try";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      why = errno_text(errno);
      continue;
    }
    const int error = connect_by(fd.get(), *a, deadline);
    refused_ = error == ECONNREFUSED;
    if (error != 0) {
      why = errno_text(error);
      continue;
    }
    set_no_delay(fd.get());
    fd_ = std::move(fd);
    why = handshake(token, deadline);
    if (why.empty()) return why;
    fd_.reset();
  }
  return why;
}

std::string ClientConnection::handshake(const std::string& token, Clock::time_point deadline) {
  wire::Request hello;
  hello.op = wire::Op::Hello;
  hello.token = token;
  wire::Reply reply;
  try {
    reply = exchange(fd_.get(), hello, wire::kMaxHelloFrame, deadline);
  } catch (const ConnectionError& e) {
    if (e.why() == Why::Malformed) {
      throw RendezvousError(fmt::format(
          "tcp store {}: the program listening there is not a ranks store server (it answered "
          "the handshake with {}); check the port",
          address_, e.what()));
    }
    if (e.why() == Why::Overdue) return "the server accepted the connection but did not answer";
    return fmt::format("the connection broke during the handshake: {}", e.what());
  }
  if (reply.status != wire::Status::Ok) {
    throw RendezvousError(fmt::format("tcp store {}: the server turned this client away: {}",
                                      address_, reply.message));
  }
  if (reply.version != wire::kVersion) {
    throw RendezvousError(fmt::format(
        "tcp store {}: the server speaks store protocol version {} and this client version {}; "
        "run the same ranks release on every rank",
        address_, reply.version, wire::kVersion));
  }
  max_key_ = reply.max_key;
  max_value_ = reply.max_value;
  return {};
}

wire::Reply ClientConnection::call(const wire::Request& request, Clock::time_point deadline) {
  try {
    return exchange(fd_.get(), request, wire::max_frame(max_key_, max_value_), deadline);
  } catch (const ConnectionError&) {
    broken_ = true;
    throw;
  }
}

}  // namespace ranks::store
