// Deadlines under each backend's rules, in the simulator and on the real backend: what a caught
// Timeout leaves of its group, an op late by its deadline, and what a timed-out rank learns of
// where the others are stuck.

#include <algorithm>
#include <chrono>

#include "expected.hpp"

namespace ranks::testing {
namespace {

// What a caught Timeout leaves of its group, the same in the simulator (under the backend's
// rules) as on the real backend: gloo closes the group for every member (the rank that timed out
// gets a Timeout again, its peer a RankFailure); Open MPI cancels a timed-out receive and the
// group goes on. The simulator used to let the group go on under every backend's rules.
class AfterATimeout : public ::testing::TestWithParam<std::string> {};

TEST_P(AfterATimeout, TheGroupIsWhatTheBackendLeavesOfIt) {
  const std::string rules = rules_of(GetParam());  // GetParam(): a rule_cases() case
  auto body = [rules] {
    using namespace std::chrono_literals;
    Group pair = new_group({0, 1});
    pair.set_timeout(300ms);
    if (get_rank() == 0) {
      Tensor nothing = Tensor::zeros({1}, DType::Int32);
      EXPECT_THROW(recv(nothing, 1, pair), Timeout);  // rank 1 never sends
    }
    barrier();  // on the world, which the pair's timeout leaves alone
    Tensor x = Tensor::of<int32_t>({get_rank() + 1});
    std::string outcome;
    try {
      all_reduce(x, ReduceOp::Sum, pair);
      outcome = "ok";
    } catch (const Timeout&) {
      outcome = "timeout";
    } catch (const RankFailure&) {
      outcome = "rank failure";
    }
    if (rules == "gloo") {
      EXPECT_EQ(outcome, get_rank() == 0 ? "timeout" : "rank failure");
    } else {
      EXPECT_EQ(outcome, "ok");
      EXPECT_EQ(x.item<int32_t>(), 3);
    }
  };
  run_rule_case(GetParam(), 2, body);
}

INSTANTIATE_TEST_SUITE_P(Backends, AfterATimeout, ::testing::ValuesIn(rule_cases()),
                         [](const auto& param_info) { return param_info.param; });

// An op whose deadline passes is a Timeout, even when its peer arrives while the rank is still
// telling the others where it is stuck (gloo's watchdog keeps the group open for that window:
// here 3 s, set through RANKS_STUCK_WINDOW_MS, with the peer 1.5 s late), and a Work::wait longer
// than the op's own deadline does not extend it, whichever thread runs the op. Under gloo's rules
// (the simulator's and the real backend's) the group closes: rank 1 may finish its all_reduce
// before that or fail with it, but never hangs.
class LateByTheDeadline : public ::testing::TestWithParam<std::string> {};

TEST_P(LateByTheDeadline, IsATimeoutWhateverTheWaitAsks) {
  const std::string param = GetParam();  // "sim_gloo" or "gloo"
  ASSERT_EQ(setenv("RANKS_STUCK_WINDOW_MS", "3000", 1), 0);
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "all_reduce async, wait(10 s)" : "blocking all_reduce");
    auto body = [async] {
      using namespace std::chrono_literals;
      Group pair = new_group({0, 1});
      pair.set_timeout(300ms);
      Tensor x = Tensor::of<int32_t>({get_rank() + 1});
      if (get_rank() == 1) sleep_for(1500ms);
      std::string outcome = "ok";
      try {
        if (async) {
          Work w = all_reduce_async(x, ReduceOp::Sum, pair);
          w.wait(10s);
        } else {
          all_reduce(x, ReduceOp::Sum, pair);
        }
      } catch (const Timeout&) {
        outcome = "timeout";
      } catch (const RankFailure&) {
        outcome = "rank failure";
      }
      if (get_rank() == 0) {
        EXPECT_EQ(outcome, "timeout");
      }
      barrier();  // the world is untouched
    };
    if (param == "sim_gloo") {
      sim::Options options = default_options();
      options.backend = "gloo";
      run_ranks(2, body, options);
    } else {
      run_on(param, 2, body);
    }
  }
  unsetenv("RANKS_STUCK_WINDOW_MS");
}

std::vector<std::string> gloo_rule_cases() {
  std::vector<std::string> cases = {"sim_gloo"};
  for (const std::string& b : test_backends()) {
    if (b == "gloo") cases.push_back(b);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Backends, LateByTheDeadline, ::testing::ValuesIn(gloo_rule_cases()),
                         [](const auto& param_info) { return param_info.param; });

// Ranks that call one broadcast naming different roots each wait on a root the others do not
// serve. Without RANKS_DEBUG=detail the real gloo backend can only time out; the stuck-peer
// records it exchanges carry each rank's root, so the Timeout says that the ranks disagree rather
// than that one of them never came. (The simulator always raises the Mismatch.)
TEST(GlooStuckPeers, RanksNamingDifferentRootsAreToldSo) {
  const std::vector<std::string> backends = test_backends();
  if (std::find(backends.begin(), backends.end(), "gloo") == backends.end()) {
    GTEST_SKIP() << "no gloo in this build";
  }
  ASSERT_EQ(setenv("RANKS_STUCK_WINDOW_MS", "3000", 1), 0);
  run_on("gloo", 2, [] {
    using namespace std::chrono_literals;
    Group pair = new_group({0, 1});
    pair.set_timeout(300ms);
    Tensor x = Tensor::of<int32_t>({get_rank()});
    try {
      broadcast(x, get_rank(), pair);
      ADD_FAILURE() << "rank " << get_rank() << "'s broadcast completed with the other's root";
    } catch (const Timeout& e) {
      EXPECT_TRUE(Contains(
          e.what(), "rank " + std::to_string(1 - get_rank()) + " timed out in this broadcast too"))
          << e.what();
      EXPECT_TRUE(Contains(e.what(),
                           "but they name different roots (rank 0 gave root 0; rank 1 "
                           "gave root 1): a mismatched broadcast"))
          << e.what();
    }
    barrier();  // the world is untouched
  });
  unsetenv("RANKS_STUCK_WINDOW_MS");
}

}  // namespace
}  // namespace ranks::testing
