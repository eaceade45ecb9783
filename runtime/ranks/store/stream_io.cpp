#include "ranks/store/stream_io.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <memory>
#include <random>
#include <thread>
#include <unistd.h>

#include "ranks/errors.hpp"
#include "ranks/store/socket.hpp"

namespace ranks::store {

namespace {

using Why = ConnectionError::Why;

constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);

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

void send_all(int fd, const uint8_t* data, std::size_t size, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
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

ConnectAttempt connect_stream(const std::string& host, int port, Clock::time_point deadline) {
  ConnectAttempt attempt;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc == EAI_AGAIN) {
    attempt.why = fmt::format("resolving '{}': {}", host, lower_first(gai_strerror(rc)));
    return attempt;
  }
  if (rc != 0) {
    throw RendezvousError(fmt::format(
        "tcp store {}: cannot resolve the host name '{}': {}; check the address (MASTER_ADDR)",
        host_port(host, port), host,
        rc == EAI_SYSTEM ? errno_text(errno) : lower_first(gai_strerror(rc))));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  attempt.why = "no address to try";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      attempt.why = errno_text(errno);
      continue;
    }
    const int error = connect_by(fd.get(), *a, deadline);
    attempt.refused = error == ECONNREFUSED;
    if (error != 0) {
      attempt.why = errno_text(error);
      continue;
    }
    set_no_delay(fd.get());
    attempt.fd = std::move(fd);
    attempt.why.clear();
    return attempt;
  }
  return attempt;
}

std::string retry_until(Clock::time_point deadline, const std::function<std::string()>& attempt) {
  std::minstd_rand jitter(
      static_cast<unsigned>(Clock::now().time_since_epoch().count() ^ ::getpid()));
  auto backoff = std::chrono::duration<double, std::milli>(kFirstBackoff);
  while (true) {
    std::string why = attempt();
    if (why.empty() || Clock::now() >= deadline) return why;
    const double factor = std::uniform_real_distribution<double>(0.75, 1.25)(jitter);
    const auto pause = std::chrono::duration_cast<std::chrono::milliseconds>(backoff * factor);
    std::this_thread::sleep_for(std::min(pause, remaining(deadline)));
    backoff = std::min(backoff * 2.0, std::chrono::duration<double, std::milli>(kMaxBackoff));
  }
}

}  // namespace ranks::store
