// Diagnosis of runs that cannot go on: wait-for cycles (rings of receives, cycles through a
// collective, none through a finished rank or an any-source receive), where the ranks missing
// from a stuck collective are instead, the report rows' peer/dtype/count, and a 10,000-rank
// deadlock that stays a paragraph. Timeouts, seeds and traces: diagnosis_timeline_test.cpp.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

std::string site(int line) { return fmt::format("diagnosis_test.cpp:{}", line); }

// --- wait-for cycles --------------------------------------------------------------------------

class RingOfReceives : public ::testing::TestWithParam<int> {};

TEST_P(RingOfReceives, ForwardRingIsListedInOrder) {
  const int n = GetParam();
  sim::Report report = simulate(n, [n] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    recv(t, (get_rank() + 1) % n);  // rank r waits for r+1
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  std::vector<int> want(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) want[static_cast<size_t>(r)] = r;
  EXPECT_EQ(report.cycle, want);
  if (n <= 5) {
    std::string arrows;
    for (int r = 0; r < n; ++r) arrows += fmt::format("{} → ", r);
    EXPECT_TRUE(Contains(report.message, "wait-for cycle: " + arrows + "0."));
    EXPECT_TRUE(Contains(report.to_text(), "wait-for cycle: " + arrows + "0"));
  }
  if (n == 1000) {
    // A long cycle shows its ends and a count, so the message stays a paragraph.
    const std::string shown =
        "wait-for cycle: 0 → 1 → 2 → 3 → 4 → 5 → 6 → 7 → … (990 more) → 998 → 999 → 0";
    EXPECT_TRUE(Contains(report.message, shown + ".")) << report.message.substr(0, 400);
    EXPECT_TRUE(Contains(report.to_text(), shown + "\n"));
    EXPECT_LT(report.message.size(), 3000u);
    // One line per rank for the first 48, then a count.
    EXPECT_TRUE(Contains(report.to_text(), "  rank 47      blocked in recv from rank 48 "));
    EXPECT_FALSE(Contains(report.to_text(), "  rank 48 "));
    EXPECT_TRUE(Contains(report.to_text(), "  ... 952 more lines for 952 ranks not shown"));
    EXPECT_LT(report.to_text().size(), 12000u);
  }
  auto json = nlohmann::json::parse(report.to_json());
  EXPECT_EQ(json["cycle"].get<std::vector<int>>(), want);
}

TEST_P(RingOfReceives, ReverseRingStartsAtZeroAndGoesDown) {
  const int n = GetParam();
  sim::Report report = simulate(n, [n] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    recv(t, (get_rank() + n - 1) % n);  // rank r waits for r-1
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  std::vector<int> want = {0};
  for (int r = n - 1; r >= 1; --r) want.push_back(r);
  EXPECT_EQ(report.cycle, want);
}

INSTANTIATE_TEST_SUITE_P(Sim, RingOfReceives, ::testing::Values(2, 3, 5, 1000),
                         [](const auto& param) { return fmt::format("n{}", param.param); });

TEST(WaitForCycle, ThroughACollectiveListsRanksOnly) {
  // Rank 0 is in the barrier, which waits for rank 1; rank 1 waits for a message from rank 0.
  int barrier_line = 0, recv_line = 0;
  sim::Report report = simulate(4, [&] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 1) {
      recv_line = __LINE__ + 1;
      recv(t, 0);
    } else {
      barrier_line = __LINE__ + 1;
      barrier();
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_EQ(report.cycle, (std::vector<int>{0, 1}));
  EXPECT_TRUE(Contains(report.message, "wait-for cycle: 0 → 1 → 0."));
  EXPECT_TRUE(Contains(report.message,
                       "3 of 4 arrived; missing: rank 1 is in recv from rank 0 on group "
                       "'world' seq 0 at " +
                           site(recv_line)));
  EXPECT_EQ(row(report, 1).op, "recv");
  EXPECT_EQ(row(report, 0).where, site(barrier_line));
}

TEST(WaitForCycle, ALongerCycleThroughACollective) {
  // 0 (barrier, missing 1 and 2) → 1 (recv from 2) → 2 (recv from 0) → 0.
  sim::Report report = simulate(4, [] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    switch (get_rank()) {
      case 1:
        recv(t, 2);
        break;
      case 2:
        recv(t, 0);
        break;
      default:
        barrier();
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_EQ(report.cycle, (std::vector<int>{0, 1, 2}));
}

TEST(WaitForCycle, ARankWaitingOnACycleIsNotInIt) {
  // 0 → 2 → 1 → 2: the cycle is 1 → 2, listed from its smallest rank.
  sim::Report report = simulate(3, [] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    recv(t, get_rank() == 2 ? 1 : 2);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_EQ(report.cycle, (std::vector<int>{1, 2}));
  EXPECT_TRUE(Contains(report.message, "wait-for cycle: 1 → 2 → 1."));
}

TEST(WaitForCycle, NoneWhenTheMissingRankFinished) {
  sim::Report collective = simulate(4, [] {
    if (get_rank() == 3) return;
    barrier();
  });
  EXPECT_EQ(collective.outcome, sim::Outcome::Deadlock) << collective.to_text();
  EXPECT_TRUE(collective.cycle.empty());
  EXPECT_FALSE(Contains(collective.message, "cycle"));
  EXPECT_TRUE(Contains(collective.to_json(), "\"cycle\": []"));

  sim::Report p2p = simulate(3, [] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 2) return;
    recv(t, get_rank() + 1);  // 0 → 1 → 2, which finished
  });
  EXPECT_EQ(p2p.outcome, sim::Outcome::Deadlock) << p2p.to_text();
  EXPECT_TRUE(p2p.cycle.empty());
}

TEST(WaitForCycle, AnAnySourceReceiveContributesNoEdge) {
  auto run = [](int rank0_source) {
    return simulate(3, [rank0_source] {
      Tensor t = Tensor::zeros({1}, DType::Int32);
      switch (get_rank()) {
        case 0:
          recv(t, rank0_source);
          break;
        case 1:
          recv(t, 2);
          break;
        default:
          recv(t, 0);
      }
    });
  };
  sim::Report any = run(any_source);
  EXPECT_EQ(any.outcome, sim::Outcome::Deadlock) << any.to_text();
  EXPECT_TRUE(any.cycle.empty()) << any.to_text();
  EXPECT_TRUE(Contains(any.message, "rank 0 in recv from any source"));
  // The same program with a named source is a cycle.
  sim::Report named = run(1);
  EXPECT_EQ(named.cycle, (std::vector<int>{0, 1, 2}));
}

// --- where the missing ranks are --------------------------------------------------------------

TEST(StuckCollective, SaysWhoArrivedAndWhereEachMissingRankIsInstead) {
  int barrier_line = 0, recv3_line = 0, recv4_line = 0;
  sim::Report report = simulate(5, [&] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    switch (get_rank()) {
      case 2:
        return;  // finished without the barrier
      case 3:
        recv3_line = __LINE__ + 1;
        recv(t, 4);
        return;
      case 4:
        recv4_line = __LINE__ + 1;
        recv(t, any_source, {}, 6);
        return;
      default:
        barrier_line = __LINE__ + 1;
        barrier();
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_TRUE(report.cycle.empty());
  EXPECT_TRUE(Contains(report.message, "deadlock at virtual time 0 ns"));
  EXPECT_TRUE(Contains(report.message, "4 of 5 ranks are blocked"));
  EXPECT_TRUE(Contains(
      report.message,
      fmt::format("ranks 0-1 in barrier on group 'world' seq 0 at {} (2 of 5 arrived; missing: "
                  "rank 2 finished without calling it, rank 3 is in recv from rank 4 on group "
                  "'world' seq 0 at {}, rank 4 is in recv from any source on group 'world' seq 0 "
                  "at {})",
                  site(barrier_line), site(recv3_line), site(recv4_line))));
  EXPECT_TRUE(Contains(report.message,
                       fmt::format("rank 3 in recv from rank 4 on group 'world' p2p seq 0, 1 x "
                                   "int32 at {} (rank 4 has sent no message with tag 0)",
                                   site(recv3_line))));
  EXPECT_TRUE(Contains(report.message,
                       fmt::format("rank 4 in recv from any source on group 'world' p2p seq 0, 1 "
                                   "x int32 at {} (no rank has sent a message with tag 6)",
                                   site(recv4_line))));
  EXPECT_EQ(row(report, 2).state, "finished");
  for (int r : {0, 1, 3, 4}) EXPECT_EQ(row(report, r).state, "blocked") << "rank " << r;
  EXPECT_TRUE(Contains(row(report, 0).error, "blocked forever"));
}

// A timeout says where each rank it waits for is instead; ranks timing out at the same moment
// are still in their ops for each other's messages.
TEST(StuckCollective, ATimeoutSaysWhereTheMissingRanksAre) {
  int all_reduce_line = 0, recv_line = 0;
  sim::Options options = default_options();
  options.timeout = std::chrono::seconds(10);
  sim::Report report = simulate(
      4,
      [&] {
        Tensor t = Tensor::zeros({1}, DType::Int32);
        if (get_rank() == 2) sleep_for(std::chrono::seconds(60));
        recv_line = __LINE__ + 1;
        if (get_rank() == 3) recv(t, 0);
        all_reduce_line = __LINE__ + 1;
        all_reduce(t);
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(row(report, 0).error,
            fmt::format("rank 0 timed out after 10 s in all_reduce on group 'world' seq 0 at {}; 2 "
                        "of 4 ranks arrived; not arrived: ranks 2, 3; rank 2 is sleeping "
                        "(sleep_for); rank 3 is in recv from rank 0 on group 'world' seq 0 at {}",
                        site(all_reduce_line), site(recv_line)));
  EXPECT_EQ(row(report, 3).error,
            fmt::format("rank 3 timed out after 10 s in recv on group 'world' seq 0 at {}; rank 0 "
                        "has sent no message with tag 0; rank 0 is in all_reduce on group 'world' "
                        "seq 0 at {}",
                        site(recv_line), site(all_reduce_line)));
}

// When a rank failed first, the ranks left waiting are woken with a RankFailure that says where
// the missing rank is; the report's message stays the first failure's.
TEST(StuckCollective, AMissingRankThatFailedIsNamedWithItsError) {
  int line = 0;
  std::vector<std::string> told(3);
  sim::Report report = simulate(3, [&] {
    if (get_rank() == 2) throw std::runtime_error("out of memory, say");
    try {
      line = __LINE__ + 1;
      barrier();
    } catch (const RankFailure& e) {
      told[static_cast<size_t>(get_rank())] = e.what();
      throw;
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Error) << report.to_text();
  EXPECT_EQ(report.message, "rank 2 failed: out of memory, say");
  for (int r : {0, 1}) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    const std::string& what = told[static_cast<size_t>(r)];
    EXPECT_TRUE(Contains(what, "rank 2 failed first (error: out of memory, say)"));
    EXPECT_TRUE(Contains(what, fmt::format("ranks 0-1 in barrier on group 'world' seq 0 at {} (2 "
                                           "of 3 arrived; missing: rank 2 failed: out of memory, "
                                           "say)",
                                           site(line))));
    EXPECT_EQ(row(report, r).state, "blocked");
    EXPECT_EQ(row(report, r).error,
              "blocked on a failed rank: 2 of 3 ranks arrived; not arrived: "
              "rank 2");
  }
}

// --- which op a failed rank's row names ----------------------------------------------------------

// The body's own exception after an op completed: the row is in no op (the barrier succeeded),
// and the error says what the rank last did.
TEST(FailedRow, ABodyFailingAfterAnOpIsInNoOp) {
  int line = 0;
  sim::Report report = simulate(3, [&] {
    line = __LINE__ + 1;
    barrier();
    if (get_rank() == 1) throw std::runtime_error("bad batch");
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Error) << report.to_text();
  EXPECT_EQ(row(report, 1).state, "failed");
  EXPECT_EQ(row(report, 1).op, "");
  EXPECT_EQ(row(report, 1).seq, -1);
  EXPECT_EQ(row(report, 1).where, "");
  EXPECT_EQ(row(report, 1).error,
            fmt::format("bad batch (thrown by the body after entering its op 1 (barrier on group "
                        "'world' seq 0 at {}))",
                        site(line)));
}

// A ranks::Error the body raises itself after an op (a tensor read as the wrong dtype) is the
// body's too: the all_reduce before it succeeded and is not blamed.
TEST(FailedRow, ARanksErrorOfTheBodyAfterAnOpIsInNoOp) {
  int line = 0;
  sim::Report report = simulate(2, [&] {
    Tensor t = Tensor::of<float>({1.0f});
    line = __LINE__ + 1;
    all_reduce(t);
    if (get_rank() == 1) t.to_vector<double>();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Error) << report.to_text();
  EXPECT_EQ(row(report, 1).state, "failed");
  EXPECT_EQ(row(report, 1).op, "");
  EXPECT_EQ(row(report, 1).where, "");
  EXPECT_NE(row(report, 1).error.find(fmt::format("(thrown by the body after entering its op 1 "
                                                  "(all_reduce on group 'world' seq 0 at {}))",
                                                  site(line))),
            std::string::npos)
      << row(report, 1).error;
}

// An argument the front end refuses: the row names the refused call, not the op before it.
TEST(FailedRow, ARefusedArgumentNamesTheRefusedCall) {
  int barrier_line = 0, send_line = 0;
  sim::Report report = simulate(2, [&] {
    barrier_line = __LINE__ + 1;
    barrier();
    Tensor t = Tensor::zeros({1}, DType::Int32);
    send_line = __LINE__ + 1;
    if (get_rank() == 0) send(t, 7);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Error) << report.to_text();
  EXPECT_EQ(row(report, 0).op, "send");
  EXPECT_EQ(row(report, 0).group, "world");
  EXPECT_EQ(row(report, 0).seq, 0);  // the first point-to-point op
  EXPECT_EQ(row(report, 0).where, site(send_line));
  EXPECT_NE(row(report, 0).where, site(barrier_line));
}

TEST(FailedRow, ACallOnAGroupTheRankIsNotInNamesThatCall) {
  int line = 0;
  sim::Report report = simulate(3, [&] {
    Group pair = new_group({0, 1});
    Tensor t = Tensor::zeros({1}, DType::Int32);
    line = __LINE__ + 1;
    if (get_rank() == 2) all_reduce(t, ReduceOp::Sum, pair);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Error) << report.to_text();
  EXPECT_EQ(row(report, 2).op, "all_reduce");
  EXPECT_EQ(row(report, 2).where, site(line));
  EXPECT_TRUE(Contains(row(report, 2).error, "is not a member of group"));
}

TEST(StuckCollective, AMissingRankThatCrashedIsNamedAsCrashed) {
  // nccl survivors wait for their watchdog. With a timeout no run can reach (they wait from 1 ms,
  // and 1 ms + the timeout is past the end of the clock) there is none, so the run is stuck on a
  // crashed rank.
  sim::Options options = default_options();
  options.backend = "nccl";
  options.timeout = std::chrono::milliseconds(std::chrono::nanoseconds::max().count() / 1'000'000);
  options.faults = {"crash:rank=2,op=1"};
  int line = 0;
  std::vector<std::string> told(3);
  sim::Report report = simulate(
      3,
      [&] {
        sleep_for(1ms);
        try {
          line = __LINE__ + 1;
          barrier();
        } catch (const RankFailure& e) {
          told[static_cast<size_t>(get_rank())] = e.what();
          throw;
        }
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 1ms);
  EXPECT_TRUE(Contains(report.message, "rank 2 crashed (fault 'crash:rank=2,op=1')"));
  EXPECT_EQ(row(report, 2).state, "crashed");
  for (int r : {0, 1}) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    const std::string& what = told[static_cast<size_t>(r)];
    EXPECT_TRUE(Contains(what, "rank 2 failed first (crash: rank 2 crashed"));
    EXPECT_TRUE(Contains(what, fmt::format("ranks 0-1 in barrier on group 'world' seq 0 at {} (2 "
                                           "of 3 arrived; missing: rank 2 crashed)",
                                           site(line))));
    EXPECT_EQ(row(report, r).state, "blocked");
    EXPECT_EQ(row(report, r).error,
              "blocked on a failed rank: 2 of 3 ranks arrived; not arrived: "
              "rank 2");
  }
}

// --- peer, dtype and count in the rows --------------------------------------------------------

TEST(ReportRows, CarryPeerDtypeAndCount) {
  sim::Report report = simulate(5, [] {
    const int rank = get_rank();
    Group g = new_group({1, 2, 3});
    switch (rank) {
      case 0: {
        Tensor t = Tensor::zeros({3}, DType::Float32);
        recv(t, any_source);  // tag 0: never sent
        return;
      }
      case 4: {
        Tensor t = Tensor::zeros({2}, DType::Float64);
        send(t, 0, {}, 9);  // tag 9: never received
        return;
      }
      case 3:
        return;  // the broadcast's third member never comes
      default: {
        Tensor t = Tensor::zeros({4}, DType::Int64);
        broadcast(t, 1, g);  // group rank 1 is global rank 2
      }
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_EQ(row(report, 0).op, "recv");
  EXPECT_EQ(row(report, 0).peer, std::optional<int>(-1));
  EXPECT_EQ(row(report, 0).dtype, "float32");
  EXPECT_EQ(row(report, 0).count, 3);
  for (int r : {1, 2}) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    EXPECT_EQ(row(report, r).op, "broadcast");
    EXPECT_EQ(row(report, r).group, "world/1,2,3");
    EXPECT_EQ(row(report, r).seq, 0);
    EXPECT_EQ(row(report, r).peer, std::optional<int>(2));
    EXPECT_EQ(row(report, r).dtype, "int64");
    EXPECT_EQ(row(report, r).count, 4);
  }
  EXPECT_EQ(row(report, 3).state, "finished");
  EXPECT_EQ(row(report, 3).peer, std::nullopt);
  EXPECT_EQ(row(report, 3).count, -1);
  EXPECT_EQ(row(report, 4).op, "send");
  EXPECT_EQ(row(report, 4).peer, std::optional<int>(0));
  EXPECT_EQ(row(report, 4).dtype, "float64");
  EXPECT_EQ(row(report, 4).count, 2);

  auto json = nlohmann::json::parse(report.to_json());
  EXPECT_EQ(json["ranks"][0]["peer"], -1);
  EXPECT_EQ(json["ranks"][1]["peer"], 2);
  EXPECT_EQ(json["ranks"][1]["dtype"], "int64");
  EXPECT_EQ(json["ranks"][1]["count"], 4);
  EXPECT_EQ(json["ranks"][4]["peer"], 0);
  EXPECT_FALSE(json["ranks"][3].contains("peer"));
  EXPECT_TRUE(Contains(report.to_text(), "blocked in recv from any source [3 x float32]"));
  EXPECT_TRUE(Contains(report.to_text(), "blocked in broadcast (root 2) [4 x int64]"));
  EXPECT_TRUE(Contains(report.to_text(), "blocked in send to rank 0 [2 x float64]"));
  EXPECT_TRUE(Contains(report.message,
                       "ranks 1-2 in broadcast (root rank 2) on group "
                       "'world/1,2,3' seq 0, 4 x int64"));
}

TEST(ReportRows, RootOfAGatherInASubGroupIsItsGlobalRank) {
  sim::Report report = simulate(4, [] {
    Group g = new_group({1, 2, 3});
    if (get_rank() == 0 || get_rank() == 1) return;
    Tensor t = Tensor::zeros({5}, DType::UInt8);
    gather(t, 2, g);  // group rank 2 is global rank 3; global 1 never comes
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  for (int r : {2, 3}) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    EXPECT_EQ(row(report, r).op, "gather");
    EXPECT_EQ(row(report, r).peer, std::optional<int>(3));
    EXPECT_EQ(row(report, r).dtype, "uint8");
    EXPECT_EQ(row(report, r).count, 5);
  }
  EXPECT_TRUE(Contains(report.message, "2 of 3 arrived; missing: rank 1 finished"));
}

TEST(ReportRows, BarrierHasNoPeerNorTensor) {
  sim::Report report = simulate(2, [] {
    if (get_rank() == 0) barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_EQ(row(report, 0).op, "barrier");
  EXPECT_EQ(row(report, 0).peer, std::nullopt);
  EXPECT_EQ(row(report, 0).dtype, "");
  EXPECT_EQ(row(report, 0).count, -1);
}

// --- 10,000 ranks ------------------------------------------------------------------------------

TEST(Scale, TenThousandRankDeadlockStaysAParagraphWithEveryRow) {
  const int n = 10'000;
  int line = 0;
  sim::Report report = simulate(n, [&] {
    if (get_rank() == 0) return;
    line = __LINE__ + 1;
    barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock);
  EXPECT_LT(report.message.size(), 4096u) << report.message;
  EXPECT_TRUE(Contains(report.message, "9999 of 10000 ranks are blocked"));
  EXPECT_TRUE(Contains(report.message,
                       fmt::format("ranks 1-9999 in barrier on group 'world' seq 0 at {} (9999 of "
                                   "10000 arrived; missing: rank 0 finished without calling it)",
                                   site(line))));
  ASSERT_EQ(report.ranks.size(), static_cast<size_t>(n));
  EXPECT_EQ(report.ranks[0].state, "finished");
  for (int r = 1; r < n; ++r) {
    const auto& rr = report.ranks[static_cast<size_t>(r)];
    if (rr.rank != r || rr.state != "blocked" || rr.op != "barrier" || rr.where != site(line)) {
      ADD_FAILURE() << "row " << r << ": rank " << rr.rank << " " << rr.state << " " << rr.op
                    << " at " << rr.where;
      break;
    }
  }
  auto json = nlohmann::json::parse(report.to_json());
  EXPECT_EQ(json["ranks"].size(), static_cast<size_t>(n));
  EXPECT_EQ(json["ranks"][n - 1]["state"], "blocked");
  // The text report folds the 9,999 identical rows into one line.
  EXPECT_TRUE(Contains(report.to_text(), "ranks 1-9999"));
  EXPECT_LT(report.to_text().size(), 4096u);
}

TEST(Scale, TenThousandRanksAtAlternatingCallSitesStillCountTheRest) {
  // Odd and even ranks wait in the same barrier from different lines, so no two neighbours fold:
  // the message shows 12 entries and counts the other 9,987 blocked ranks.
  const int n = 10'000;
  int odd_line = 0, even_line = 0;
  sim::Report report = simulate(n, [&] {
    const int rank = get_rank();
    if (rank == 0) return;
    if (rank % 2 == 1) {
      odd_line = __LINE__ + 1;
      barrier();
    } else {
      even_line = __LINE__ + 1;
      barrier();
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock);
  EXPECT_LT(report.message.size(), 4096u) << report.message;
  EXPECT_TRUE(Contains(report.message, "9999 of 10000 ranks are blocked"));
  EXPECT_TRUE(Contains(report.message, "and 9987 more blocked ranks"));
  EXPECT_TRUE(
      Contains(report.message,
               fmt::format("rank 12 in barrier on group 'world' seq 0 at {}", site(even_line))));
  EXPECT_FALSE(Contains(report.message, "rank 13 in barrier"));
  ASSERT_EQ(report.ranks.size(), static_cast<size_t>(n));
  EXPECT_EQ(report.ranks[9999].where, site(odd_line));
  EXPECT_EQ(report.ranks[9998].where, site(even_line));
}

}  // namespace
}  // namespace ranks::testing

namespace ranks::testing {
namespace {

// A shape mismatch at 1,024 ranks: every rank fails with the same long paragraph. The text shows
// it once (the message), names it in the rows, and stops after a few pages; the JSON has every
// rank with its whole error.
TEST(ReportAtScale, ALongErrorIsShownOnceAndTheTextStaysShort) {
  constexpr int n = 1024;
  sim::Report report = simulate(n, [] {
    Tensor t = Tensor::zeros({1 + get_rank() % 2}, DType::Float32);
    all_reduce(t);
  });
  ASSERT_EQ(report.outcome, sim::Outcome::Mismatch) << report.message;
  const std::string text = report.to_text();
  EXPECT_LT(text.size(), 24000u) << text.substr(0, 2000);
  EXPECT_TRUE(Contains(text, "(the error in the message above)"));
  EXPECT_TRUE(Contains(text, "more lines for"));
  auto json = nlohmann::json::parse(report.to_json());
  ASSERT_EQ(json["ranks"].size(), static_cast<size_t>(n));
  for (const auto& row : json["ranks"]) {
    EXPECT_TRUE(Contains(row["error"].get<std::string>(), "mismatched collectives"));
  }
}

}  // namespace
}  // namespace ranks::testing
