#include "ranks/store/tcp_server_loop.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"

namespace ranks::store {

namespace {

using wire::ErrorKind;
using wire::Op;
using wire::Reply;

constexpr std::size_t kReadChunk = 64 * 1024;
// Reads per connection per round, so that one busy client cannot starve the others.
constexpr int kReadsPerRound = 16;
// How long a rejected peer gets to read its error before the connection is cut.
constexpr auto kDrainTime = std::chrono::seconds(1);
// After accept() runs out of descriptors, how long to leave the listener alone (poll would
// report it ready again at once and spin).
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

// Compares without an early exit, so the time taken does not reveal a matching prefix.
bool same_token(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const unsigned char other = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(a[i]) ^ other;
  }
  return diff == 0;
}

[[noreturn]] void cannot_listen(const std::string& where, int port, int error) {
  if (error == EADDRINUSE) {
    throw RendezvousError(fmt::format(
        "tcp store server: port {} is already in use (another job's store, or a program still "
        "holding it); choose another port (MASTER_PORT, ranks run --master-port), or leave "
        "ranks run's --master-port out to let it pick a free one",
        port));
  }
  if (error == EADDRNOTAVAIL) {
    throw RendezvousError(fmt::format(
        "tcp store server: cannot listen on {} port {}: {} is not an address of this host (the "
        "store is hosted where rank 0 runs: MASTER_ADDR must name that host)",
        where, port, where));
  }
  throw RendezvousError(fmt::format("tcp store server: cannot listen on {} port {}: {}", where,
                                    port, errno_text(error)));
}

Fd bound_listener(int family, const sockaddr* address, socklen_t length, bool dual_stack,
                  int& error) {
  Fd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    error = errno;
    return fd;
  }
  int one = 1;
  int zero = 0;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (dual_stack) ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  if (::bind(fd.get(), address, length) == 0 && ::listen(fd.get(), SOMAXCONN) == 0) return fd;
  error = errno;
  return Fd{};
}

// A socket listening on every interface: IPv6 with IPv4 mapped in when the host has IPv6,
// plain IPv4 otherwise.
Fd listen_everywhere(int port) {
  int error = 0;
  sockaddr_in6 any6{};
  any6.sin6_family = AF_INET6;
  any6.sin6_addr = in6addr_any;
  any6.sin6_port = htons(static_cast<uint16_t>(port));
  Fd fd = bound_listener(AF_INET6, reinterpret_cast<sockaddr*>(&any6), sizeof any6, true, error);
  if (fd || error == EADDRINUSE) {
    if (fd) return fd;
    cannot_listen("every interface", port, error);
  }
  sockaddr_in any4{};
  any4.sin_family = AF_INET;
  any4.sin_addr.s_addr = htonl(INADDR_ANY);
  any4.sin_port = htons(static_cast<uint16_t>(port));
  fd = bound_listener(AF_INET, reinterpret_cast<sockaddr*>(&any4), sizeof any4, false, error);
  if (!fd) cannot_listen("every interface", port, error);
  return fd;
}

// A socket listening on host's address only (the first of its addresses that binds).
Fd listen_on(const std::string& host, int port) {
  if (host.empty()) return listen_everywhere(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw RendezvousError(fmt::format("tcp store server: cannot listen on {}: {}", host,
                                      ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
  int error = EADDRNOTAVAIL;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd fd = bound_listener(a->ai_family, a->ai_addr, a->ai_addrlen, false, error);
    if (fd) return fd;
    if (error == EADDRINUSE) break;
  }
  cannot_listen(host, port, error);
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

}  // namespace

ServerLoop::ServerLoop(const TCPStoreOptions& options)
    : token_(options.token),
      max_frame_(wire::max_frame(options.max_key_bytes, options.max_value_bytes)),
      max_key_(options.max_key_bytes),
      max_value_(options.max_value_bytes),
      log_(options.log),
      log_interval_(options.log_interval),
      handshake_timeout_(options.handshake_timeout),
      max_handshaking_(std::max<std::size_t>(options.max_handshaking, 1)),
      max_connections_(std::max<std::size_t>(options.max_connections, 1)),
      max_buffered_(options.max_buffered_bytes),
      request_timeout_(options.request_timeout),
      state_(options.max_key_bytes, options.max_value_bytes, options.max_stored_bytes,
             options.world_size) {
  if (options.port < 0 || options.port > 65535) {
    throw InvalidArgument(fmt::format(
        "tcp store server: port {} is out of range; use 1..65535, or 0 to pick a free port",
        options.port));
  }
  if (options.token.size() > wire::kMaxTokenBytes) {
    throw InvalidArgument(fmt::format("tcp store server: the token has {} bytes; at most {}",
                                      options.token.size(), describe_size(wire::kMaxTokenBytes)));
  }
  if (options.max_key_bytes == 0 || options.max_key_bytes > 0xffffffffu ||
      options.max_value_bytes > (std::size_t{1} << 30)) {
    throw InvalidArgument(fmt::format(
        "tcp store server: limits of {} per key and {} per value are out of range; keys need "
        "1 byte to 4 GiB and values at most 1 GiB",
        describe_size(options.max_key_bytes), describe_size(options.max_value_bytes)));
  }
  listener_ = listen_on(options.listen_host, options.port);
  port_ = bound_port(listener_.get());
  wake_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_) {
    throw RendezvousError(
        fmt::format("tcp store server: cannot create an eventfd: {}", errno_text(errno)));
  }
}

void ServerLoop::stop() {
  stopping_ = true;
  const uint64_t one = 1;
  // The loop reads the flag after it wakes; a failed write cannot happen with an eventfd that
  // is far from overflow.
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

void ServerLoop::log(const std::string& message) {
  const Clock::time_point now = Clock::now();
  if (now < log_quiet_until_) {
    ++log_held_;
    log_latest_held_ = message;
    return;
  }
  flush_held_log();
  emit(message);
  log_quiet_until_ = now + log_interval_;
}

void ServerLoop::flush_held_log() {
  if (log_held_ == 0) return;
  emit(fmt::format("{} more like it since, the latest: {}", log_held_, log_latest_held_));
  log_held_ = 0;
  log_latest_held_.clear();
}

void ServerLoop::emit(const std::string& message) const {
  if (log_) {
    log_(message);
    return;
  }
  const std::string line = fmt::format("ranks: tcp store server on port {}: {}\n", port_, message);
  std::fputs(line.c_str(), stderr);
}

void ServerLoop::run() {
  while (!stopping_) {
    try {
      serve_once();
    } catch (const std::exception& e) {
      // A bug or resource exhaustion must not leave every client hanging without a word.
      log(fmt::format("internal error in the server loop: {}", e.what()));
    }
  }
  conns_.clear();
  flush_held_log();
}

int ServerLoop::poll_timeout_ms() const {
  std::optional<Clock::time_point> next = state_.next_deadline();
  for (const auto& [id, c] : conns_) {
    if (c.closing && (!next || c.close_by < *next)) next = c.close_by;
    if (handshaking(c) && (!next || c.hello_by < *next)) next = c.hello_by;
    if (mid_request(c) && (!next || c.request_by < *next)) next = c.request_by;
  }
  const auto now = Clock::now();
  if (listener_paused_until_ > now && (!next || listener_paused_until_ < *next)) {
    next = listener_paused_until_;
  }
  if (!next) return -1;
  return static_cast<int>(std::min<int64_t>(remaining(*next).count(), 60'000));
}

void ServerLoop::serve_once() {
  std::vector<pollfd> fds;
  std::vector<ConnId> ids;
  fds.push_back({wake_.get(), POLLIN, 0});
  const bool listening = Clock::now() >= listener_paused_until_;
  fds.push_back({listening ? listener_.get() : -1, POLLIN, 0});
  for (auto& [id, c] : conns_) {
    // A client that does not read its replies is not read from either (backpressure).
    short events = backlogged(c) ? 0 : POLLIN;
    if (c.out_sent < c.out.size()) events |= POLLOUT;
    fds.push_back({c.fd.get(), events, 0});
    ids.push_back(id);
  }
  if (::poll(fds.data(), fds.size(), poll_timeout_ms()) < 0) {
    if (errno == EINTR) return;
    throw RendezvousError(fmt::format("poll failed: {}", errno_text(errno)));
  }
  if (fds[0].revents != 0) {
    uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(wake_.get(), &count, sizeof count);
    if (stopping_) return;
  }
  if (fds[1].revents != 0) accept_all();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const short revents = fds[i + 2].revents;
    if (revents == 0) continue;
    Connection& c = conns_.at(ids[i]);
    try {
      if (revents & (POLLIN | POLLHUP | POLLERR)) read_from(c);
      if (!c.dead && (revents & POLLOUT)) {
        write_to(c);
        // Requests held back while the replies piled up.
        if (!c.dead && !c.in.empty() && !backlogged(c)) process(c);
      }
    } catch (const std::bad_alloc&) {
      drop(c, "out of memory while serving it");
    }
  }
  std::vector<Answer> answers;
  state_.expire(Clock::now(), answers);
  publish_counts();
  deliver(answers);
  const auto now = Clock::now();
  drop_silent(now);
  for (auto& [id, c] : conns_) {
    if (c.closing && now >= c.close_by) c.dead = true;
  }
  reap();
}

void ServerLoop::drop_silent(Clock::time_point now) {
  for (auto& [id, c] : conns_) {
    if (handshaking(c) && now >= c.hello_by) {
      drop(c, fmt::format("it said no hello within {} ms (not a ranks store client?)",
                          handshake_timeout_.count()));
    } else if (mid_request(c) && now >= c.request_by) {
      drop(c, fmt::format("{} bytes of a request arrived and the rest not within {} ms "
                          "(request_timeout)",
                          c.in.size(), request_timeout_.count()));
    }
  }
}

std::size_t ServerLoop::buffered_bytes() const {
  std::size_t total = 0;
  for (const auto& [id, c] : conns_) total += c.dead ? 0 : c.in.size();
  return total;
}

ServerLoop::Connection& ServerLoop::largest_buffer(Connection& reading) {
  Connection* largest = &reading;
  for (auto& [id, other] : conns_) {
    if (!other.dead && !other.closing && other.in.size() > largest->in.size()) largest = &other;
  }
  return *largest;
}

void ServerLoop::accept_all() {
  while (true) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    Fd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&address), &length,
                    SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        log(fmt::format("cannot accept more clients for now: {}", errno_text(errno)));
        listener_paused_until_ = Clock::now() + kAcceptPause;
      }
      return;  // EAGAIN, or a connection that went away before accept: nothing to do
    }
    set_no_delay(fd.get());
    // Room for one more in its handshake: the oldest goes (conns_ is in arrival order).
    std::size_t waiting = 0;
    Connection* oldest = nullptr;
    for (auto& [id, other] : conns_) {
      if (!handshaking(other)) continue;
      ++waiting;
      if (oldest == nullptr) oldest = &other;
    }
    if (waiting >= max_handshaking_ && oldest != nullptr) {
      drop(*oldest, fmt::format("{} connections were in their handshake at once (at most {}); "
                                "the oldest is closed",
                                waiting + 1, max_handshaking_));
    } else {
      std::size_t open = 0;
      for (const auto& [id, other] : conns_) open += other.dead ? 0 : 1;
      if (open >= max_connections_ && oldest != nullptr) {
        drop(*oldest, fmt::format("{} connections at once (at most {}, max_connections); the "
                                  "oldest still in its handshake is closed",
                                  open + 1, max_connections_));
      } else if (open >= max_connections_) {
        log(fmt::format("refusing the connection from {}: {} connections are open, every one "
                        "past its hello (at most {}, max_connections)",
                        address_text(reinterpret_cast<sockaddr*>(&address), length), open,
                        max_connections_));
        continue;  // fd closes here
      }
    }
    Connection c;
    c.id = next_id_++;
    c.peer = address_text(reinterpret_cast<sockaddr*>(&address), length);
    c.fd = std::move(fd);
    c.hello_by = Clock::now() + handshake_timeout_;
    conns_.emplace(c.id, std::move(c));
  }
}

void ServerLoop::read_from(Connection& c) {
  uint8_t chunk[kReadChunk];
  for (int round = 0; round < kReadsPerRound && !c.dead && !backlogged(c); ++round) {
    const ssize_t n = ::recv(c.fd.get(), chunk, sizeof chunk, 0);
    if (n > 0) {
      if (!c.closing) {
        if (c.in.empty()) c.request_by = Clock::now() + request_timeout_;
        c.in.insert(c.in.end(), chunk, chunk + n);
        const std::size_t total = buffered_bytes();
        if (total > max_buffered_) {
          // The connection holding the most gives way: one client that sends part of a huge
          // request and stalls cannot hold the cap against every other client for its
          // request_timeout.
          Connection& largest = largest_buffer(c);
          reject(largest, ErrorKind::Protocol,
                 fmt::format("the server holds {} of requests still arriving, more than the {} "
                             "it takes at once (max_buffered_bytes); this connection's {}, the "
                             "most of any, are refused",
                             describe_size(total), describe_size(max_buffered_),
                             describe_size(largest.in.size())));
          largest.in.clear();
          if (&largest == &c) continue;
        }
        process(c);
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    // The peer closed (or reset) the connection.
    if (c.closing || c.in.empty()) {
      drop(c, "");
    } else {
      drop(c, fmt::format("it closed the connection in the middle of a request ({} bytes of it "
                          "arrived)",
                          c.in.size()));
    }
    return;
  }
}

void ServerLoop::process(Connection& c) {
  std::size_t used = 0;
  while (!c.closing && !c.dead && !backlogged(c)) {
    const std::size_t available = c.in.size() - used;
    if (available == 0) break;
    if (state_.parked(c.id)) {
      reject(c, ErrorKind::Protocol,
             "it sent another request while its get/wait was still waiting; a client sends one "
             "request at a time");
      break;
    }
    if (available < wire::kHeaderBytes) break;
    const std::size_t length = load_u32(c.in.data() + used);
    const std::size_t limit = c.hello_done ? max_frame_ : wire::kMaxHelloFrame;
    if (length > limit) {
      reject(c, ErrorKind::Protocol,
             fmt::format("{} declares {} bytes, more than the {} this server accepts{}",
                         c.hello_done ? "a request" : "its first message", length,
                         describe_size(limit),
                         c.hello_done ? "" : " before a hello (not a ranks store client?)"));
      break;
    }
    if (available < wire::kHeaderBytes + length) break;
    std::span<const uint8_t> body(c.in.data() + used + wire::kHeaderBytes, length);
    used += wire::kHeaderBytes + length;
    wire::Request request;
    try {
      request = wire::decode_request(body);
    } catch (const DecodeError& e) {
      reject(c, ErrorKind::Protocol,
             fmt::format("malformed {}: {}{}", c.hello_done ? "request" : "first message", e.what(),
                         c.hello_done ? "" : " (not a ranks store client?)"));
      break;
    }
    if (!c.hello_done) {
      hello(c, request);
      continue;
    }
    if (request.op == Op::Hello) {
      reject(c, ErrorKind::Protocol, "it sent a second hello on one connection");
      break;
    }
    std::vector<Answer> answers;
    state_.handle(c.id, request, Clock::now(), answers);
    // Counts first: a client that has its reply may read them at once.
    publish_counts();
    deliver(answers);
  }
  if (c.closing) {
    c.in.clear();
  } else {
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(used));
    // What is left is the start of the next request: its own deadline.
    if (used > 0 && !c.in.empty()) c.request_by = Clock::now() + request_timeout_;
  }
}

void ServerLoop::hello(Connection& c, const wire::Request& request) {
  if (request.op != Op::Hello) {
    reject(c, ErrorKind::Protocol,
           fmt::format("its first request is {}, not hello (not a ranks store client?)",
                       wire::op_name(request.op)));
    return;
  }
  if (request.version != wire::kVersion) {
    reject(c, ErrorKind::Rendezvous,
           fmt::format("it speaks store protocol version {} and this server speaks version {}; "
                       "run the same ranks release on every rank",
                       request.version, wire::kVersion));
    return;
  }
  if (!same_token(request.token, token_)) {
    reject(c, ErrorKind::Rendezvous,
           token_.empty()
               ? std::string("it presented a token but this server has none; give the server "
                             "and every client the same token")
               : std::string("its token does not match the server's; give the server and every "
                             "client the same token"));
    return;
  }
  c.hello_done = true;
  c.counted = true;
  ++clients_;
  state_.set_clients(clients_.load());
  Reply reply;
  reply.version = wire::kVersion;
  reply.max_key = max_key_;
  reply.max_value = max_value_;
  queue(c, Op::Hello, reply);
}

void ServerLoop::deliver(std::vector<Answer>& answers) {
  for (Answer& a : answers) {
    auto it = conns_.find(a.conn);
    if (it == conns_.end() || it->second.dead) continue;
    queue(it->second, a.op, a.reply);
  }
  answers.clear();
}

void ServerLoop::queue(Connection& c, Op op, const Reply& reply) {
  if (c.out_sent == c.out.size()) {
    c.out.clear();
    c.out_sent = 0;
  }
  const std::vector<uint8_t> body = wire::encode_reply(op, reply);
  ByteWriter header;
  header.u32(static_cast<uint32_t>(body.size()));
  c.out.insert(c.out.end(), header.buffer().begin(), header.buffer().end());
  c.out.insert(c.out.end(), body.begin(), body.end());
  write_to(c);
}

void ServerLoop::write_to(Connection& c) {
  while (c.out_sent < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out_sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    drop(c, "");  // the peer is gone; its reply has nobody to read it
    return;
  }
  if (c.closing && !c.write_shut) {
    ::shutdown(c.fd.get(), SHUT_WR);
    c.write_shut = true;
  }
}

void ServerLoop::reject(Connection& c, ErrorKind kind, const std::string& reason) {
  log(fmt::format("closing the connection from {}: {}", c.peer, reason));
  Reply reply;
  reply.status = wire::Status::Error;
  reply.error = kind;
  reply.message = reason;
  c.closing = true;
  c.close_by = Clock::now() + kDrainTime;
  uncount(c);
  state_.forget(c.id);
  publish_counts();
  queue(c, Op::Hello, reply);
}

void ServerLoop::drop(Connection& c, const std::string& reason) {
  if (!reason.empty()) log(fmt::format("closing the connection from {}: {}", c.peer, reason));
  c.dead = true;
}

void ServerLoop::reap() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (!it->second.dead) {
      ++it;
      continue;
    }
    state_.forget(it->first);
    uncount(it->second);
    it = conns_.erase(it);
  }
  state_.set_clients(clients_.load());
  publish_counts();
}

bool ServerLoop::backlogged(const Connection& c) const {
  return !c.closing && c.out.size() - c.out_sent > max_frame_;
}

void ServerLoop::uncount(Connection& c) {
  if (!c.counted) return;
  c.counted = false;
  --clients_;
}

void ServerLoop::publish_counts() { parked_ = static_cast<int>(state_.parked_count()); }

}  // namespace ranks::store
