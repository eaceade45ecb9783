// Ranks on threads of their own (sim::Options::rank_threads): each rank's body runs on one OS
// thread for its whole life, no two ranks share a thread, and the run is the same run as on
// fibers: the same order of turns, the same virtual clock, the same report.

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

// A body with every way a rank gives the turn away: collectives, point-to-point in both
// directions, a virtual sleep, a poll of an async op, a barrier.
void mixed_body() {
  Tensor t = Tensor::of<int32_t>({get_rank(), 1});
  for (int round = 0; round < 3; ++round) {
    all_reduce(t);
    if (get_rank() == 0) sleep_for(1ms);
    const int peer = get_rank() ^ 1;
    if (peer < get_world_size()) {
      Tensor other = Tensor::of<int32_t>({0, 0});
      Work pending = irecv(other, peer);
      send(t, peer);
      while (!pending.is_completed()) {
      }
      pending.wait();
    }
    barrier();
  }
}

struct Turns {
  std::vector<int> order;  // every switch, in order: the rank that runs next, -1 for none
  sim::Report report;
};

Turns run_recording(bool threads, uint64_t seed, int world_size,
                    const std::function<void()>& body) {
  Turns turns;
  sim::Options options = default_options();
  options.world_size = world_size;
  options.seed = seed;
  options.rank_threads = threads;
  options.on_rank_switch = [&](int rank) { turns.order.push_back(rank); };
  turns.report = sim::run(options, body);
  return turns;
}

class RankThreads : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RankThreads, EachRankHasAThreadOfItsOwnForItsWholeLife) {
  constexpr int n = 5;
  std::vector<std::set<pthread_t>> seen(n);
  const pthread_t caller = pthread_self();
  sim::Options options = default_options();
  options.world_size = n;
  options.seed = GetParam();
  options.rank_threads = true;
  sim::Report report = sim::run(options, [&] {
    Tensor t = Tensor::of<int32_t>({get_rank()});
    for (int round = 0; round < 4; ++round) {
      seen[static_cast<size_t>(get_rank())].insert(pthread_self());
      all_reduce(t);
      if (get_rank() == 1) sleep_for(2ms);
    }
    seen[static_cast<size_t>(get_rank())].insert(pthread_self());
  });
  ASSERT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  std::set<pthread_t> all;
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(seen[static_cast<size_t>(r)].size(), 1u) << "rank " << r << " moved threads";
    all.insert(*seen[static_cast<size_t>(r)].begin());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(n)) << "two ranks shared a thread";
  EXPECT_EQ(all.count(caller), 0u) << "a rank ran on the caller's thread";
}

TEST_P(RankThreads, TheTurnsAreTheFibersTurnsInTheSameOrder) {
  for (int n : {1, 2, 3, 8}) {
    Turns fibers = run_recording(false, GetParam(), n, mixed_body);
    Turns threads = run_recording(true, GetParam(), n, mixed_body);
    ASSERT_EQ(fibers.report.outcome, sim::Outcome::Ok) << fibers.report.to_text();
    ASSERT_EQ(threads.report.outcome, sim::Outcome::Ok) << threads.report.to_text();
    // The fiber scheduler also switches to Boost's dispatcher and the caller's fiber (-1):
    // only the ranks' turns are compared.
    std::erase(fibers.order, -1);
    std::erase(threads.order, -1);
    EXPECT_EQ(threads.order, fibers.order) << "n=" << n;
    EXPECT_EQ(threads.report.virtual_time, fibers.report.virtual_time) << "n=" << n;
    EXPECT_EQ(threads.report.to_json(), fibers.report.to_json()) << "n=" << n;
  }
}

TEST_P(RankThreads, ADeadlockIsReportedAsOnFibers) {
  auto head_to_head = [] {
    Tensor t = Tensor::of<float>({1.0f});
    recv(t, (get_rank() + 1) % get_world_size());
    send(t, (get_rank() + 1) % get_world_size());
  };
  Turns fibers = run_recording(false, GetParam(), 3, head_to_head);
  Turns threads = run_recording(true, GetParam(), 3, head_to_head);
  EXPECT_EQ(threads.report.outcome, sim::Outcome::Deadlock) << threads.report.to_text();
  EXPECT_EQ(threads.report.cycle, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(threads.report.to_json(), fibers.report.to_json());
}

TEST_P(RankThreads, AFailedRankAndItsWaitingPeersAreReportedAsOnFibers) {
  auto one_throws = [] {
    if (get_rank() == 2) throw std::runtime_error("rank 2 gives up");
    barrier();
  };
  Turns fibers = run_recording(false, GetParam(), 4, one_throws);
  Turns threads = run_recording(true, GetParam(), 4, one_throws);
  EXPECT_NE(threads.report.outcome, sim::Outcome::Ok);
  EXPECT_TRUE(Contains(threads.report.message, "rank 2 gives up")) << threads.report.message;
  EXPECT_EQ(threads.report.to_json(), fibers.report.to_json());
}

INSTANTIATE_TEST_SUITE_P(Seeds, RankThreads, ::testing::Values(0, 1, 7));

TEST(RankThreadsWallGuard, ARankBusyOutsideRanksEndsTheRunWithItsReport) {
  const std::filesystem::path report_file =
      std::filesystem::temp_directory_path() /
      ("rank_threads_wall_guard." + std::to_string(::getpid()) + ".json");
  EXPECT_EXIT(
      {
        sim::detail::install_crash_report(report_file.c_str());  // as ranks::main does
        sim::Options options = default_options();
        options.world_size = 2;
        options.rank_threads = true;
        options.timeout = 200ms;
        sim::run(options, [] {
          barrier();
          if (get_rank() == 1) {
            for (;;) std::this_thread::sleep_for(10ms);  // real time, which the run cannot see
          }
          barrier();
        });
      },
      ::testing::ExitedWithCode(1), "");
  std::ifstream in(report_file);
  ASSERT_TRUE(in) << "no report at " << report_file;
  const nlohmann::json report = nlohmann::json::parse(in);
  std::filesystem::remove(report_file);
  EXPECT_EQ(report["outcome"], "timeout");
  EXPECT_TRUE(report["message"].get<std::string>().starts_with(
      "rank 1 has not handed the thread back to the simulator for 200 ms of real time"))
      << report["message"];
  EXPECT_TRUE(report["ranks"][1]["error"].get<std::string>().starts_with(
      "kept the thread for 200 ms of real time, outside ranks (after entering its op 1 "
      "(barrier on group 'world' seq 0"))
      << report["ranks"][1];
}

}  // namespace
}  // namespace ranks::testing
