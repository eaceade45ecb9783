// The TCP store server against strangers: where it listens, a handshake deadline, a cap on
// connections in their handshake, a stored-bytes quota, refusals logged once per interval.

#include "store_tcp_harness.hpp"

namespace ranks::testing {
namespace {

using namespace store_tcp;
using namespace std::chrono_literals;

TEST(TcpStore, AServerListensOnlyWhereItIsAsked) {
  TCPStoreOptions everywhere = server_options();
  everywhere.is_server = true;
  TCPStore open_server(everywhere);
  EXPECT_TRUE(accepts("127.0.0.1", open_server.port()));
  EXPECT_TRUE(accepts("127.0.0.2", open_server.port()));

  TCPStoreOptions loopback = server_options();
  loopback.is_server = true;
  loopback.listen_host = "127.0.0.1";
  TCPStore server(loopback);
  EXPECT_TRUE(accepts("127.0.0.1", server.port()));
  EXPECT_FALSE(accepts("127.0.0.2", server.port()));
  auto c = client(server.port(), 5s);
  c->set("k", bytes("v"));
  EXPECT_EQ(c->get("k"), bytes("v"));
}

TEST(TcpStore, AListenAddressThatIsNotThisHostsIsNamed) {
  TCPStoreOptions elsewhere = server_options();
  elsewhere.is_server = true;
  elsewhere.listen_host = "192.0.2.1";  // TEST-NET-1: never an address of a test machine
  try {
    TCPStore server(elsewhere);
    ADD_FAILURE() << "listened on 192.0.2.1";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "192.0.2.1 is not an address of this host")) << e.what();
  }
}

TEST(TcpStore, RefusalsAreLoggedOncePerIntervalWithACount) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.is_server = true;
  o.token = "job-secret";
  o.log_interval = std::chrono::hours(1);
  constexpr int kStrays = 20;
  {
    TCPStore server(o);
    for (int i = 0; i < kStrays; ++i) {
      RawClient raw(server.port());
      raw.hello("guess");
      ASSERT_TRUE(raw.reply(wire::Op::Hello));
      EXPECT_TRUE(raw.closed_by_server());
    }
    EXPECT_EQ(log.count(), 1u) << log.all();
    EXPECT_TRUE(Contains(log.all(), "token does not match"));
  }
  // The server is gone: what it held back went out with its count.
  EXPECT_EQ(log.count(), 2u) << log.all();
  EXPECT_TRUE(Contains(log.all(), std::to_string(kStrays - 1) + " more like it since, the latest: "
                                  "closing the connection from 127.0.0.1:"));
}

TEST(TcpStore, AConnectionThatSaysNoHelloIsClosedAndTheJobServed) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.is_server = true;
  o.handshake_timeout = 200ms;
  TCPStore server(o);
  RawClient silent(server.port());
  EXPECT_TRUE(silent.closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "it said no hello within 200 ms")) << log.all();
  auto member = client(server.port(), 5s);
  member->set("k", bytes("v"));
  EXPECT_EQ(member->get("k"), bytes("v"));
}

TEST(TcpStore, StrangersInTheirHandshakeCannotCrowdOutTheJob) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.is_server = true;
  o.max_handshaking = 4;
  o.handshake_timeout = std::chrono::hours(1);
  TCPStore server(o);
  std::vector<std::unique_ptr<RawClient>> strangers;
  for (int i = 0; i < 10; ++i) strangers.push_back(std::make_unique<RawClient>(server.port()));
  auto member = client(server.port(), 5s);  // the 11th: the oldest stranger makes room
  member->set("k", bytes("v"));
  EXPECT_EQ(member->get("k"), bytes("v"));
  EXPECT_TRUE(strangers.front()->closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "in their handshake at once (at most 4); the oldest is closed"))
      << log.all();
}

TEST(TcpStore, TheStoredBytesQuotaRefusesWhatWouldPassItAndKeepsTheRest) {
  TCPStoreOptions o = server_options();
  o.is_server = true;
  o.max_stored_bytes = 1000;
  TCPStore server(o);
  auto c = client(server.port(), 5s);
  c->set("a", Bytes(600, 1));  // 601 bytes held
  try {
    c->set("b", Bytes(600, 2));
    ADD_FAILURE() << "the store went past its quota";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(Contains(e.what(), "may hold at most 1000 bytes")) << e.what();
    EXPECT_TRUE(Contains(e.what(), "max_stored_bytes")) << e.what();
  }
  EXPECT_FALSE(c->check({"b"}));
  c->set("a", Bytes(900, 3));  // a bigger value for the same key still fits: 901 bytes
  EXPECT_EQ(c->get("a"), Bytes(900, 3));
  EXPECT_TRUE(c->delete_key("a"));
  c->set("b", Bytes(600, 2));  // room again
  EXPECT_EQ(c->add("n", 5), 5);
  EXPECT_EQ(c->get("b"), Bytes(600, 2));
}

// The audit's huge frames: connections that each begin a large set and hold it. Past the cap on
// bytes still arriving, the connection holding the most is refused with an error naming the cap
// (which one depends on the order the server reads them in: exactly one, since two of them stay
// under the cap); the others are closed when their requests stall, and the job is served all
// along.
TEST(TcpStore, TheBufferedBytesCapRefusesOneOfTheFloods) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.is_server = true;
  o.max_buffered_bytes = 1 << 20;
  o.request_timeout = 1s;
  TCPStore server(o);
  // Each declares a set of 3 MiB (within max_value_bytes) and sends 400 KiB of it: any two hold
  // 800 KiB, all three would hold 1200 KiB.
  const Bytes part = [] {
    Bytes frame = wire::frame(wire::encode_request(set_request("huge", Bytes(3 << 20, 7))));
    frame.resize(400 << 10);
    return frame;
  }();
  std::vector<std::unique_ptr<RawClient>> floods;
  for (int i = 0; i < 3; ++i) {
    floods.push_back(std::make_unique<RawClient>(server.port()));
    floods.back()->hello();
    ASSERT_TRUE(floods.back()->reply(wire::Op::Hello).has_value());
  }
  for (auto& flood : floods) flood->send_bytes(part);
  int refused = 0;
  for (auto& flood : floods) {
    const std::optional<wire::Reply> answer = flood->reply(wire::Op::Set);
    if (!answer) continue;  // closed when its request stalled
    ++refused;
    EXPECT_NE(answer->status, wire::Status::Ok);
    EXPECT_TRUE(Contains(answer->message, "more than the 1 MiB it takes at once "
                                          "(max_buffered_bytes)"))
        << answer->message;
  }
  EXPECT_EQ(refused, 1) << log.all();
  auto member = client(server.port(), 5s);
  member->set("k", bytes("v"));
  EXPECT_EQ(member->get("k"), bytes("v"));
}

// One client past its hello sends most of the cap's worth of a huge request and stalls: a job's
// client that then sends a request of its own is served, and the staller is the one refused (it
// used to hold the cap for its whole request_timeout, refusing every request of 256 B or more).
TEST(TcpStore, OneStalledClientCannotHoldTheBufferCapAgainstTheOthers) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.is_server = true;
  o.max_buffered_bytes = 1 << 20;
  o.request_timeout = std::chrono::hours(1);
  TCPStore server(o);
  RawClient hog(server.port());
  hog.hello();
  ASSERT_TRUE(hog.reply(wire::Op::Hello).has_value());
  Bytes part = wire::frame(wire::encode_request(set_request("huge", Bytes(3 << 20, 7))));
  part.resize(900 << 10);
  hog.send_bytes(part);
  auto member = client(server.port(), 5s);
  const Bytes value(200 << 10, 3);
  member->set("k", value);
  EXPECT_EQ(member->get("k"), value);
  const std::optional<wire::Reply> answer = hog.reply(wire::Op::Set);
  ASSERT_TRUE(answer.has_value()) << log.all();
  EXPECT_NE(answer->status, wire::Status::Ok);
  EXPECT_TRUE(Contains(answer->message, "the most of any, are refused")) << answer->message;
}

TEST(TcpStore, ARequestThatStallsHalfwayIsClosedAtItsDeadline) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.is_server = true;
  o.request_timeout = 200ms;
  TCPStore server(o);
  RawClient stalled(server.port());
  stalled.hello();
  ASSERT_TRUE(stalled.reply(wire::Op::Hello).has_value());
  Bytes frame = wire::frame(wire::encode_request(set_request("k", Bytes(1000, 1))));
  frame.resize(frame.size() / 2);
  stalled.send_bytes(frame);
  EXPECT_TRUE(stalled.closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "and the rest not within 200 ms (request_timeout)"))
      << log.all();
  auto member = client(server.port(), 5s);  // a request that arrives whole is served
  member->set("k", Bytes(1000, 1));
  EXPECT_EQ(member->get("k"), Bytes(1000, 1));
}

TEST(TcpStore, TheConnectionCapMakesRoomFromStrangersFirst) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.is_server = true;
  o.max_connections = 3;
  o.handshake_timeout = std::chrono::hours(1);
  TCPStore server(o);  // its own client holds one connection
  auto member = client(server.port(), 5s);
  member->set("k", bytes("v"));  // the member's connection: 2 open, both past hello
  RawClient stranger(server.port());  // the third
  RawClient another(server.port());   // a fourth: the stranger makes room
  EXPECT_TRUE(stranger.closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "(at most 3, max_connections); the oldest still in its "
                                  "handshake is closed"))
      << log.all();
  EXPECT_EQ(member->get("k"), bytes("v"));
  // Every connection past its hello: one more is refused.
  another.hello();
  ASSERT_TRUE(another.reply(wire::Op::Hello).has_value());
  RawClient refused(server.port());
  EXPECT_TRUE(refused.closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "every one past its hello (at most 3, max_connections)"))
      << log.all();
  EXPECT_EQ(member->get("k"), bytes("v"));
}

}  // namespace
}  // namespace ranks::testing
