// What outlives a simulated run, and what a run leaves unfinished: Work and Group handles kept
// past sim::run, ops a rank started that nobody completed, a rank that ends the process with
// exit(), a rank that polls Work::is_completed() instead of waiting, and one that never hands the
// thread back.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "ranks/ranks.hpp"
#include "ranks/sim.hpp"

namespace ranks {
namespace {

sim::Options options(int world_size, std::string backend = "gloo") {
  sim::Options o;
  o.world_size = world_size;
  o.backend = std::move(backend);
  return o;
}

// --- handles kept past the run -----------------------------------------------------------------

TEST(AfterTheRun, AWorkKeptPastTheRunReportsTheOpNeverCompleted) {
  Work kept;
  auto report = sim::run(options(2), [&] {
    auto t = Tensor::zeros({2}, DType::Float32);
    if (get_rank() == 0) kept = irecv(t, 1);  // rank 1 never sends
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_TRUE(kept.is_completed());
  try {
    kept.wait();
    FAIL() << "wait() on a receive that never matched returned";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0's recv on group 'world' seq 0"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("never completed: the simulation ended first"),
              std::string::npos)
        << e.what();
  }
}

TEST(AfterTheRun, AGroupKeptPastTheRunIsRefusedOutsideAndInTheNextRun) {
  Group kept;
  auto first = sim::run(options(2), [&] {
    auto g = new_group({0, 1});
    barrier(g);
    if (get_rank() == 0) kept = g;
  });
  ASSERT_EQ(first.outcome, sim::Outcome::Ok) << first.to_text();
  EXPECT_THROW(barrier(kept), InvalidArgument);  // outside any run
  auto second = sim::run(options(2), [&] { barrier(kept); });
  EXPECT_EQ(second.outcome, sim::Outcome::Error) << second.to_text();
  EXPECT_NE(second.message.find("belongs to a simulation that has ended"), std::string::npos)
      << second.message;
}

TEST(AfterTheRun, AnOkReportNamesOpsThatNeverCompleted) {
  auto report = sim::run(options(3), [&] {
    auto t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 0) (void)isend(t, 1, {}, /*tag=*/5);  // nobody receives it
    if (get_rank() == 2) (void)all_reduce_async(t);         // nobody else calls it
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_NE(report.message.find("2 ops started and never completed"), std::string::npos)
      << report.message;
  EXPECT_NE(report.message.find("rank 0's send on group 'world' seq 0"), std::string::npos)
      << report.message;
  EXPECT_NE(report.message.find("rank 2's all_reduce on group 'world' seq 0"), std::string::npos)
      << report.message;
}

TEST(AfterTheRun, ACompleteRunSaysNothingAboutUnfinishedOps) {
  auto report = sim::run(options(2), [&] {
    auto t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 0) send(t, 1);
    if (get_rank() == 1) recv(t, 0);
    all_reduce(t);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok);
  EXPECT_EQ(report.message, "all 2 ranks finished");
}

// --- polling instead of waiting ----------------------------------------------------------------

// The overlap pattern: poll a receive while doing work of one's own. Spinning on is_completed()
// must let the sender run (one thread runs every rank) and end once the message is there.
TEST(Polling, ABusyPollSeesTheMessageArrive) {
  int64_t polls = 0;
  int got = -1;
  auto report = sim::run(options(2), [&] {
    auto t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 0) {
      auto pending = irecv(t, 1);
      while (!pending.is_completed()) ++polls;
      pending.wait();
      got = t.to_vector<int32_t>()[0];
    } else {
      t.data<int32_t>()[0] = 42;
      send(t, 0);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_EQ(got, 42);
}

// Nothing will ever arrive: the poller ends up waiting, and the run is a deadlock naming its
// receive, not a process that spins forever.
TEST(Polling, APollThatCanNeverSucceedIsADeadlock) {
  auto report = sim::run(options(2), [&] {
    auto t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 0) {
      auto pending = irecv(t, 1);
      while (!pending.is_completed()) {
      }
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  ASSERT_EQ(report.ranks.size(), 2u);
  EXPECT_EQ(report.ranks[0].state, "blocked");
  EXPECT_EQ(report.ranks[0].op, "recv");
}

// A message that costs virtual time: polling takes none, so the poll ends when the message lands.
TEST(Polling, APollEndsWhenAPricedMessageLands) {
  sim::Options o = options(2);
  o.model = "ethernet-40g";
  std::chrono::nanoseconds landed{0}, sent{0};
  auto report = sim::run(o, [&] {
    auto t = Tensor::zeros({1024}, DType::Float32);
    if (get_rank() == 0) {
      auto pending = irecv(t, 1);
      while (!pending.is_completed()) {
      }
      landed = ranks::now();
    } else {
      sleep_for(std::chrono::milliseconds(5));
      sent = ranks::now();
      send(t, 0);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_EQ(sent, std::chrono::milliseconds(5));
  EXPECT_GT(landed, sent);  // the message's price on the model's link
  EXPECT_EQ(report.virtual_time, landed);
}

// --- a rank that never hands the thread back
// ------------------------------------------------------

// Rank 1 reads a pipe nobody writes to: a real block, which no other rank could ever end.
void block_rank_one_forever() {
  if (get_rank() == 0) barrier();
  if (get_rank() == 1) {
    int fds[2];
    if (::pipe(fds) == 0) {
      char byte;
      (void)!::read(fds[0], &byte, 1);
    }
  }
  barrier();
}

TEST(WallGuard, ARankBlockedOutsideRanksEndsTheRunWithItsReport) {
  sim::Options o = options(3);
  o.timeout = std::chrono::milliseconds(200);
  const std::filesystem::path report_file =
      std::filesystem::temp_directory_path() /
      ("wall_guard_report." + std::to_string(::getpid()) + ".json");
  EXPECT_EXIT(
      {
        sim::detail::install_crash_report(report_file.c_str());  // as ranks::main does
        sim::run(o, block_rank_one_forever);
      },
      testing::ExitedWithCode(1), "");
  std::ifstream in(report_file);
  ASSERT_TRUE(in) << "no report at " << report_file;
  const nlohmann::json report = nlohmann::json::parse(in);
  std::filesystem::remove(report_file);
  EXPECT_EQ(report["outcome"], "timeout");
  EXPECT_TRUE(report["message"].get<std::string>().starts_with(
      "rank 1 has not handed the thread back to the simulator for 200 ms of real time (the "
      "run's timeout), before any op: it is blocked or busy outside ranks"))
      << report["message"];
  ASSERT_EQ(report["ranks"].size(), 3u);
  EXPECT_EQ(report["ranks"][0]["state"], "blocked");
  EXPECT_EQ(report["ranks"][0]["op"], "barrier");
  EXPECT_EQ(report["ranks"][0]["seq"], 0);
  EXPECT_EQ(report["ranks"][1]["state"], "blocked");
  EXPECT_EQ(report["ranks"][1]["op"], "");
  EXPECT_EQ(report["ranks"][1]["error"],
            "kept the thread for 200 ms of real time, outside ranks (before any op)");
  EXPECT_EQ(report["ranks"][2]["error"], "had entered no op when the run ended");
}

TEST(WallGuard, TheTimeoutIsPerStretchNotForTheWholeRun) {
  // Each rank keeps the thread for 20 ms at a time, 40 times in all: the run takes four times
  // the timeout of real time and never holds the thread for a whole one.
  sim::Options o = options(2);
  o.timeout = std::chrono::milliseconds(200);
  auto report = sim::run(o, [] {
    for (int step = 0; step < 20; ++step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      barrier();
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
}

}  // namespace
}  // namespace ranks
