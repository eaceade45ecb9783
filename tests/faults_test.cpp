// Fault injection (`ranks sim --fault`, Options::faults): crashes at an op and at a virtual time,
// stragglers, what survivors see under each backend (nccl: its watchdog's timeout; gloo and mpi: a
// dead peer at once), op counting, crashes a body cannot catch, several faults at once and
// determinism. The spec grammar: fault_specs_test.cpp.

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;

std::string site(int line) { return fmt::format("faults_test.cpp:{}", line); }

sim::Options with_faults(std::string backend, std::vector<std::string> faults,
                         std::chrono::milliseconds timeout = 30min) {
  sim::Options options = default_options();
  options.backend = std::move(backend);
  options.faults = std::move(faults);
  options.timeout = timeout;
  return options;
}

// --- crash at the K-th op ---------------------------------------------------------------------

TEST(CrashAtOp, NcclSurvivorsTimeOutExactlyTheirTimeoutAfterTheyStartedWaiting) {
  std::vector<nanoseconds> timed_out_at(4, -1ns);
  int line = 0;
  sim::Report report = simulate(
      4,
      [&] {
        const int rank = get_rank();
        Tensor t = Tensor::of<float>({1.0f}, comm_device());
        barrier();                     // op 1, for everyone at 0 s
        if (rank == 0) sleep_for(2s);  // rank 0 dies entering op 2 at 2 s
        if (rank == 3) sleep_for(5s);  // rank 3 starts waiting after the crash
        try {
          line = __LINE__ + 1;
          all_reduce(t);
        } catch (const Timeout&) {
          timed_out_at[static_cast<size_t>(rank)] = now();
          throw;
        }
        ADD_FAILURE() << "all_reduce returned on rank " << rank;
      },
      with_faults("nccl", {"crash:rank=0,op=2"}, 10s));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 2s) << "a crashed run ends when the rank dies";
  EXPECT_TRUE(Contains(report.message, "rank 0 crashed"));
  EXPECT_TRUE(Contains(report.message, "crash:rank=0,op=2"));
  // Ranks 1 and 2 waited from 0 s, rank 3 from 5 s; each waits its full 10 s.
  EXPECT_EQ(timed_out_at, (std::vector<nanoseconds>{-1ns, 10s, 10s, 15s}));

  ASSERT_EQ(report.ranks.size(), 4u);
  const auto& dead = row(report, 0);
  EXPECT_EQ(dead.state, "crashed");
  EXPECT_EQ(dead.op, "all_reduce");
  EXPECT_EQ(dead.group, "world");
  EXPECT_EQ(dead.seq, 1);
  EXPECT_EQ(dead.where, site(line));
  EXPECT_TRUE(Contains(dead.error, "crash:rank=0,op=2"));
  EXPECT_TRUE(Contains(dead.error, "at virtual time 2 s"));
  for (int r : {1, 2, 3}) {
    const auto& survivor = row(report, r);
    EXPECT_EQ(survivor.state, "failed") << "rank " << r;
    EXPECT_EQ(survivor.op, "all_reduce") << "rank " << r;
    EXPECT_EQ(survivor.seq, 1) << "rank " << r;
    EXPECT_EQ(survivor.where, site(line)) << "rank " << r;
    EXPECT_TRUE(Contains(survivor.error, "timed out after 10 s in all_reduce")) << "rank " << r;
  }
  // At 10 s rank 3 was waiting too; at 15 s ranks 1 and 2 had given up.
  EXPECT_TRUE(Contains(row(report, 1).error, "3 of 4 ranks arrived; not arrived: rank 0"));
  EXPECT_TRUE(Contains(row(report, 3).error, "1 of 4 ranks arrived; not arrived: ranks 0, 1, 2"));
}

TEST(CrashAtOp, NcclCrashAtTheFirstOpIsReportedAtItsTime) {
  // The crash happens at 0 s; the survivors' timeouts (30 min default) do not move the time.
  sim::Report report = simulate(
      3, [] { barrier(); }, with_faults("nccl", {"crash:rank=1,op=1"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 0ns);
  EXPECT_EQ(row(report, 1).state, "crashed");
  EXPECT_EQ(row(report, 1).op, "barrier");
  EXPECT_EQ(row(report, 1).seq, 0);
  for (int r : {0, 2}) {
    EXPECT_EQ(row(report, r).state, "failed") << "rank " << r;
    EXPECT_TRUE(Contains(row(report, r).error, "timed out after 30 min")) << "rank " << r;
  }
}

class CrashAtOpFailFast : public ::testing::TestWithParam<std::string> {};

TEST_P(CrashAtOpFailFast, SurvivorsFailAtOnceNamingTheDeadRank) {
  const std::string backend = GetParam();
  std::vector<nanoseconds> failed_at(4, -1ns);
  std::vector<std::string> errors(4);
  int line = 0;
  sim::Report report = simulate(
      4,
      [&] {
        const int rank = get_rank();
        if (rank == 3) sleep_for(1s);  // starts waiting after the crash, and fails then
        try {
          line = __LINE__ + 1;
          barrier();
        } catch (const RankFailure& e) {
          failed_at[static_cast<size_t>(rank)] = now();
          errors[static_cast<size_t>(rank)] = e.what();
          throw;
        }
        ADD_FAILURE() << "barrier returned on rank " << rank;
      },
      with_faults(backend, {"crash:rank=2,op=1"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 0ns);
  EXPECT_TRUE(Contains(report.message, "rank 2 crashed"));
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{0s, 0s, -1ns, 1s}));
  for (int r : {0, 1, 3}) {
    SCOPED_TRACE(fmt::format("rank {}", r));
    EXPECT_TRUE(Contains(errors[static_cast<size_t>(r)], fmt::format("rank {} lost rank 2", r)));
    EXPECT_TRUE(Contains(errors[static_cast<size_t>(r)], "the " + backend + " backend"));
    EXPECT_EQ(row(report, r).state, "failed");
    EXPECT_EQ(row(report, r).op, "barrier");
    EXPECT_EQ(row(report, r).where, site(line));
    EXPECT_TRUE(Contains(row(report, r).error, "lost rank 2"));
  }
  EXPECT_EQ(row(report, 2).state, "crashed");
  EXPECT_EQ(row(report, 2).op, "barrier");
  EXPECT_EQ(row(report, 2).seq, 0);
  EXPECT_EQ(row(report, 2).where, site(line));
}

INSTANTIATE_TEST_SUITE_P(Sim, CrashAtOpFailFast, ::testing::Values("gloo", "mpi"),
                         [](const auto& param) { return param.param; });

TEST(CrashAtOp, CountsEveryOpTheRankEnters) {
  // Rank 0's ops, in order; each op=K crash must stop it in the K-th.
  struct Expected {
    std::string op, group;
    int64_t seq;
  };
  const std::vector<Expected> want = {
      {"barrier", "world", 0},         // 1: collective seq 0
      {"send", "world", 0},            // 2: point-to-point seq 0
      {"new_group", "world", 1},       // 3: new_group is a world collective
      {"all_reduce", "world/0,1", 0},  // 4: the new group's first collective
      {"send", "world", 1},            // 5: isend
      {"recv", "world", 2},            // 6
      {"broadcast", "world", 2},       // 7
  };
  for (int k = 1; k <= 8; ++k) {
    SCOPED_TRACE(fmt::format("crash at op {}", k));
    std::vector<int> lines(8, 0);
    int finished_ops = 0;
    sim::Report report = simulate(
        2,
        [&] {
          const int rank = get_rank();
          const int other = 1 - rank;
          Tensor t = Tensor::of<int32_t>({rank});
          lines[1] = __LINE__ + 1;
          barrier();
          lines[2] = __LINE__ + 1;
          rank == 0 ? send(t, other) : (void)recv(t, other);
          lines[3] = __LINE__ + 1;
          Group pair = new_group({0, 1});
          lines[4] = __LINE__ + 1;
          all_reduce(t, ReduceOp::Sum, pair);
          lines[5] = __LINE__ + 1;
          rank == 0 ? isend(t, other).wait() : (void)recv(t, other);
          lines[6] = __LINE__ + 1;
          rank == 0 ? (void)recv(t, other) : send(t, other);
          lines[7] = __LINE__ + 1;
          broadcast(t, 0);
          if (rank == 0) finished_ops = 7;
        },
        with_faults("mpi", {fmt::format("crash:rank=0,op={}", k)}));
    if (k == 8) {
      EXPECT_EQ(report.outcome, sim::Outcome::Ok) << "rank 0 does only 7 ops\n" << report.to_text();
      EXPECT_EQ(finished_ops, 7);
      continue;
    }
    EXPECT_EQ(finished_ops, 0);
    EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
    const auto& dead = row(report, 0);
    const Expected& w = want[static_cast<size_t>(k - 1)];
    EXPECT_EQ(dead.state, "crashed");
    EXPECT_EQ(dead.op, w.op);
    EXPECT_EQ(dead.group, w.group);
    EXPECT_EQ(dead.seq, w.seq);
    EXPECT_EQ(dead.where, site(lines[static_cast<size_t>(k)]));
    EXPECT_TRUE(Contains(report.message, fmt::format("entering its op {}, {}", k, w.op)));
    EXPECT_EQ(row(report, 1).state, "failed");
    EXPECT_TRUE(Contains(row(report, 1).error, "lost rank 0"));
  }
}

TEST(CrashAtOp, OpsThatDoNotReachABackendAreNotCounted) {
  // A collective on a one-rank group returns at once without reaching the backend, so it is not
  // an op a fault counts: op 3 is the barrier.
  int line = 0;
  sim::Report report = simulate(
      2,
      [&] {
        Group zero = new_group({0});  // op 1
        Group one = new_group({1});   // op 2
        Tensor t = Tensor::of<int32_t>({1});
        Group& mine = get_rank() == 0 ? zero : one;
        all_reduce(t, ReduceOp::Sum, mine);  // a one-rank group: no op
        line = __LINE__ + 1;
        barrier();  // op 3
      },
      with_faults("mpi", {"crash:rank=1,op=3"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(row(report, 1).state, "crashed");
  EXPECT_EQ(row(report, 1).op, "barrier");
  EXPECT_EQ(row(report, 1).where, site(line));
}

TEST(CrashAtOp, ABodyThatCatchesStdExceptionCannotSwallowACrash) {
  std::vector<int> caught(3, 0), went_on(3, 0);
  sim::Report report = simulate(
      3,
      [&] {
        const size_t rank = static_cast<size_t>(get_rank());
        try {
          barrier();
        } catch (const std::exception&) {
          ++caught[rank];
        }
        ++went_on[rank];
      },
      with_faults("gloo", {"crash:rank=1,op=1"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  // The survivors caught their RankFailure and finished; the dead rank did neither.
  EXPECT_EQ(caught, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(went_on, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(row(report, 0).state, "finished");
  EXPECT_EQ(row(report, 1).state, "crashed");
  EXPECT_EQ(row(report, 2).state, "finished");
}

TEST(CrashAtTime, ABodyThatCatchesStdExceptionCannotSwallowIt) {
  int went_on = 0;
  sim::Report report = simulate(
      2,
      [&] {
        if (get_rank() != 1) return;
        try {
          sleep_for(10s);
        } catch (const std::exception&) {
        }
        ++went_on;
      },
      with_faults("mpi", {"crash:rank=1,at=3"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 3s);
  EXPECT_EQ(went_on, 0);
  EXPECT_EQ(row(report, 1).state, "crashed");
}

// --- crash at a virtual time --------------------------------------------------------------------

// A timed crash strikes a rank wherever it waits; its half of the op is withdrawn first, so
// peers in the same collective see the dead rank (gloo, mpi) or time out (nccl).

TEST(CrashAtTime, WhileSleepingUnderMpiTheWaitersFailThen) {
  std::vector<nanoseconds> failed_at(3, -1ns);
  bool woke = false;
  sim::Report report = simulate(
      3,
      [&] {
        const int rank = get_rank();
        if (rank == 1) {
          sleep_for(10s);
          woke = true;
        }
        try {
          barrier();
        } catch (const RankFailure& e) {
          EXPECT_TRUE(Contains(e.what(), "lost rank 1"));
          failed_at[static_cast<size_t>(rank)] = now();
          throw;
        }
      },
      with_faults("mpi", {"crash:rank=1,at=4"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 4s);
  EXPECT_FALSE(woke);
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{4s, -1ns, 4s}));
  EXPECT_TRUE(Contains(report.message, "rank 1 crashed"));
  EXPECT_TRUE(Contains(report.message, "crash:rank=1,at=4"));
  EXPECT_TRUE(Contains(report.message, "at virtual time 4 s"));
  EXPECT_EQ(row(report, 1).state, "crashed");
  EXPECT_EQ(row(report, 1).op, "sleep_for");
}

TEST(CrashAtTime, WhileSleepingUnderNcclTheWaitersTimeOut) {
  std::vector<nanoseconds> failed_at(3, -1ns);
  sim::Report report = simulate(
      3,
      [&] {
        const int rank = get_rank();
        if (rank == 1) sleep_for(10s);
        try {
          barrier();
        } catch (const Timeout&) {
          failed_at[static_cast<size_t>(rank)] = now();
          throw;
        }
      },
      with_faults("nccl", {"crash:rank=1,at=4"}, 20s));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 4s);
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{20s, -1ns, 20s}));
  EXPECT_EQ(row(report, 1).state, "crashed");
}

TEST(CrashAtTime, WhileWaitingInACollectiveUnderNccl) {
  std::vector<nanoseconds> failed_at(3, -1ns);
  int line = 0;
  sim::Report report = simulate(
      3,
      [&] {
        const int rank = get_rank();
        if (rank == 0) sleep_for(10s);  // ranks 1 and 2 wait in the barrier from 0 s
        try {
          line = __LINE__ + 1;
          barrier();
        } catch (const Timeout&) {
          failed_at[static_cast<size_t>(rank)] = now();
          throw;
        }
      },
      with_faults("nccl", {"crash:rank=2,at=4"}, 20s));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 4s);
  // Rank 1 waited from 0 s, rank 0 from 10 s.
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{30s, 20s, -1ns}));
  EXPECT_EQ(row(report, 2).state, "crashed");
  EXPECT_EQ(row(report, 2).op, "barrier");
  EXPECT_EQ(row(report, 2).seq, 0);
  EXPECT_EQ(row(report, 2).where, site(line));
  EXPECT_TRUE(Contains(row(report, 2).error, fmt::format("while in barrier at {}", site(line))));
}

TEST(CrashAtTime, WhileWaitingInACollectiveUnderGlooTheOthersFailAtOnce) {
  // Rank 2 dies at 4 s inside the barrier it had joined: rank 1, waiting there too, loses its
  // connection to it then; rank 0 finds it dead as it arrives at 10 s.
  std::vector<nanoseconds> failed_at(3, -1ns);
  sim::Report report = simulate(
      3,
      [&] {
        const int rank = get_rank();
        if (rank == 0) sleep_for(10s);
        try {
          barrier();
        } catch (const RankFailure& e) {
          EXPECT_TRUE(Contains(e.what(), "lost rank 2")) << "rank " << rank;
          failed_at[static_cast<size_t>(rank)] = now();
          throw;
        }
      },
      with_faults("gloo", {"crash:rank=2,at=4"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 4s);
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{10s, 4s, -1ns}));
  EXPECT_EQ(row(report, 0).state, "failed");
  EXPECT_EQ(row(report, 1).state, "failed");
  EXPECT_EQ(row(report, 2).state, "crashed");
}

TEST(CrashAtTime, WhileWaitingInARecvUnderGlooItsPeerFailsAtOnce) {
  std::vector<nanoseconds> failed_at(2, -1ns);
  sim::Report report = simulate(
      2,
      [&] {
        Tensor t = Tensor::of<int32_t>({0});
        try {
          // Each waits for the other: rank 1 dies at 4 s and rank 0 learns of it then.
          recv(t, 1 - get_rank());
        } catch (const RankFailure&) {
          failed_at[static_cast<size_t>(get_rank())] = now();
          throw;
        }
      },
      with_faults("gloo", {"crash:rank=1,at=4"}));
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 4s);
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{4s, -1ns}));
  EXPECT_EQ(row(report, 0).state, "failed");
  EXPECT_TRUE(Contains(row(report, 0).error, "lost rank 1"));
  EXPECT_EQ(row(report, 1).state, "crashed");
  EXPECT_EQ(row(report, 1).op, "recv");
}

TEST(CrashAtTime, ARankThatFinishedFirstIsUnaffected) {
  for (const char* backend : {"nccl", "gloo", "mpi"}) {
    SCOPED_TRACE(backend);
    sim::Report report = simulate(
        3,
        [] {
          barrier();
          if (get_rank() == 0) sleep_for(1s);
        },
        with_faults(backend, {"crash:rank=1,at=5"}));
    EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
    EXPECT_EQ(report.virtual_time, 1s);
    EXPECT_EQ(row(report, 1).state, "finished");
  }
}

// --- stragglers ----------------------------------------------------------------------------------

// Rank r sleeps r seconds, then a barrier (ends at 2 s) and an all_reduce; returns the report and
// what every rank saw.
struct StragglerRun {
  sim::Report report;
  std::vector<nanoseconds> after;  // now() after the all_reduce, per rank
  std::vector<int32_t> sums;
};

StragglerRun straggler_run(std::vector<std::string> faults,
                           std::chrono::milliseconds timeout = 30min) {
  StragglerRun run;
  run.after.assign(3, -1ns);
  run.sums.assign(3, -1);
  run.report = simulate(
      3,
      [&] {
        const int rank = get_rank();
        sleep_for(std::chrono::seconds(rank));
        barrier();  // op 1
        Tensor t = Tensor::of<int32_t>({rank + 1});
        all_reduce(t);  // op 2
        run.after[static_cast<size_t>(rank)] = now();
        run.sums[static_cast<size_t>(rank)] = t.item<int32_t>();
      },
      with_faults("mpi", std::move(faults), timeout));
  return run;
}

TEST(Delay, WithinTheTimeoutTheRunIsOkAndLongerByExactlyTheDelay) {
  StragglerRun base = straggler_run({});
  EXPECT_EQ(base.report.outcome, sim::Outcome::Ok) << base.report.to_text();
  EXPECT_EQ(base.report.virtual_time, 2s);

  StragglerRun late = straggler_run({"delay:rank=1,op=2,by=7"});
  EXPECT_EQ(late.report.outcome, sim::Outcome::Ok) << late.report.to_text();
  EXPECT_EQ(late.report.virtual_time, 9s);
  EXPECT_EQ(late.after, (std::vector<nanoseconds>{9s, 9s, 9s}));
  EXPECT_EQ(late.sums, (std::vector<int32_t>{6, 6, 6}));

  StragglerRun fraction = straggler_run({"delay:rank=0,op=2,by=0.25"});
  EXPECT_EQ(fraction.report.outcome, sim::Outcome::Ok) << fraction.report.to_text();
  EXPECT_EQ(fraction.report.virtual_time, 2250ms);

  // Delaying op 1 of the rank that arrives last pushes the barrier out by the delay too.
  StragglerRun first_op = straggler_run({"delay:rank=2,op=1,by=3"});
  EXPECT_EQ(first_op.report.outcome, sim::Outcome::Ok) << first_op.report.to_text();
  EXPECT_EQ(first_op.report.virtual_time, 5s);
  // Delaying the first-arriving rank's op 1 by less than the others' lead costs nothing.
  StragglerRun hidden = straggler_run({"delay:rank=0,op=1,by=1.5"});
  EXPECT_EQ(hidden.report.virtual_time, 2s);
}

TEST(Delay, PastTheTimeoutTheOthersTimeOutAtExactlyTheTimeout) {
  std::vector<nanoseconds> failed_at(3, -1ns);
  int line = 0;
  sim::Report report = simulate(
      3,
      [&] {
        try {
          line = __LINE__ + 1;
          barrier();
        } catch (const Timeout&) {
          failed_at[static_cast<size_t>(get_rank())] = now();
          throw;
        }
      },
      with_faults("mpi", {"delay:rank=0,op=1,by=11"}, 10s));
  EXPECT_EQ(report.outcome, sim::Outcome::Timeout) << report.to_text();
  EXPECT_EQ(report.virtual_time, 10s);
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{-1ns, 10s, 10s}));
  EXPECT_TRUE(Contains(report.message, "timed out after 10 s in barrier"));
  EXPECT_TRUE(Contains(report.message, "not arrived: rank 0"));
  EXPECT_TRUE(Contains(report.message, site(line)));
  for (int r : {1, 2}) EXPECT_EQ(row(report, r).state, "failed") << "rank " << r;
  // The straggler arrived at 11 s to an empty barrier: it can never finish.
  EXPECT_EQ(row(report, 0).state, "blocked");
  EXPECT_EQ(row(report, 0).op, "barrier");
}

// --- several faults, determinism --------------------------------------------------------------

// Rank 2 dies entering the barrier at 0 s; rank 1 is delayed to 0.5 s; rank 3 sleeps 5 s and dies
// then, entering the barrier (or, timed, asleep at 1 s).
std::vector<std::string> several_faults(bool timed) {
  return {"delay:rank=1,op=1,by=0.5", "crash:rank=2,op=1",
          timed ? "crash:rank=3,at=1" : "crash:rank=3,op=1"};
}

void several_faults_body(std::vector<nanoseconds>* failed_at) {
  const int rank = get_rank();
  if (rank == 3) sleep_for(5s);
  try {
    barrier();
  } catch (const RankFailure& e) {
    EXPECT_TRUE(Contains(e.what(), "lost rank 2")) << "rank " << rank;
    if (failed_at) (*failed_at)[static_cast<size_t>(rank)] = now();
    throw;
  }
}

// Rank 0 waits in the barrier and fails at once; rank 1 fails as it starts waiting at 0.5 s.
void expect_several_faults(const sim::Report& report, const std::vector<nanoseconds>& failed_at) {
  EXPECT_EQ(report.outcome, sim::Outcome::Crash) << report.to_text();
  EXPECT_EQ(report.virtual_time, 0ns);
  EXPECT_TRUE(Contains(report.message, "rank 2 crashed")) << "the first failure is rank 2's";
  EXPECT_EQ(failed_at, (std::vector<nanoseconds>{0s, 500ms, -1ns, -1ns}));
  EXPECT_EQ(row(report, 0).state, "failed");
  EXPECT_EQ(row(report, 1).state, "failed");
  EXPECT_EQ(row(report, 1).op, "barrier");
  EXPECT_EQ(row(report, 2).state, "crashed");
  EXPECT_EQ(row(report, 2).op, "barrier");
  EXPECT_EQ(row(report, 3).state, "crashed");
}

TEST(Faults, SeveralAtOnce) {
  std::vector<nanoseconds> failed_at(4, -1ns);
  sim::Report report = simulate(
      4, [&] { several_faults_body(&failed_at); }, with_faults("mpi", several_faults(false)));
  expect_several_faults(report, failed_at);
  EXPECT_EQ(row(report, 3).op, "barrier");
  EXPECT_TRUE(Contains(row(report, 3).error, "crash:rank=3,op=1"));
  EXPECT_TRUE(Contains(row(report, 3).error, "at virtual time 5 s"));
}

TEST(Faults, SeveralAtOnceWithATimedCrash) {
  std::vector<nanoseconds> failed_at(4, -1ns);
  sim::Report report = simulate(
      4, [&] { several_faults_body(&failed_at); }, with_faults("mpi", several_faults(true)));
  expect_several_faults(report, failed_at);
  EXPECT_EQ(row(report, 3).op, "sleep_for");
  EXPECT_TRUE(Contains(row(report, 3).error, "crash:rank=3,at=1"));
  EXPECT_TRUE(Contains(row(report, 3).error, "at virtual time 1 s"));
}

void expect_deterministic(bool timed) {
  for (const char* backend : {"nccl", "gloo", "mpi"}) {
    for (uint64_t seed : {0, 3}) {
      SCOPED_TRACE(fmt::format("{} seed {}", backend, seed));
      sim::Options options = with_faults(backend, several_faults(timed), 10s);
      options.seed = seed;
      sim::Report a = simulate(
          4, [] { several_faults_body(nullptr); }, options);
      sim::Report b = simulate(
          4, [] { several_faults_body(nullptr); }, options);
      EXPECT_EQ(a.outcome, sim::Outcome::Crash) << a.to_text();
      EXPECT_EQ(a.to_json(), b.to_json());
      EXPECT_EQ(a.to_text(), b.to_text());
    }
  }
}

TEST(Faults, SameFaultsGiveIdenticalReports) { expect_deterministic(false); }

TEST(Faults, SameTimedFaultsGiveIdenticalReports) { expect_deterministic(true); }

}  // namespace
}  // namespace ranks::testing
