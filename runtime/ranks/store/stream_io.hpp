#pragma once
// Deadline-bound I/O on a non-blocking TCP socket: connecting to a host that may not be listening
// yet, sending, and receiving exact sizes. Every store client (the library's own protocol and
// torch's) shares these.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "ranks/store/deadline.hpp"
#include "ranks/store/fd.hpp"

namespace ranks::store {

// Why a call on an established connection failed. Each client turns it into a ranks error that
// says which call it was; the connection is unusable afterwards.
class ConnectionError : public std::runtime_error {
 public:
  enum class Why { Lost, Overdue, Malformed };
  ConnectionError(Why why, const std::string& what) : std::runtime_error(what), why_(why) {}
  Why why() const { return why_; }

 private:
  Why why_;
};

// Blocks until fd is ready for events or deadline passes. Looks at least once, so that what
// is already there (a refusal, a reply) is seen even at the deadline. Throws ConnectionError.
void wait_ready(int fd, short events, Clock::time_point deadline);

// Throw ConnectionError (Lost, Overdue).
void send_all(int fd, const uint8_t* data, std::size_t size, Clock::time_point deadline);
void recv_exact(int fd, uint8_t* out, std::size_t size, Clock::time_point deadline);

// One attempt to connect to host:port: each address the name resolves to, in turn, by deadline.
// Returns the connected socket (non-blocking, no Nagle), or an empty Fd with why set (and
// refused, when the last address tried had nothing listening). Throws RendezvousError when the
// name does not resolve (a temporary resolver failure is a why, worth retrying).
struct ConnectAttempt {
  Fd fd;
  std::string why;
  bool refused = false;
};
ConnectAttempt connect_stream(const std::string& host, int port, Clock::time_point deadline);

// Calls attempt until it returns "" or deadline passes, pausing between tries with a jittered
// exponential backoff (10 ms doubling to 1 s; the jitter spreads the retries of many ranks that
// all started at once). Returns "" on success, else the last attempt's why. attempt may throw
// to give up early.
std::string retry_until(Clock::time_point deadline, const std::function<std::string()>& attempt);

}  // namespace ranks::store
