// The contract every store keeps, written once and run against each: HashStore, FileStore,
// TCPStore, PrefixStore over a hash and a TCP store (with keys of other namespaces beside its
// own, so that num_keys() must count only its prefix), and the client of torch's own TCPStore
// server (torchrun's agent store) against a real one. Store-specific behaviour (files, sockets,
// processes) is in the other store_*_test.cpp files.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "ranks/store/torch_store_client.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

Bytes bytes(std::string_view s) { return {s.begin(), s.end()}; }

// A thread whose exception fails the running test instead of terminating the binary, and
// that is joined even when the test body throws.
template <class F>
std::jthread checked_thread(F body) {
  return std::jthread([body = std::move(body)]() mutable {
    try {
      body();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a test thread threw: " << e.what();
    }
  });
}

// A kind of store. make() opens the store under test; another() opens one more handle on the
// same keys (another client, another FileStore on the file, or the same in-process object).
struct HashKind {
  std::shared_ptr<HashStore> store;
  std::shared_ptr<Store> make(std::chrono::milliseconds timeout) {
    store = std::make_shared<HashStore>(timeout);
    return store;
  }
  std::shared_ptr<Store> another() { return store; }
};

struct FileKind {
  std::filesystem::path dir;
  std::chrono::milliseconds timeout{};
  FileKind() {
    std::string pattern = ::testing::TempDir() + "store_contract_XXXXXX";
    dir = ::mkdtemp(pattern.data());
  }
  ~FileKind() { std::filesystem::remove_all(dir); }
  std::shared_ptr<Store> make(std::chrono::milliseconds t) {
    timeout = t;
    return another();
  }
  std::shared_ptr<Store> another() {
    return std::make_shared<FileStore>((dir / "store").string(), -1, timeout);
  }
};

struct TcpKind {
  std::shared_ptr<TCPStore> server;
  std::chrono::milliseconds timeout{};
  std::shared_ptr<Store> make(std::chrono::milliseconds t) {
    timeout = t;
    server = std::make_shared<TCPStore>("127.0.0.1", 0, -1, true, t);
    return server;
  }
  std::shared_ptr<Store> another() {
    return std::make_shared<TCPStore>("127.0.0.1", server->port(), -1, false, timeout);
  }
};

// torch's own TCPStore servers (Debian's python3-torch), the kind torchrun's agent hosts, all in
// one Python process for the whole binary: each fresh_port() asks it for a new server, so that
// num_keys() (which counts every key of a torch server) sees only one test's keys.
class TorchServers {
 public:
  // nullptr, with why() set, when Python or torch is missing.
  static TorchServers* get() {
    static TorchServers servers;
    return servers.to_ ? &servers : nullptr;
  }
  static const std::string& why() { return get_why(); }

  int fresh_port() {
    std::fputs("\n", to_);
    std::fflush(to_);
    char line[64] = {};
    if (std::fgets(line, sizeof line, from_) == nullptr) return 0;
    return std::atoi(line);
  }

  ~TorchServers() {
    if (to_ != nullptr) std::fclose(to_);  // the server loop ends at end of input
    if (from_ != nullptr) std::fclose(from_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }

 private:
  static std::string& get_why() {
    static std::string why;
    return why;
  }

  TorchServers() {
    static const char* script =
        "import sys, datetime\n"
        "try:\n"
        "    import torch.distributed as dist\n"
        "except Exception as e:\n"
        "    print('no torch.distributed:', e, flush=True); sys.exit(0)\n"
        "print('ready', flush=True)\n"
        "servers = []\n"
        "for _ in sys.stdin:\n"
        "    servers.append(dist.TCPStore('127.0.0.1', 0, None, True,\n"
        "                                 datetime.timedelta(seconds=600),\n"
        "                                 wait_for_workers=False))\n"
        "    print(servers[-1].port, flush=True)\n";
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) {
      get_why() = "no pipe";
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      ::execl(RANKS_TEST_PYTHON, RANKS_TEST_PYTHON, "-c", script, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = ::fdopen(in[1], "w");
    from_ = ::fdopen(out[0], "r");
    char line[256] = {};
    if (std::fgets(line, sizeof line, from_) == nullptr || std::string(line) != "ready\n") {
      get_why() = std::string(RANKS_TEST_PYTHON) + " cannot host a torch TCPStore: " + line;
      std::fclose(to_);
      to_ = nullptr;
    }
  }

  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

struct TorchKind {
  // torch 1.13's server reads an add on text with std::stoll and drops the connection, and lets
  // the sum overflow: the client cannot tell these from a lost server.
  static constexpr bool kTorchServer = true;
  int port = 0;
  std::chrono::milliseconds timeout{};
  std::shared_ptr<Store> make(std::chrono::milliseconds t) {
    timeout = t;
    port = TorchServers::get()->fresh_port();
    return another();
  }
  std::shared_ptr<Store> another() {
    return std::make_shared<store::TorchStoreClient>("127.0.0.1", port, timeout);
  }
};

template <class Kind>
constexpr bool is_torch_server = requires { Kind::kTorchServer; };

// PrefixStore over Inner, with a key in another namespace and one at the top level.
template <class Inner>
struct PrefixKind {
  Inner inner;
  std::shared_ptr<Store> make(std::chrono::milliseconds timeout) {
    std::shared_ptr<Store> base = inner.make(timeout);
    base->set("other/noise", bytes("x"));
    base->set("top-level", bytes("y"));
    return std::make_shared<PrefixStore>("job", base);
  }
  std::shared_ptr<Store> another() { return std::make_shared<PrefixStore>("job", inner.another()); }
};

template <class Kind>
class StoreContract : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (is_torch_server<Kind>) {
      if (TorchServers::get() == nullptr) GTEST_SKIP() << TorchServers::why();
    }
  }

  std::shared_ptr<Store> make(std::chrono::milliseconds timeout = 30s) {
    return kind_.make(timeout);
  }
  std::shared_ptr<Store> another() { return kind_.another(); }

 private:
  Kind kind_;
};

using Kinds = ::testing::Types<HashKind, FileKind, TcpKind, PrefixKind<HashKind>,
                               PrefixKind<TcpKind>, TorchKind>;
class KindNames {
 public:
  template <class T>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<T, HashKind>) return "Hash";
    if constexpr (std::is_same_v<T, FileKind>) return "File";
    if constexpr (std::is_same_v<T, TcpKind>) return "Tcp";
    if constexpr (std::is_same_v<T, PrefixKind<HashKind>>) return "PrefixOverHash";
    if constexpr (std::is_same_v<T, PrefixKind<TcpKind>>) return "PrefixOverTcp";
    if constexpr (std::is_same_v<T, TorchKind>) return "TorchServer";
    return "Unknown";
  }
};
TYPED_TEST_SUITE(StoreContract, Kinds, KindNames);

TYPED_TEST(StoreContract, SetThenGetReturnsTheSameBytes) {
  auto store = this->make();
  const Bytes binary = {0, 1, 0xff, 0, 'a', 0x80};
  store->set("binary", binary);
  store->set("empty", {});
  EXPECT_EQ(store->get("binary"), binary);
  EXPECT_EQ(store->get("empty"), Bytes{});
  store->set("binary", bytes("second"));
  EXPECT_EQ(store->get("binary"), bytes("second"));
}

TYPED_TEST(StoreContract, KeysAreBinarySafe) {
  auto store = this->make();
  const std::string odd("a\0b/c\xff", 6);
  store->set(odd, bytes("odd"));
  store->set("a", bytes("plain"));
  EXPECT_EQ(store->get(odd), bytes("odd"));
  EXPECT_EQ(store->get("a"), bytes("plain"));
  EXPECT_TRUE(store->check({odd}));
}

TYPED_TEST(StoreContract, AnotherHandleSeesTheSameKeys) {
  auto store = this->make();
  auto other = this->another();
  store->set("k", bytes("from the first"));
  EXPECT_EQ(other->get("k"), bytes("from the first"));
  EXPECT_EQ(other->add("n", 2), 2);
  EXPECT_EQ(store->add("n", 3), 5);
}

TYPED_TEST(StoreContract, GetOfAMissingKeyTimesOutAndNamesTheKey) {
  auto store = this->make(100ms);
  try {
    store->get("never-set");
    FAIL() << "get of a missing key returned";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "'")) << e.what();
    EXPECT_TRUE(Contains(e.what(), "never-set'"));
    EXPECT_TRUE(Contains(e.what(), "timed out after 100 ms"));
  }
  store->set("after", bytes("still works"));
  EXPECT_EQ(store->get("after"), bytes("still works"));
}

TYPED_TEST(StoreContract, GetWaitsForAKeySetLater) {
  auto store = this->make();
  auto other = this->another();
  Bytes got;
  std::jthread waiter = checked_thread([&] {
    other->add("waiter-started", 1);
    got = other->get("later");
  });
  // The waiter is at (or about to enter) its get when this returns.
  store->wait({"waiter-started"}, 30s);
  store->set("later", bytes("arrived"));
  waiter.join();
  EXPECT_EQ(got, bytes("arrived"));
}

TYPED_TEST(StoreContract, WaitReturnsOnceEveryKeyIsSet) {
  auto store = this->make();
  auto other = this->another();
  std::jthread waiter = checked_thread([&] {
    other->add("waiter-started", 1);
    other->wait({"x", "y"}, 30s);
    other->set("waiter-done", {});
  });
  store->wait({"waiter-started"}, 30s);
  store->set("x", {});
  EXPECT_FALSE(store->check({"waiter-done"}));  // y is still missing
  store->set("y", {});
  waiter.join();
  EXPECT_TRUE(store->check({"waiter-done"}));
}

TYPED_TEST(StoreContract, WaitTimeoutNamesOnlyTheMissingKeys) {
  auto store = this->make();
  store->set("present", {});
  try {
    store->wait({"present", "gone-1", "gone-2"}, 50ms);
    FAIL() << "wait for missing keys returned";
  } catch (const Timeout& e) {
    EXPECT_TRUE(Contains(e.what(), "gone-1'"));
    EXPECT_TRUE(Contains(e.what(), "gone-2'"));
    EXPECT_FALSE(Contains(e.what(), "present'"));
  }
}

TYPED_TEST(StoreContract, WaitWithZeroTimeoutDoesNotWaitAndNegativeIsInvalid) {
  auto store = this->make();
  store->set("here", {});
  store->wait({"here"}, 0ms);
  store->wait({}, 0ms);
  EXPECT_THROW(store->wait({"not-here"}, 0ms), Timeout);
  EXPECT_THROW(store->wait({"here"}, -1ms), InvalidArgument);
}

TYPED_TEST(StoreContract, AddCountsFromZeroAndKeepsDecimalText) {
  auto store = this->make();
  EXPECT_EQ(store->add("counter", 5), 5);
  EXPECT_EQ(store->add("counter", -7), -2);
  EXPECT_EQ(store->add("counter", 0), -2);
  EXPECT_EQ(store->get("counter"), bytes("-2"));
  store->set("decimal", bytes("40"));
  EXPECT_EQ(store->add("decimal", 2), 42);
}

TYPED_TEST(StoreContract, AddOnTextOrPastInt64IsInvalidAndChangesNothing) {
  if constexpr (is_torch_server<TypeParam>) GTEST_SKIP() << "torch's server does not check adds";
  auto store = this->make();
  store->set("text", bytes("abc"));
  try {
    store->add("text", 1);
    FAIL() << "add on text returned";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(Contains(e.what(), "text'"));
    EXPECT_TRUE(Contains(e.what(), "not a decimal"));
  }
  EXPECT_EQ(store->get("text"), bytes("abc"));
  store->add("big", std::numeric_limits<int64_t>::max());
  EXPECT_THROW(store->add("big", 1), InvalidArgument);
  EXPECT_EQ(store->add("big", 0), std::numeric_limits<int64_t>::max());
}

TYPED_TEST(StoreContract, CompareSetFollowsTorch) {
  auto store = this->make();
  // Missing key, empty expected: stored.
  EXPECT_EQ(store->compare_set("k", {}, bytes("first")), bytes("first"));
  EXPECT_EQ(store->get("k"), bytes("first"));
  // Wrong expectation: unchanged, the current value comes back.
  EXPECT_EQ(store->compare_set("k", bytes("nope"), bytes("second")), bytes("first"));
  EXPECT_EQ(store->get("k"), bytes("first"));
  // Right expectation: swapped.
  EXPECT_EQ(store->compare_set("k", bytes("first"), bytes("second")), bytes("second"));
  EXPECT_EQ(store->get("k"), bytes("second"));
  // Missing key, non-empty expected: nothing stored, expected comes back.
  EXPECT_EQ(store->compare_set("missing", bytes("e"), bytes("d")), bytes("e"));
  EXPECT_FALSE(store->check({"missing"}));
}

TYPED_TEST(StoreContract, CheckTellsWhetherEveryKeyIsSet) {
  auto store = this->make();
  EXPECT_TRUE(store->check({}));
  EXPECT_FALSE(store->check({"a"}));
  store->set("a", {});
  EXPECT_TRUE(store->check({"a"}));
  EXPECT_FALSE(store->check({"a", "b"}));
}

TYPED_TEST(StoreContract, DeleteKeyRemovesAndReportsWhetherItExisted) {
  auto store = this->make();
  EXPECT_FALSE(store->delete_key("k"));
  store->set("k", bytes("v"));
  EXPECT_TRUE(store->delete_key("k"));
  EXPECT_FALSE(store->check({"k"}));
  EXPECT_FALSE(store->delete_key("k"));
  EXPECT_THROW(store->wait({"k"}, 20ms), Timeout);
  store->set("k", bytes("again"));
  EXPECT_EQ(store->get("k"), bytes("again"));
}

TYPED_TEST(StoreContract, NumKeysCountsThisStoresKeys) {
  auto store = this->make();
  EXPECT_EQ(store->num_keys(), 0);
  store->set("a", {});
  store->set("b", {});
  store->add("c", 1);
  store->set("a", bytes("again"));
  EXPECT_EQ(store->num_keys(), 3);
  store->delete_key("b");
  EXPECT_EQ(store->num_keys(), 2);
}

TYPED_TEST(StoreContract, ConcurrentAddsFromThreadsAreExact) {
  auto store = this->make();
  constexpr int kThreads = 4;
  constexpr int kAdds = 100;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Half the threads share the first handle, half have their own.
    std::shared_ptr<Store> handle = t % 2 == 0 ? store : this->another();
    threads.push_back(checked_thread([&seen, handle, t] {
      for (int i = 0; i < kAdds; ++i) seen[t].push_back(handle->add("counter", 1));
    }));
  }
  for (std::jthread& t : threads) t.join();
  EXPECT_EQ(store->add("counter", 0), kThreads * kAdds);
  // Every add saw a different total: no two read the same old value.
  std::set<int64_t> all;
  for (const auto& values : seen) all.insert(values.begin(), values.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kAdds));
}

}  // namespace
}  // namespace ranks::testing
