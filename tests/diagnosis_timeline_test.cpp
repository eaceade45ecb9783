// Diagnosis along the virtual clock: timeouts versus deadlocks, seeded schedules that expose and
// replay a race, and the Chrome trace with its slices, blocked time and failures.

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

std::string site(int line) { return fmt::format("diagnosis_timeline_test.cpp:{}", line); }

// --- timeouts versus deadlocks ------------------------------------------------------------------

TEST(TimeoutOrDeadlock, ASleepingStragglerIsATimeout) {
  sim::Report report = simulate(3, [] {
    if (get_rank() == 0) sleep_for(40min);
    barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, 30min);
  EXPECT_TRUE(Contains(report.message, "timed out after 30 min in barrier"));
  EXPECT_FALSE(Contains(report.message, "deadlock"));
  for (int r : {1, 2}) {
    EXPECT_EQ(row(report, r).state, "failed") << "rank " << r;
    EXPECT_TRUE(Contains(row(report, r).error, "timed out")) << "rank " << r;
  }
}

TEST(TimeoutOrDeadlock, ARankThatLeftIsADeadlockAtOnceNotATimeoutLater) {
  // Rank 0 sleeps 10 min and then returns without the barrier. From then on nothing can change:
  // the report says so at 10 min rather than waiting for the 30 min timeout.
  sim::Report report = simulate(3, [] {
    if (get_rank() == 0) {
      sleep_for(10min);
      return;
    }
    barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_EQ(report.virtual_time, 10min);
  EXPECT_TRUE(Contains(report.message, "deadlock at virtual time 10 min"));
  EXPECT_TRUE(Contains(report.message, "no event is pending"));
  EXPECT_FALSE(Contains(report.message, "timed out"));
  for (int r : {1, 2}) {
    EXPECT_EQ(row(report, r).state, "blocked") << "rank " << r;
    EXPECT_TRUE(Contains(row(report, r).error, "blocked forever")) << "rank " << r;
  }
}

TEST(TimeoutOrDeadlock, AStragglerThatNeverComesButSleepsPastTheTimeoutIsATimeout) {
  // While rank 0 sleeps, it could still arrive: the waiters' timeout fires first.
  sim::Report report = simulate(2, [] {
    if (get_rank() == 0) {
      sleep_for(31min);
      return;
    }
    barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, 30min);
}

// --- seeded schedules
// -----------------------------------------------------------------------------

// Ranks 1 and 2 each send their rank to rank 0, which insists the first came from rank 1.
sim::Report any_source_race(uint64_t seed) {
  sim::Options options = default_options();
  options.seed = seed;
  return simulate(
      3,
      [] {
        const int rank = get_rank();
        if (rank != 0) {
          send(Tensor::of<int32_t>({rank}), 0);
          return;
        }
        Tensor t = Tensor::zeros({1}, DType::Int32);
        int first = recv(t, any_source);
        if (first != 1 || t.item<int32_t>() != 1) {
          throw std::runtime_error(fmt::format("first message came from rank {}", first));
        }
        recv(t, any_source);
      },
      options);
}

TEST(Seeds, AnAnySourceRaceIsExposedBySomeSeedAndReplays) {
  sim::Report fifo = any_source_race(0);
  EXPECT_EQ(fifo.outcome, sim::Outcome::Ok) << fifo.to_text();
  std::optional<uint64_t> failing;
  for (uint64_t seed = 1; seed <= 20 && !failing; ++seed) {
    if (any_source_race(seed).outcome != sim::Outcome::Ok) failing = seed;
  }
  ASSERT_TRUE(failing.has_value()) << "no seed in 1..20 exposed the race";
  sim::Report a = any_source_race(*failing);
  sim::Report b = any_source_race(*failing);
  EXPECT_EQ(a.outcome, sim::Outcome::Error) << a.to_text();
  EXPECT_EQ(a.seed, *failing);
  EXPECT_TRUE(Contains(a.message, "rank 0 failed: first message came from rank 2"));
  EXPECT_EQ(row(a, 0).state, "failed");
  // Rank 1's message is never received.
  EXPECT_EQ(row(a, 1).state, "blocked");
  EXPECT_EQ(row(a, 1).op, "send");
  EXPECT_EQ(a.to_json(), b.to_json());
  EXPECT_EQ(a.to_text(), b.to_text());
  EXPECT_TRUE(Contains(a.to_json(), fmt::format("\"seed\": {}", *failing)));
}

// --- traces ------------------------------------------------------------------------------------

nlohmann::json run_traced(int n, const std::function<void()>& body, sim::Options options,
                          const std::string& name, sim::Report* report = nullptr) {
  auto path = std::filesystem::path(::testing::TempDir()) / ("ranks_diagnosis_" + name + ".json");
  options.trace = path;
  sim::Report r = simulate(n, body, options);
  if (report) *report = r;
  std::ifstream in(path);
  auto json = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  return json;
}

std::vector<nlohmann::json> events(const nlohmann::json& trace, const std::string& ph, int tid) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == ph && e["tid"] == tid) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a["ts"].template get<double>() < b["ts"].template get<double>();
  });
  return out;
}

TEST(Trace, OneTrackPerRankAndASlicePerOp) {
  int barrier_line = 0, reduce_line = 0, send_line = 0, recv_line = 0;
  sim::Report report;
  nlohmann::json trace = run_traced(
      3,
      [&] {
        const int rank = get_rank();
        if (rank == 0) sleep_for(1s);
        barrier_line = __LINE__ + 1;
        barrier();
        Tensor t = Tensor::of<int32_t>({rank});
        reduce_line = __LINE__ + 1;
        all_reduce(t);
        if (rank == 0) {
          send_line = __LINE__ + 1;
          send(t, 1);
        } else if (rank == 1) {
          recv_line = __LINE__ + 1;
          recv(t, 0);
        }
      },
      default_options(), "ok", &report);
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  for (int r = 0; r < 3; ++r) {
    auto meta = events(trace, "M", r);
    ASSERT_EQ(meta.size(), 1u) << "rank " << r;
    EXPECT_EQ(meta[0]["name"], "thread_name");
    EXPECT_EQ(meta[0]["args"]["name"], fmt::format("rank {}", r));
  }
  struct Slice {
    std::string name, group;
    int64_t seq;
    std::string where;
    double ts, dur;  // microseconds
  };
  auto slices = [&](int r) {
    std::vector<Slice> out;
    for (const auto& e : events(trace, "X", r)) {
      out.push_back({e["name"].get<std::string>(), e["args"]["group"].get<std::string>(),
                     e["args"]["seq"].get<int64_t>(), e["args"]["where"].get<std::string>(),
                     e["ts"].get<double>(), e["dur"].get<double>()});
    }
    return out;
  };
  auto r0 = slices(0), r1 = slices(1), r2 = slices(2);
  ASSERT_EQ(r0.size(), 4u);
  ASSERT_EQ(r1.size(), 3u);
  ASSERT_EQ(r2.size(), 2u);
  EXPECT_EQ(r0[0].name, "sleep_for");
  EXPECT_EQ(r0[0].dur, 1e6);
  EXPECT_EQ(r0[1].name, "barrier");
  EXPECT_EQ(r0[1].ts, 1e6);
  EXPECT_EQ(r0[1].dur, 0.0);
  EXPECT_EQ(r0[3].name, "send");
  EXPECT_EQ(r0[3].group, "world");
  EXPECT_EQ(r0[3].seq, 0);
  EXPECT_EQ(r0[3].where, site(send_line));
  // Rank 1 waited in the barrier for the whole second: its blocked time is the slice.
  EXPECT_EQ(r1[0].name, "barrier");
  EXPECT_EQ(r1[0].group, "world");
  EXPECT_EQ(r1[0].seq, 0);
  EXPECT_EQ(r1[0].where, site(barrier_line));
  EXPECT_EQ(r1[0].ts, 0.0);
  EXPECT_EQ(r1[0].dur, 1e6);
  EXPECT_EQ(r1[1].name, "all_reduce");
  EXPECT_EQ(r1[1].seq, 1);
  EXPECT_EQ(r1[1].where, site(reduce_line));
  EXPECT_EQ(r1[2].name, "recv");
  EXPECT_EQ(r1[2].where, site(recv_line));
  EXPECT_EQ(r2[1].name, "all_reduce");
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(events(trace, "i", r).empty()) << "rank " << r;
}

TEST(Trace, MarksACrashAndTheFailuresItCauses) {
  sim::Options options = default_options();
  options.backend = "gloo";
  options.faults = {"crash:rank=1,op=2"};
  sim::Report report;
  nlohmann::json trace = run_traced(
      3,
      [] {
        barrier();
        if (get_rank() == 1) sleep_for(2s);
        barrier();
      },
      options, "crash", &report);
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  auto crashed = events(trace, "i", 1);
  ASSERT_EQ(crashed.size(), 1u);
  EXPECT_EQ(crashed[0]["name"], "crashed");
  EXPECT_EQ(crashed[0]["ts"].get<double>(), 2e6);
  EXPECT_TRUE(Contains(crashed[0]["args"]["detail"].get<std::string>(), "crash:rank=1,op=2"));
  for (int r : {0, 2}) {
    auto failed = events(trace, "i", r);
    ASSERT_EQ(failed.size(), 1u) << "rank " << r;
    EXPECT_EQ(failed[0]["name"], "failed");
    EXPECT_EQ(failed[0]["ts"].get<double>(), 2e6);
    EXPECT_TRUE(Contains(failed[0]["args"]["detail"].get<std::string>(), "lost rank 1"));
    // The first barrier completed at once; the second failed after the 2 s the rank waited
    // in it, and its slice spans that wait.
    auto slices = events(trace, "X", r);
    ASSERT_EQ(slices.size(), 2u) << "rank " << r;
    EXPECT_EQ(slices[0]["name"], "barrier");
    EXPECT_EQ(slices[0]["dur"].get<double>(), 0.0);
    EXPECT_EQ(slices[1]["name"], "barrier");
    EXPECT_EQ(slices[1]["args"]["seq"], 1);
    EXPECT_EQ(slices[1]["dur"].get<double>(), 2e6);
  }
}

TEST(Trace, MarksATimeoutWhereItHappened) {
  sim::Report report;
  nlohmann::json trace = run_traced(
      2,
      [] {
        if (get_rank() == 0) sleep_for(31min);
        barrier();
      },
      default_options(), "timeout", &report);
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  auto failed = events(trace, "i", 1);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["name"], "failed");
  EXPECT_EQ(failed[0]["ts"].get<double>(), 30.0 * 60 * 1e6);
  EXPECT_TRUE(Contains(failed[0]["args"]["detail"].get<std::string>(), "timed out"));
  // Rank 1's barrier that never completed is still a slice: it was blocked in it for 30 min.
  auto blocked = events(trace, "X", 1);
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked[0]["name"], "barrier");
  EXPECT_EQ(blocked[0]["ts"].get<double>(), 0.0);
  EXPECT_EQ(blocked[0]["dur"].get<double>(), 30.0 * 60 * 1e6);
}

// --- faults a run never reached ------------------------------------------------------------------

TEST(Faults, AnOkRunSaysWhichFaultsNeverStruck) {
  sim::Options options = default_options();
  options.faults = {"crash:rank=1,op=99", "crash:rank=0,at=5", "delay:rank=2,op=3,by=1"};
  sim::Report report = simulate(
      3, [] { barrier(); }, options);
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_TRUE(
      Contains(report.message, "fault 'crash:rank=1,op=99' never struck: rank 1 entered 1 op"))
      << report.message;
  EXPECT_TRUE(
      Contains(report.message, "fault 'crash:rank=0,at=5' never struck: the run ended at 0 ns"))
      << report.message;
  EXPECT_TRUE(Contains(report.message, "fault 'delay:rank=2,op=3,by=1' never struck"))
      << report.message;
}

}  // namespace
}  // namespace ranks::testing
