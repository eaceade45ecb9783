#pragma once
// The few POSIX socket pieces the TCP store's client and server share.

#include <sys/socket.h>

#include <string>

#include "ranks/store/fd.hpp"

namespace ranks::store {

// strerror for err, thread-safe, starting lower-case like every message of the library.
std::string errno_text(int err);
std::string lower_first(std::string text);
// "host:port", with brackets around an IPv6 literal.
std::string host_port(const std::string& host, int port);
// The numeric address of a socket address ("127.0.0.1:5555", "[::1]:5555").
std::string address_text(const sockaddr* address, socklen_t length);

void set_no_delay(int fd);

}  // namespace ranks::store
