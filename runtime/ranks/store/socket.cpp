#include "ranks/store/socket.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace ranks::store {

std::string lower_first(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

std::string errno_text(int err) {
  char buffer[256];
  // GNU strerror_r returns the message, which may or may not be in buffer.
  return lower_first(strerror_r(err, buffer, sizeof buffer));
}

std::string host_port(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::string address_text(const sockaddr* address, socklen_t length) {
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  if (getnameinfo(address, length, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "unknown address";
  }
  std::string text = host;
  // Show an IPv4 peer of a dual-stack socket as plain IPv4.
  if (text.rfind("::ffff:", 0) == 0 && text.find('.') != std::string::npos) text = text.substr(7);
  return host_port(text, std::atoi(port));
}

void set_no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace ranks::store
