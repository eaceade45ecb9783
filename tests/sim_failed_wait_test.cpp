// A wait that fails or times out in the simulator: the work it leaves behind, the deadlines that
// fire when nothing else can happen (a Work::wait(timeout), a group's own shorter timeout), and
// what a timeout leaves of its group under each backend's rules.

#include <chrono>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

// Options under backend's rules with these faults.
sim::Options options_with_faults(const std::string& backend, std::vector<std::string> faults) {
  sim::Options options = options_for(backend);
  options.faults = std::move(faults);
  return options;
}

// A wait that fails ends the op for that rank, as on the real backends: its Work is completed
// and holds the error it threw (gloo and mpi behave so; their tests check the same).
TEST(FailedWait, LeavesItsWorkCompletedWithTheError) {
  std::vector<int> checked(3, 0);
  auto expect_failed_work = [&](Work& w, auto error_type) {
    using E = decltype(error_type);
    EXPECT_THROW(w.wait(), E);
    EXPECT_TRUE(w.is_completed());
    ASSERT_NE(w.exception(), nullptr);
    EXPECT_THROW(std::rethrow_exception(w.exception()), E);
    ++checked[static_cast<size_t>(get_rank())];
  };
  // A peer that dies: the survivors' barrier fails at once.
  simulate(
      3,
      [&] {
        Work w = barrier_async();
        if (get_rank() != 2) expect_failed_work(w, RankFailure(""));
      },
      options_with_faults("gloo", {"crash:rank=2,op=1"}));
  // A deadline that passes: Work::wait(timeout) on a message nobody sends.
  simulate(
      2,
      [&] {
        if (get_rank() != 0) {
          sleep_for(1s);  // alive but silent past the deadline: not a deadlock
          return;
        }
        Tensor t = Tensor::zeros({1}, DType::Int32);
        Work w = irecv(t, 1, {}, 5);
        try {
          w.wait(200ms);
          ADD_FAILURE() << "the wait returned";
        } catch (const Timeout&) {
        }
        EXPECT_TRUE(w.is_completed());
        EXPECT_NE(w.exception(), nullptr);
        ++checked[0];
      },
      options_for("mpi"));
  EXPECT_EQ(checked, (std::vector<int>{2, 1, 0}));
}

// A wait with a deadline of its own is the program's way to go on without the message: even
// when no other event could ever happen (the peer waits for this rank), the deadline fires, as
// it would for real, instead of the run ending as a deadlock.
TEST(FailedWait, AWaitsOwnDeadlineFiresWhenNothingElseCan) {
  bool timed_out = false;
  sim::Report report = simulate(2, [&] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 1) {
      recv(t, 0);  // waits for rank 0's send, which comes after rank 0's timeout
      EXPECT_EQ(t.item<int32_t>(), 7);
      return;
    }
    Work w = irecv(t, 1, {}, 5);  // nobody sends this
    try {
      w.wait(200ms);
      ADD_FAILURE() << "the wait returned";
    } catch (const Timeout&) {
      timed_out = true;
    }
    Tensor seven = Tensor::of<int32_t>({7});
    send(seven, 1);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(report.virtual_time, std::chrono::nanoseconds(200ms));
}

// A group whose timeout the program set shorter than the run's (Group::set_timeout) times out as
// it would in a real run, and the program recovers; it used to end the run as a deadlock.
TEST(FailedWait, AGroupsOwnShorterTimeoutFiresWhenNothingElseCan) {
  bool timed_out = false;
  sim::Report report = simulate(2, [&] {
    Group pair = new_group({0, 1});
    pair.set_timeout(400ms);
    if (get_rank() == 0) {
      Tensor t = Tensor::zeros({1}, DType::Int32);
      try {
        recv(t, 1, pair);  // rank 1 never sends
        ADD_FAILURE() << "the recv returned";
      } catch (const Timeout&) {
        timed_out = true;
      }
    }
    barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(report.virtual_time, std::chrono::nanoseconds(400ms));
}

// Under gloo's rules a timeout closes the group: a peer's op pending on it fails at that moment
// with a RankFailure naming the rank and op that timed out, as its connection would drop.
TEST(FailedWait, UnderGlooATimeoutFailsThePeersPendingOpAtOnce) {
  sim::Options options = default_options();
  options.backend = "gloo";
  std::string peer_error;
  std::chrono::nanoseconds peer_failed_at{};
  sim::Report report = simulate(
      2,
      [&] {
        Group pair = new_group({0, 1});
        // Rank 1's handle keeps a longer deadline: a wait cannot extend its op's own.
        pair.set_timeout(get_rank() == 0 ? 300ms : 10s);
        Tensor t = Tensor::zeros({1}, DType::Int32);
        if (get_rank() == 0) {
          EXPECT_THROW(recv(t, 1, pair), Timeout);
          return;
        }
        Work w = irecv(t, 0, pair, /*tag=*/5);
        try {
          w.wait(10s);
        } catch (const RankFailure& e) {
          peer_error = e.what();
          peer_failed_at = now();
        }
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_EQ(peer_failed_at, std::chrono::nanoseconds(300ms));
  EXPECT_NE(peer_error.find("rank 1 lost rank 0 (rank 0's recv timed out at "
                            "sim_failed_wait_test.cpp:"),
            std::string::npos)
      << peer_error;
}

// Under Open MPI's rules a timed-out collective cannot be cancelled: the rank's later collectives
// on the group are refused (its point-to-point ops still work).
TEST(FailedWait, UnderMpiATimedOutCollectiveRefusesTheRanksNextOnes) {
  sim::Options options = default_options();
  options.backend = "mpi";
  sim::Report report = simulate(
      2,
      [&] {
        Group pair = new_group({0, 1});
        // Rank 1's handle keeps a longer deadline: a wait cannot extend its op's own.
        pair.set_timeout(get_rank() == 0 ? 300ms : 10s);
        Tensor t = Tensor::of<int32_t>({1});
        if (get_rank() == 0) {
          EXPECT_THROW(all_reduce(t, ReduceOp::Sum, pair), Timeout);  // rank 1 is not there
          try {
            barrier(pair);
            ADD_FAILURE() << "the barrier ran";
          } catch (const BackendError& e) {
            EXPECT_NE(std::string(e.what()).find("failed earlier and can no longer be used: rank "
                                                 "0's all_reduce timed out"),
                      std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find("runs no more collectives"), std::string::npos)
                << e.what();
          }
          send(t, 1, pair);
        } else {
          irecv(t, 0, pair).wait(10s);  // past rank 0's timeout
          EXPECT_EQ(t.item<int32_t>(), 1);
        }
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
}

// The run's own timeout is not such a deadline: ranks that can never go on are a deadlock.
TEST(FailedWait, TheRunsDefaultTimeoutStaysADeadlock) {
  sim::Report report = simulate(2, [&] {
    if (get_rank() == 0) {
      Tensor t = Tensor::zeros({1}, DType::Int32);
      recv(t, 1);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
}

}  // namespace
}  // namespace ranks::testing
