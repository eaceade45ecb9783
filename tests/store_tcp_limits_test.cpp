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

}  // namespace
}  // namespace ranks::testing
