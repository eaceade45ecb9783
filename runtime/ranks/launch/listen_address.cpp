#include "ranks/launch/listen_address.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ranks/errors.hpp"

namespace ranks::launch {

namespace {

bool is_loopback_literal(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return host == "localhost";
}

// The local address of the route towards a documentation-only address (RFC 5737): connecting a
// UDP socket only picks the route, no packet is sent.
std::string default_route_address() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  sockaddr_in far{};
  far.sin_family = AF_INET;
  far.sin_port = htons(9);
  ::inet_pton(AF_INET, "192.0.2.1", &far.sin_addr);
  std::string address;
  sockaddr_in local{};
  socklen_t length = sizeof local;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&far), sizeof far) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr) address = text;
  }
  ::close(fd);
  return address;
}

}  // namespace

bool resolves_to_loopback_only(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool loopback_only = true;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      loopback_only = loopback_only && (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      loopback_only = loopback_only && IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
    }
  }
  ::freeaddrinfo(found);
  return loopback_only;
}

std::string listen_address_for(const std::string& host) {
  if (is_loopback_literal(host) || !resolves_to_loopback_only(host)) return host;
  const std::string routed = default_route_address();
  if (routed.empty() || routed.rfind("127.", 0) == 0) {
    throw RendezvousError(fmt::format(
        "'{}' means loopback on this host, where other nodes cannot connect, and this host has "
        "no route to another: give MASTER_ADDR as this host's address on the network the other "
        "nodes reach it by",
        host));
  }
  return routed;
}

}  // namespace ranks::launch
