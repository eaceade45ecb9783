#include "ranks/store/tcp_client.hpp"

#include <fmt/format.h>

#include "ranks/errors.hpp"
#include "ranks/store/messages.hpp"

namespace ranks::store {

namespace {

using Why = ConnectionError::Why;

wire::Reply exchange(int fd, const wire::Request& request, std::size_t max_reply,
                     Clock::time_point deadline) {
  const std::vector<uint8_t> frame = wire::frame(wire::encode_request(request));
  send_all(fd, frame.data(), frame.size(), deadline);
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

}  // namespace

ClientConnection::ClientConnection(const std::string& host, int port, const std::string& token,
                                   Clock::time_point deadline, bool server_was_up)
    : host_(host), port_(port), address_(host_port(host, port)) {
  const auto start = Clock::now();
  const std::string last_error = retry_until(deadline, [&] {
    std::string why = try_connect(token, deadline);
    if (!why.empty() && server_was_up && refused_) {
      throw RankFailure(fmt::format(
          "tcp store {}: the server has gone: it served this client before and now refuses "
          "connections ({}); the process that hosted it (rank 0, or the launcher) has exited",
          address_, why));
    }
    return why;
  });
  if (last_error.empty()) return;
  throw Timeout(fmt::format(
      "tcp store {}: could not reach the server within {} (last attempt: {}); check that the "
      "server (rank 0 or the launcher) is running and that host and port are right",
      address_,
      describe_duration(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)),
      last_error));
}

std::string ClientConnection::try_connect(const std::string& token, Clock::time_point deadline) {
  ConnectAttempt attempt = connect_stream(host_, port_, deadline);
  refused_ = attempt.refused;
  if (!attempt.fd) return attempt.why;
  fd_ = std::move(attempt.fd);
  std::string why = handshake(token, deadline);
  if (!why.empty()) fd_.reset();
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
