// TCPStore beyond the shared contract: server-side parking, deadlines, many clients and
// processes, size limits, the token, hostile bytes on the socket, a client that starts before
// its server, and a clean shutdown. Raw sockets speak the wire format (ranks/store/wire.hpp)
// where a well-behaved client would never go.

#include "store_tcp_harness.hpp"

namespace ranks::testing {
namespace {

using namespace store_tcp;
using namespace std::chrono_literals;

TEST(TcpStore, PortZeroPicksDistinctFreePorts) {
  TCPStore a("127.0.0.1", 0, 1, true, 5s);
  TCPStore b("127.0.0.1", 0, 1, true, 5s);
  EXPECT_GT(a.port(), 0);
  EXPECT_GT(b.port(), 0);
  EXPECT_NE(a.port(), b.port());
  ASSERT_NE(a.server(), nullptr);
  EXPECT_EQ(a.server()->port(), a.port());
  EXPECT_EQ(client(a.port())->server(), nullptr);
}

TEST(TcpStore, AServerPortAlreadyInUseIsARendezvousError) {
  TCPStoreServer first(server_options());
  TCPStoreOptions o = server_options();
  o.port = first.port();
  try {
    TCPStoreServer second(o);
    FAIL() << "two servers listen on one port";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "already in use"));
    EXPECT_TRUE(Contains(e.what(), std::to_string(first.port())));
  }
}

TEST(TcpStore, AParkedGetIsAnsweredByALaterSet) {
  TCPStoreServer server(server_options());
  auto getter = client(server.port());
  auto setter = client(server.port());
  Bytes got;
  std::jthread waiting = checked_thread([&] { got = getter->get("late"); });
  until([&] { return server.parked_requests() == 1; });
  EXPECT_TRUE(got.empty());
  setter->set("late", bytes("value"));
  waiting.join();
  EXPECT_EQ(got, bytes("value"));
  EXPECT_EQ(server.parked_requests(), 0);
}

TEST(TcpStore, ManyClientsParkedAtOnceAreAllReleasedByOneSet) {
  TCPStoreServer server(server_options());
  constexpr int kClients = 16;
  std::vector<std::unique_ptr<TCPStore>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(client(server.port()));
  EXPECT_EQ(server.num_clients(), kClients);
  std::atomic<int> released{0};
  std::vector<std::jthread> threads;
  for (auto& c : clients) {
    threads.push_back(checked_thread([&released, store = c.get()] {
      store->wait({"go", "also"}, 30s);
      ++released;
    }));
  }
  until([&] { return server.parked_requests() == kClients; });
  auto setter = client(server.port());
  setter->set("go", {});
  EXPECT_EQ(released.load(), 0);  // "also" is still missing
  setter->set("also", {});
  for (std::jthread& t : threads) t.join();
  EXPECT_EQ(released.load(), kClients);
}

TEST(TcpStore, TimeoutNamesKeysServerAndHowManyClientsJoined) {
  TCPStoreOptions o = server_options();
  o.world_size = 3;
  TCPStoreServer server(o);
  auto store = client(server.port(), 100ms, {}, 3);
  try {
    store->get("rank-2-address");
    FAIL() << "get of a missing key returned";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "'rank-2-address'"));
    EXPECT_TRUE(Contains(e.what(), "127.0.0.1:" + std::to_string(server.port())));
    EXPECT_TRUE(Contains(e.what(), "1/3 clients connected"));
  }
  // The server dropped the parked request at its deadline; the connection still works.
  EXPECT_EQ(server.parked_requests(), 0);
  store->set("k", bytes("v"));
  EXPECT_EQ(store->get("k"), bytes("v"));
}

TEST(TcpStore, ThreadsSharingOneClientDoNotQueueBehindAParkedGet) {
  TCPStoreServer server(server_options());
  auto shared = client(server.port());
  std::jthread waiting = checked_thread([&] { EXPECT_EQ(shared->get("k"), bytes("v")); });
  until([&] { return server.parked_requests() == 1; });
  shared->set("k", bytes("v"));  // from the same TCPStore object, while its get is parked
  waiting.join();
}

TEST(TcpStore, OversizeKeysAndValuesAreRejectedBeforeSending) {
  TCPStoreOptions o = server_options();
  o.max_value_bytes = 1024;
  TCPStoreServer server(o);
  auto store = client(server.port());
  try {
    store->set(std::string(5000, 'k'), bytes("v"));
    FAIL() << "a 5000-byte key was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(Contains(e.what(), "has 5000 bytes"));
    EXPECT_TRUE(Contains(e.what(), "limit of 4 KiB"));
  }
  try {
    store->set("big", Bytes(2000, 1));
    FAIL() << "a 2000-byte value was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(Contains(e.what(), "'big'"));
    EXPECT_TRUE(Contains(e.what(), "limit of 1 KiB"));
    EXPECT_TRUE(Contains(e.what(), "max_value_bytes"));
  }
  EXPECT_THROW(store->wait({std::string(4097, 'w')}, 1s), InvalidArgument);
  store->set("fits", Bytes(1024, 2));
  EXPECT_EQ(store->get("fits"), Bytes(1024, 2));
  EXPECT_FALSE(store->check({"big"}));
}

TEST(TcpStore, TheServerRejectsOversizeRequestsAndKeepsServing) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.max_value_bytes = 1024;
  TCPStoreServer server(o);
  RawClient raw(server.port());
  raw.hello();
  ASSERT_EQ(raw.reply(wire::Op::Hello)->status, wire::Status::Ok);
  // A key and a value over the limits, in frames the server can read: refused, connection kept.
  raw.send(set_request(std::string(5000, 'k'), {}));
  std::optional<wire::Reply> r = raw.reply(wire::Op::Set);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, wire::Status::Error);
  EXPECT_EQ(r->error, wire::ErrorKind::InvalidArgument);
  EXPECT_TRUE(Contains(r->message, "limit of 4 KiB"));
  raw.send(set_request("big", Bytes(1500, 1)));
  r = raw.reply(wire::Op::Set);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error, wire::ErrorKind::InvalidArgument);
  raw.send(set_request("small", bytes("ok")));
  r = raw.reply(wire::Op::Set);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, wire::Status::Ok);
  // A frame longer than anything the server accepts: refused and that connection closed.
  raw.send_bytes({0x7f, 0xff, 0xff, 0xff, 2});
  r = raw.reply(wire::Op::Set);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error, wire::ErrorKind::Protocol);
  EXPECT_TRUE(raw.closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "declares 2147483647 bytes"));
  // Everyone else is still served.
  auto store = client(server.port());
  EXPECT_EQ(store->get("small"), bytes("ok"));
  EXPECT_FALSE(store->check({"big"}));
}

TEST(TcpStore, AWrongTokenIsTurnedAwayAndCannotTouchKeys) {
  LogLines log;
  TCPStoreOptions o = server_options(&log);
  o.token = "job-secret";
  TCPStoreServer server(o);
  try {
    client(server.port(), 5s, "guess");
    FAIL() << "a client with the wrong token connected";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "token does not match"));
    EXPECT_TRUE(Contains(e.what(), "127.0.0.1:" + std::to_string(server.port())));
  }
  EXPECT_THROW(client(server.port(), 5s), RendezvousError);  // no token at all
  // A raw client that ignores the refusal and writes anyway: its connection is closed and
  // nothing it sent is applied.
  RawClient raw(server.port());
  raw.hello("guess");
  std::optional<wire::Reply> r = raw.reply(wire::Op::Hello);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, wire::Status::Error);
  EXPECT_EQ(r->error, wire::ErrorKind::Rendezvous);
  raw.send(set_request("stolen", bytes("x")));
  EXPECT_TRUE(raw.closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "token does not match"));
  auto good = client(server.port(), 5s, "job-secret");
  EXPECT_FALSE(good->check({"stolen"}));
  good->set("k", bytes("v"));
  EXPECT_EQ(good->get("k"), bytes("v"));
  EXPECT_EQ(server.num_clients(), 1);
}

TEST(TcpStore, AClientOfAnotherProtocolVersionIsTurnedAway) {
  LogLines log;
  TCPStoreServer server(server_options(&log));
  RawClient raw(server.port());
  raw.hello({}, 99);
  std::optional<wire::Reply> r = raw.reply(wire::Op::Hello);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error, wire::ErrorKind::Rendezvous);
  EXPECT_TRUE(Contains(r->message, "version 99"));
  EXPECT_TRUE(raw.closed_by_server());
  EXPECT_TRUE(Contains(log.all(), "version 99"));
}

TEST(TcpStore, GarbageBytesCloseThatConnectionAndTheServerKeepsServing) {
  LogLines log;
  TCPStoreServer server(server_options(&log));
  auto before = client(server.port());
  before->set("k", bytes("v"));
  {
    RawClient http(server.port());
    http.send_bytes(bytes("GET / HTTP/1.1\r\nHost: example\r\n\r\n"));
    EXPECT_TRUE(http.closed_by_server());
  }
  EXPECT_TRUE(Contains(log.all(), "closing the connection from 127.0.0.1:"));
  EXPECT_TRUE(Contains(log.all(), "not a ranks store client"));
  {
    // A correct hello, then a request with an op that does not exist.
    RawClient raw(server.port());
    raw.hello();
    ASSERT_EQ(raw.reply(wire::Op::Hello)->status, wire::Status::Ok);
    raw.send_bytes({0, 0, 0, 3, 0x77, 1, 2});
    EXPECT_TRUE(raw.closed_by_server());
  }
  EXPECT_TRUE(Contains(log.all(), "unknown request op 119"));
  {
    // A truncated field: a key that claims more bytes than the frame holds.
    RawClient raw(server.port());
    raw.hello();
    ASSERT_EQ(raw.reply(wire::Op::Hello)->status, wire::Status::Ok);
    raw.send_bytes({0, 0, 0, 5, 2, 0, 0, 0, 9});
    EXPECT_TRUE(raw.closed_by_server());
  }
  EXPECT_TRUE(Contains(log.all(), "truncated"));
  EXPECT_EQ(before->get("k"), bytes("v"));
  EXPECT_EQ(client(server.port())->get("k"), bytes("v"));
}

TEST(TcpStore, AClientStartedBeforeTheServerConnectsOnceItIsUp) {
  // Hold a free port without listening on it: connecting is refused until the server listens.
  const int reserved = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(reserved, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(reserved, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t length = sizeof address;
  ::getsockname(reserved, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);

  // Refused connections are retried until the deadline, then reported with the address.
  try {
    client(port, 200ms);
    FAIL() << "connected to a port nobody listens on";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "could not reach the server"));
    EXPECT_TRUE(Contains(e.what(), "connection refused"));
    EXPECT_TRUE(Contains(e.what(), "127.0.0.1:" + std::to_string(port)));
  }
  std::unique_ptr<TCPStore> early;
  std::jthread connecting = checked_thread([&] { early = client(port, 30s); });
  TCPStoreOptions o = server_options();
  o.port = port;
  TCPStore server_store(o.host, port, 2, true, 30s);
  connecting.join();
  ::close(reserved);
  ASSERT_TRUE(early);
  early->set("from-early", bytes("hi"));
  EXPECT_EQ(server_store.get("from-early"), bytes("hi"));
}

TEST(TcpStore, NotARanksServerIsARendezvousError) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t length = sizeof address;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::jthread http = checked_thread([listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    const std::string answer = "HTTP/1.1 400 Bad Request\r\n\r\n";
    ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
    ::close(fd);
  });
  try {
    client(ntohs(address.sin_port), 5s);
    ADD_FAILURE() << "an HTTP server passed for a store";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "not a ranks store server"));
  }
  http.join();
  ::close(listener);
}

TEST(TcpStore, DestroyingTheServerFailsParkedClientsAtOnce) {
  auto server = std::make_unique<TCPStoreServer>(server_options());
  auto store = client(server->port(), 60s);
  std::string error;
  std::jthread waiting = checked_thread([&] {
    try {
      store->get("never");
    } catch (const RendezvousError& e) {
      error = e.what();
    }
  });
  until([&] { return server->parked_requests() == 1; });
  server.reset();  // joins the server thread; must not wait for the parked get's deadline
  waiting.join();
  EXPECT_TRUE(Contains(error, "lost the connection to the server"));
  EXPECT_TRUE(Contains(error, "get('never')"));
}

// After the server has gone (its host rank exited), the next call cannot connect: a client that
// was served before says so at once (a RankFailure) instead of retrying for its whole timeout,
// which kept ranks that outlived rank 0 hanging for the store's timeout (a timed-out rank reading
// where the others are stuck, then looking up the job's first failure).
TEST(TcpStore, AClientServedBeforeFailsAtOnceWhenTheServerHasGone) {
  auto server = std::make_unique<TCPStoreServer>(server_options());
  auto store = client(server->port(), 3600s);
  store->set("k", bytes("v"));
  server.reset();
  // The first call finds its idle connection closed, and drops it.
  try {
    store->get("k");
    ADD_FAILURE() << "a get succeeded with no server";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), "lost the connection to the server")) << e.what();
  } catch (const RankFailure& e) {
    EXPECT_TRUE(Contains(e.what(), "the server has gone")) << e.what();
  }
  // The next must open a new one, and is refused.
  try {
    store->get("k");
    ADD_FAILURE() << "a get succeeded with no server";
  } catch (const RankFailure& e) {
    EXPECT_TRUE(Contains(e.what(), "the server has gone")) << e.what();
  }
}

TEST(TcpStore, BadArgumentsAreInvalidArgument) {
  EXPECT_THROW(TCPStore("127.0.0.1", 0, 1, false, 1s), InvalidArgument);  // client, no port
  EXPECT_THROW(TCPStore("127.0.0.1", 70000, 1, true, 1s), InvalidArgument);
  EXPECT_THROW(TCPStore("", 1234, 1, false, 1s), InvalidArgument);
  EXPECT_THROW(TCPStore("127.0.0.1", 0, 1, true, 0ms), InvalidArgument);
  EXPECT_THROW(TCPStore("no-such-host.invalid", 1234, 1, false, 1s), RendezvousError);
}

// Children are forked before this process starts any thread (the server comes after), and
// learn the port through a pipe: they also exercise connecting while the server comes up.
TEST(TcpStore, ProcessesAddingToOneCounterGetAnExactTotal) {
  constexpr int kChildren = 4;
  constexpr int kAdds = 250;
  std::vector<pid_t> children;
  std::vector<int> port_pipes;
  for (int i = 0; i < kChildren; ++i) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[1]);
      int port = 0;
      int code = 1;
      if (::read(fds[0], &port, sizeof port) == static_cast<ssize_t>(sizeof port)) {
        try {
          TCPStore store("127.0.0.1", port, kChildren + 1, false, 30s);
          for (int a = 0; a < kAdds; ++a) store.add("counter", 1);
          store.add("children-done", 1);
          code = 0;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "child %d: %s\n", i, e.what());
        }
      }
      ::_exit(code);
    }
    ::close(fds[0]);
    children.push_back(pid);
    port_pipes.push_back(fds[1]);
  }
  TCPStore server("127.0.0.1", 0, kChildren + 1, true, 30s);
  const int port = server.port();
  for (int fd : port_pipes) {
    EXPECT_EQ(::write(fd, &port, sizeof port), static_cast<ssize_t>(sizeof port));
    ::close(fd);
  }
  for (int a = 0; a < kAdds; ++a) server.add("counter", 1);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_EQ(server.add("children-done", 0), kChildren);
  EXPECT_EQ(server.add("counter", 0), (kChildren + 1) * kAdds);
}

}  // namespace
}  // namespace ranks::testing
