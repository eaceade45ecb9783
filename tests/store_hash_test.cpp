// HashStore beyond the shared contract: many threads parked on one key, and arguments.

#include <atomic>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

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

TEST(HashStore, OneSetReleasesEveryThreadWaitingForTheKey) {
  HashStore store(30s);
  constexpr int kThreads = 8;
  std::atomic<int> released{0};
  std::vector<std::jthread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.push_back(checked_thread([&] {
      if (store.add("waiting", 1) == kThreads) store.set("all-waiting", {});
      store.wait({"go"}, 30s);
      ++released;
    }));
  }
  // Every thread has announced itself; most are already blocked in wait().
  store.wait({"all-waiting"}, 30s);
  EXPECT_EQ(released.load(), 0);
  store.set("go", {});
  for (std::jthread& t : threads) t.join();
  EXPECT_EQ(released.load(), kThreads);
}

TEST(HashStore, ItsTimeoutIsItsGetDeadline) {
  HashStore store(20ms);
  EXPECT_EQ(store.timeout(), 20ms);
  EXPECT_THROW(store.get("missing"), Timeout);
  EXPECT_THROW(HashStore(-1ms), InvalidArgument);
}

TEST(HashStore, CountsKeysByPrefix) {
  HashStore store;
  store.set("a/1", {});
  store.set("a/2", {});
  store.set("b/1", {});
  EXPECT_EQ(store.num_keys_with_prefix("a/"), 2);
  EXPECT_EQ(store.num_keys_with_prefix(""), 3);
  EXPECT_EQ(store.num_keys_with_prefix("c"), 0);
}

}  // namespace
}  // namespace ranks::testing
