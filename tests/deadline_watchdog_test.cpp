// The real backends' deadline watchdog (runtime/ranks/real/deadline_watchdog.hpp): a watch
// finished before its deadline never fires; one past its deadline gets its call-back on another
// thread, and finish() waits for that call-back and says it fired; the exit policy ends the
// process. Every wait here is on a condition the watchdog sets, never a sleep.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <memory>
#include <thread>
#include <vector>

#include "ranks/real/deadline_watchdog.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;
using ranks::detail::DeadlineWatchdog;

// A watch whose call-back records that it ran, on which thread, and can be held inside until the
// test lets it return.
class RecordingWatch final : public DeadlineWatchdog::Watch {
 public:
  explicit RecordingWatch(bool hold = false)
      : DeadlineWatchdog::Watch(DeadlineWatchdog::Policy::CallBack), hold_(hold) {}
  ~RecordingWatch() override { finish(); }

  void wait_until_called() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return called_; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }
  bool called() {
    std::lock_guard<std::mutex> lock(mutex_);
    return called_;
  }
  bool returned() {
    std::lock_guard<std::mutex> lock(mutex_);
    return returned_;
  }
  std::thread::id called_on() {
    std::lock_guard<std::mutex> lock(mutex_);
    return thread_;
  }

 private:
  void on_deadline(DeadlineWatchdog::Clock::time_point) override {
    std::unique_lock<std::mutex> lock(mutex_);
    called_ = true;
    thread_ = std::this_thread::get_id();
    changed_.notify_all();
    if (hold_) changed_.wait(lock, [this] { return released_; });
    returned_ = true;
  }

  const bool hold_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool called_ = false;
  bool released_ = false;
  bool returned_ = false;
  std::thread::id thread_;
};

TEST(DeadlineWatchdog, AWatchFinishedBeforeItsDeadlineNeverFires) {
  RecordingWatch watch;
  watch.start(std::chrono::milliseconds(1h));
  EXPECT_FALSE(watch.finish());
  EXPECT_FALSE(watch.called());
}

TEST(DeadlineWatchdog, AZeroTimeoutWatchesNothing) {
  RecordingWatch watch;
  watch.start(0ms);
  EXPECT_FALSE(watch.finish());
  EXPECT_FALSE(watch.called());
}

TEST(DeadlineWatchdog, APassedDeadlineCallsBackOnAnotherThreadAndFinishSaysSo) {
  RecordingWatch watch;
  watch.start(1ms);
  watch.wait_until_called();
  EXPECT_NE(watch.called_on(), std::this_thread::get_id());
  EXPECT_TRUE(watch.finish());
  EXPECT_TRUE(watch.returned());
  EXPECT_TRUE(watch.finish()) << "finish() is idempotent";
}

TEST(DeadlineWatchdog, FinishWaitsForACallBackInProgress) {
  RecordingWatch held(/*hold=*/true);
  held.start(1ms);
  held.wait_until_called();
  // Other watches keep their deadlines while one call-back is held.
  RecordingWatch other;
  other.start(1ms);
  other.wait_until_called();
  EXPECT_TRUE(other.finish());
  bool finished = false;
  std::thread finisher([&] { finished = held.finish(); });
  EXPECT_FALSE(held.returned());
  held.release();
  finisher.join();
  EXPECT_TRUE(finished);
  EXPECT_TRUE(held.returned()) << "finish() returned before the call-back did";
}

TEST(DeadlineWatchdog, ManyWatchesAtOnceEachGetTheirOwnCallBack) {
  // More than fit in one pass of a small table, all overdue together.
  std::vector<std::unique_ptr<RecordingWatch>> watches;
  for (int i = 0; i < 300; ++i) {
    watches.push_back(std::make_unique<RecordingWatch>());
    watches.back()->start(1ms);
  }
  for (auto& watch : watches) {
    watch->wait_until_called();
    EXPECT_TRUE(watch->finish());
  }
}

// A watch under the exit policy that reports and ends the process, as a blocking MPI call past
// its deadline does.
class ExitingWatch final : public DeadlineWatchdog::Watch {
 public:
  ExitingWatch() : DeadlineWatchdog::Watch(DeadlineWatchdog::Policy::Exit) {}
  ~ExitingWatch() override { finish(); }

 private:
  void on_deadline(DeadlineWatchdog::Clock::time_point) override {
    std::fputs("deadline passed\n", stderr);
    std::_Exit(7);
  }
};

// Run in a process of its own (TheExitPolicyEndsTheProcess starts it): a watched call that never
// returns on its own, as a blocking MPI call whose peer never comes.
TEST(DeadlineWatchdog, ExitPolicyChild) {
  if (std::getenv("RANKS_TEST_EXIT_POLICY_CHILD") == nullptr) GTEST_SKIP() << "run by its parent";
  alarm(30);  // a watchdog that never fires must not hang the test
  ExitingWatch watch;
  watch.start(1ms);
  for (;;) pause();
}

TEST(DeadlineWatchdog, TheExitPolicyEndsTheProcess) {
  // A fresh process: the watchdog's thread is not inherited across fork(), so the child execs.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("RANKS_TEST_EXIT_POLICY_CHILD", "1", 1);
    execl("/proc/self/exe", "deadline_watchdog_test",
          "--gtest_filter=DeadlineWatchdog.ExitPolicyChild", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

}  // namespace
}  // namespace ranks::testing
