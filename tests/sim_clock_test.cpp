// The simulator's virtual clock: sleep_for and now, and timeouts on it (the run's, a group's, one
// call's), each ending the run with the rank, op, peer and call site named.

#include <fmt/format.h>

#include <chrono>
#include <string>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

std::string site(int line) { return fmt::format("sim_clock_test.cpp:{}", line); }

TEST(SimClock, SleepForAdvancesVirtualTimeExactly) {
  for (int n : {1, 2, 5, 16}) {
    SCOPED_TRACE(fmt::format("world size {}", n));
    std::vector<std::chrono::nanoseconds> after_barrier(static_cast<size_t>(n));
    sim::Report report = simulate(n, [&] {
      const int rank = get_rank();
      sleep_for(std::chrono::milliseconds(rank));
      EXPECT_EQ(now(), std::chrono::milliseconds(rank));
      barrier();
      after_barrier[static_cast<size_t>(rank)] = now();
    });
    EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
    EXPECT_EQ(report.virtual_time, std::chrono::milliseconds(n - 1));
    // The barrier ends when the last rank arrives, for everyone.
    for (auto t : after_barrier) EXPECT_EQ(t, std::chrono::milliseconds(n - 1));
  }
}

TEST(SimClock, NowReadsTheVirtualClock) {
  std::vector<std::chrono::nanoseconds> seen;
  run_ranks(2, [&] {
    if (get_rank() != 1) return;
    seen.push_back(now());
    sleep_for(1500ns);
    seen.push_back(now());
    sleep_for(2h);
    seen.push_back(now());
    sleep_for(0ns);
    seen.push_back(now());
  });
  const std::vector<std::chrono::nanoseconds> want = {0ns, 1500ns, 2h + 1500ns, 2h + 1500ns};
  EXPECT_EQ(seen, want);
}

TEST(SimClock, StragglerPastTheTimeoutIsATimeout) {
  int line = 0;
  sim::Report report = simulate(4, [&] {
    if (get_rank() == 0) sleep_for(40min);
    Tensor t = Tensor::of<float>({1.0f});
    line = __LINE__ + 1;
    all_reduce(t);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, 30min) << "the run fails when the timeout fires";
  EXPECT_TRUE(Contains(report.message, "all_reduce"));
  EXPECT_TRUE(Contains(report.message, "30 min"));
  EXPECT_TRUE(Contains(report.message, "not arrived: rank 0"));
  EXPECT_TRUE(Contains(report.message, site(line)));
  ASSERT_EQ(report.ranks.size(), 4u);
  for (int r : {1, 2, 3}) {
    const auto& row = report.ranks[static_cast<size_t>(r)];
    EXPECT_EQ(row.state, "failed") << "rank " << r;
    EXPECT_EQ(row.op, "all_reduce") << "rank " << r;
    EXPECT_TRUE(Contains(row.error, "timed out")) << "rank " << r;
  }
}

TEST(SimClock, OptionsTimeoutApplies) {
  sim::Options options = default_options();
  options.timeout = 5s;
  sim::Report report = simulate(
      3,
      [] {
        if (get_rank() == 2) sleep_for(6s);
        barrier();
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, 5s);
  EXPECT_TRUE(Contains(report.message, "after 5 s in barrier"));
  EXPECT_TRUE(Contains(report.message, "not arrived: rank 2"));
}

TEST(SimClock, AStragglerWithinTheTimeoutIsFine) {
  sim::Report report = simulate(4, [] {
    if (get_rank() == 0) sleep_for(29min);
    Tensor t = Tensor::of<int32_t>({1});
    all_reduce(t);
    EXPECT_EQ(t.item<int32_t>(), 4);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_EQ(report.virtual_time, 29min);
}

TEST(SimClock, PerGroupTimeoutApplies) {
  int line = 0;
  sim::Report report = simulate(4, [&] {
    Group g = new_group({0, 1, 2});
    if (!g.is_member()) return;
    g.set_timeout(1min);
    EXPECT_EQ(g.timeout(), 1min);
    EXPECT_EQ(Group().timeout(), 30min) << "the world keeps the default";
    if (get_rank() == 0) sleep_for(2min);
    Tensor t = Tensor::of<int32_t>({1});
    line = __LINE__ + 1;
    all_reduce(t, ReduceOp::Sum, g);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, 1min);
  EXPECT_TRUE(Contains(report.message, "after 1 min"));
  EXPECT_TRUE(Contains(report.message, "world/0,1,2"));
  EXPECT_TRUE(Contains(report.message, "not arrived: rank 0"));
  EXPECT_TRUE(Contains(report.message, site(line)));
}

TEST(SimClock, ARecvWhoseSenderIsLateTimesOutNamingThePeer) {
  sim::Options options = default_options();
  options.timeout = 10s;
  int line = 0;
  sim::Report report = simulate(
      2,
      [&] {
        Tensor t = Tensor::of<int32_t>({1});
        if (get_rank() == 0) {
          sleep_for(11s);
          send(t, 1, {}, 3);
        } else {
          line = __LINE__ + 1;
          recv(t, 0, {}, 3);
        }
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, 10s);
  EXPECT_TRUE(Contains(report.message, "rank 1 timed out after 10 s in recv"));
  EXPECT_TRUE(Contains(report.message, "rank 0 has sent no message with tag 3"));
  EXPECT_TRUE(Contains(report.message, site(line)));
}

TEST(SimClock, TimeoutsMustBePositive) {
  run_ranks(2, [] {
    Group world;
    EXPECT_THROW(world.set_timeout(0ms), InvalidArgument);
    EXPECT_THROW(world.set_timeout(-5ms), InvalidArgument);
    EXPECT_THROW(sleep_for(-1ns), InvalidArgument);
  });
}

TEST(SimClock, PerCallTimeoutOverridesTheGroupTimeout) {
  // Rank 1 is 5 virtual minutes late; rank 0 gives this one call only a minute.
  sim::Report report = simulate(2, [] {
    Tensor t = Tensor::of<float>({1.0f});
    if (get_rank() == 1) sleep_for(std::chrono::minutes(5));
    Work work = all_reduce_async(t);
    work.wait(std::chrono::minutes(1));
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, std::chrono::minutes(1));
  EXPECT_TRUE(Contains(report.message, "rank 0 timed out after 1 min in all_reduce"));
  EXPECT_TRUE(Contains(report.message, "not arrived: rank 1"));
}

TEST(SimClock, PerCallTimeoutMustBePositive) {
  sim::Report report = simulate(2, [] {
    Tensor t = Tensor::of<float>({1.0f});
    Work work = all_reduce_async(t);
    EXPECT_THROW(work.wait(std::chrono::milliseconds(0)), InvalidArgument);
    work.wait();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
}

}  // namespace
}  // namespace ranks::testing
