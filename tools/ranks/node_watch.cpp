#include "node_watch.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "node_handshake.hpp"
#include "ranks/errors.hpp"
#include "ranks/store/tcp_store.hpp"

namespace ranks::cli {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kPingInterval = 1s;
constexpr auto kHelloTimeout = 5s;
constexpr size_t kMaxLine = 256;  // every line of the protocol is short; a longer one is a stranger
// Connections that have not yet proved the secret; past this many, the oldest is dropped, so a
// stranger who opens many cannot hold the launcher's descriptors.
constexpr size_t kMaxPending = 16;

std::string key_of(int node) { return fmt::format("ranks/launcher/node/{}", node); }

bool send_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
         static_cast<ssize_t>(text.size());
}

// The local address this host uses to reach host:port (no packet is sent: a UDP connect only
// picks the route), so that the launcher listens on that interface only.
std::optional<sockaddr_in> local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return std::nullopt;
  }
  std::optional<sockaddr_in> local;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) local = address;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return local;
}

// One line from fd within `limit` (the connecting side of the handshake, which waits for its
// peer's answers); nullopt when none came, or a longer one.
std::optional<std::string> read_line(int fd, std::chrono::seconds limit) {
  timeval within{static_cast<time_t>(limit.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &within, sizeof within);
  std::string line;
  char c = 0;
  while (line.size() < kMaxLine && ::recv(fd, &c, 1, 0) == 1) {
    if (c == '\n') return line;
    line += c;
  }
  return std::nullopt;
}

}  // namespace

struct NodeWatch::State {
  struct Peer {
    int node = -1;
    int fd = -1;
    std::string partial;
    Clock::time_point last_heard;
    bool said_goodbye = false;
  };
  // A connection to the listener that has been sent a challenge and not yet answered it.
  struct Pending {
    int fd = -1;
    std::string challenge;
    std::string partial;
    Clock::time_point deadline;
  };

  NodeWatchSetup setup;
  std::atomic<bool> stopping{false};
  int wake[2] = {-1, -1};
  int listener = -1;
  mutable std::mutex mutex;  // peers' last_heard, vanished
  std::vector<Peer> peers;
  std::vector<Pending> pending;  // the watch thread's own
  std::optional<int> vanished;
  std::thread thread;

  bool listen_here(std::string& published) {
    const auto local = local_address_towards(setup.master_addr, setup.master_port);
    if (!local) return false;
    sockaddr_in address = *local;
    address.sin_port = 0;
    listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t length = sizeof address;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener, setup.nnodes) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return false;
    }
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &address.sin_addr, ip, sizeof ip);
    published = fmt::format("{}:{}", ip, ntohs(address.sin_port));
    return true;
  }

  // The job's store, once rank 0 has started it; nullptr when stopping, or when the store turns
  // this launcher away (then there is nothing to watch with).
  std::unique_ptr<TCPStore> join_store() {
    while (!stopping) {
      try {
        return std::make_unique<TCPStore>(setup.master_addr, setup.master_port, -1, false, 1000ms,
                                          setup.token);
      } catch (const Timeout&) {
        // rank 0 has not started it yet
      } catch (const Error&) {
        return nullptr;
      }
    }
    return nullptr;
  }

  int connect_to(const std::string& address) {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) return -1;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
    if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr) != 1) return -1;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }

  void add_peer(int node, int fd) {
    std::lock_guard lock(mutex);
    peers.push_back(Peer{node, fd, {}, Clock::now(), false});
    if (static_cast<int>(peers.size()) == setup.nnodes - 1) {
      std::fprintf(stderr, "ranks run: node %d is in touch with the launchers of the other %d\n",
                   setup.node_rank, setup.nnodes - 1);
    }
  }

  // A launcher after this one connects: it is sent a challenge, and becomes a peer once it has
  // answered (node_handshake.hpp).
  void accept_peer() {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    Pending connection{fd, handshake::new_challenge(), {}, Clock::now() + kHelloTimeout};
    if (!send_line(fd, handshake::challenge_line(connection.challenge))) {
      ::close(fd);
      return;
    }
    if (pending.size() == kMaxPending) {
      ::close(pending.front().fd);
      pending.erase(pending.begin());
    }
    pending.push_back(std::move(connection));
  }

  // Reads what a connection being checked sent; true when it is settled (a peer now, or closed).
  bool read_pending(Pending& connection) {
    char buffer[kMaxLine];
    const ssize_t n = ::recv(connection.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n > 0) connection.partial.append(buffer, static_cast<size_t>(n));
    const size_t end = connection.partial.find('\n');
    if (end == std::string::npos && n > 0 && connection.partial.size() <= kMaxLine) return false;
    const auto hello = end == std::string::npos
                           ? std::nullopt
                           : handshake::parse_hello(connection.partial.substr(0, end));
    const bool proved =
        hello && hello->node > setup.node_rank && hello->node < setup.nnodes &&
        handshake::proves(hello->proof, handshake::proof(setup.token, handshake::Role::kConnector,
                                                         hello->node, connection.challenge)) &&
        send_line(connection.fd,
                  handshake::welcome_line(handshake::proof(setup.token, handshake::Role::kListener,
                                                           hello->node, hello->challenge)));
    if (!proved) {
      ::close(connection.fd);
      return true;
    }
    const int flags = ::fcntl(connection.fd, F_GETFL);
    ::fcntl(connection.fd, F_SETFL, flags & ~O_NONBLOCK);
    add_peer(hello->node, connection.fd);
    return true;
  }

  // Connects to the launcher of an earlier node at address and proves this one's secret to it,
  // and it to this one; the connection, or -1.
  int reach(int node, const std::string& address) {
    const int fd = connect_to(address);
    if (fd < 0) return -1;
    const auto challenge = read_line(fd, kHelloTimeout);
    const auto theirs = challenge ? handshake::parse_challenge(*challenge) : std::nullopt;
    handshake::Hello hello{setup.node_rank, handshake::new_challenge(), {}};
    if (theirs) {
      hello.proof =
          handshake::proof(setup.token, handshake::Role::kConnector, setup.node_rank, *theirs);
    }
    const auto welcome = theirs && send_line(fd, handshake::hello_line(hello))
                             ? read_line(fd, kHelloTimeout)
                             : std::nullopt;
    const auto proof = welcome ? handshake::parse_welcome(*welcome) : std::nullopt;
    if (!proof ||
        !handshake::proves(*proof, handshake::proof(setup.token, handshake::Role::kListener,
                                                    setup.node_rank, hello.challenge))) {
      std::fprintf(stderr,
                   "ranks run: node %d's launcher at %s did not prove the job's secret; not "
                   "watching it\n",
                   node, address.c_str());
      ::close(fd);
      return -1;
    }
    timeval forever{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
    return fd;
  }

  // Reads what a peer sent; false when its connection closed.
  bool read_peer(Peer& peer) {
    char buffer[kMaxLine];
    const ssize_t n = ::recv(peer.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
    if (n < 0) return true;
    peer.partial.append(buffer, static_cast<size_t>(n));
    for (size_t end; (end = peer.partial.find('\n')) != std::string::npos;) {
      const std::string line = peer.partial.substr(0, end);
      peer.partial.erase(0, end + 1);
      if (line == "ping") send_line(peer.fd, "pong");
      if (line == "bye") peer.said_goodbye = true;
    }
    if (peer.partial.size() > kMaxLine) return false;
    std::lock_guard lock(mutex);
    peer.last_heard = Clock::now();
    return true;
  }

  void run() {
    std::string published;
    if (!listen_here(published)) return;
    std::unique_ptr<TCPStore> store = join_store();
    if (!store) return;
    try {
      store->set(key_of(setup.node_rank),
                 std::vector<uint8_t>(published.begin(), published.end()));
      for (int node = 0; node < setup.node_rank && !stopping; ++node) {
        std::vector<uint8_t> address;
        while (!stopping) {
          try {
            store->wait({key_of(node)}, 1000ms);
            address = store->get(key_of(node));
            break;
          } catch (const Timeout&) {
          }
        }
        const int fd = reach(node, std::string(address.begin(), address.end()));
        if (fd >= 0) add_peer(node, fd);
      }
    } catch (const Error&) {
      // the store went away (rank 0 ended): watch whom this launcher reached
    }
    store.reset();
    auto next_ping = Clock::now();
    while (!stopping) {
      std::vector<pollfd> fds = {{wake[0], POLLIN, 0}, {listener, POLLIN, 0}};
      for (const Peer& p : peers) fds.push_back({p.fd, POLLIN, 0});
      const size_t polled_peers = peers.size();
      for (const Pending& c : pending) fds.push_back({c.fd, POLLIN, 0});
      auto until = next_ping;
      for (const Pending& c : pending) until = std::min(until, c.deadline);
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max(Clock::duration::zero(), until - Clock::now()));
      ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
      // Connections being checked, from the last (erasing one shifts none before it).
      for (size_t i = pending.size(); i-- > 0;) {
        bool settled = fds[2 + polled_peers + i].revents != 0 && read_pending(pending[i]);
        if (!settled && Clock::now() >= pending[i].deadline) {
          ::close(pending[i].fd);
          settled = true;
        }
        if (settled) pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      }
      if (fds[1].revents != 0) accept_peer();
      for (size_t i = 0; i < polled_peers; ++i) {
        if (fds[i + 2].revents == 0 || read_peer(peers[i])) continue;
        std::lock_guard lock(mutex);
        if (!peers[i].said_goodbye && !vanished) vanished = peers[i].node;
        ::close(peers[i].fd);
        peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(i));
        break;  // fds no longer lines up with peers: poll again
      }
      if (Clock::now() >= next_ping) {
        for (const Peer& p : peers) send_line(p.fd, "ping");
        next_ping = Clock::now() + kPingInterval;
      }
    }
    for (Peer& p : peers) {
      send_line(p.fd, "bye");
      ::close(p.fd);
    }
    for (Pending& c : pending) ::close(c.fd);
  }
};

NodeWatch::NodeWatch(NodeWatchSetup setup) : state_(std::make_shared<State>()) {
  state_->setup = std::move(setup);
  if (::pipe2(state_->wake, O_CLOEXEC) != 0) return;
  state_->thread = std::thread([state = state_] { state->run(); });
}

NodeWatch::~NodeWatch() {
  state_->stopping = true;
  if (state_->wake[1] >= 0) [[maybe_unused]] ssize_t n = ::write(state_->wake[1], "x", 1);
  if (state_->thread.joinable()) state_->thread.join();
  for (int fd : {state_->wake[0], state_->wake[1], state_->listener}) {
    if (fd >= 0) ::close(fd);
  }
}

std::optional<int> NodeWatch::vanished() const {
  std::lock_guard lock(state_->mutex);
  return state_->vanished;
}

std::vector<int> NodeWatch::silent(std::chrono::milliseconds for_at_least) const {
  std::lock_guard lock(state_->mutex);
  std::vector<int> nodes;
  for (const auto& p : state_->peers) {
    if (Clock::now() - p.last_heard >= for_at_least) nodes.push_back(p.node);
  }
  return nodes;
}

std::string NodeWatch::describe(int node) const {
  const int first = node * state_->setup.nproc;
  const int last = first + state_->setup.nproc - 1;
  return first == last ? fmt::format("node {} (rank {})", node, first)
                       : fmt::format("node {} (ranks {}-{})", node, first, last);
}

}  // namespace ranks::cli
