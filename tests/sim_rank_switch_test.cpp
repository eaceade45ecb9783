// The simulator's rank-switch hook (sim::Options::on_rank_switch): every time a rank's code runs,
// the hook has last named that rank, whatever switched to it (an op completing, a virtual sleep,
// a seeded interleaving), and once the run is over it has named no rank (-1). A language binding
// swaps a rank's interpreter state in there, so a rank must never run under another's.

#include <chrono>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

class RankSwitch : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RankSwitch, TheHookNamesTheRankThatRunsNext) {
  int last = -2;
  int64_t calls = 0;
  std::vector<int> wrong;  // ranks that ran while the hook named another
  sim::Options options = default_options();
  options.seed = GetParam();
  options.on_rank_switch = [&](int rank) {
    last = rank;
    ++calls;
  };
  auto check = [&] {
    if (last != get_rank()) wrong.push_back(get_rank());
  };
  sim::Report report = simulate(
      4,
      [&] {
        check();
        Tensor t = Tensor::of<int32_t>({get_rank()});
        for (int round = 0; round < 3; ++round) {
          all_reduce(t);
          check();
          if (get_rank() == 0) sleep_for(1ms);  // a virtual sleep: the others run meanwhile
          check();
          if (get_rank() % 2 == 0) {
            send(t, get_rank() + 1);
          } else {
            recv(t, get_rank() - 1);
          }
          check();
          barrier();
          check();
        }
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " times a rank ran under another's name";
  EXPECT_EQ(last, -1) << "after the run the hook names no rank";
  // Each rank's fiber starts through a switch; the other switches depend on the interleaving.
  EXPECT_GE(calls, 4);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RankSwitch, ::testing::Values(0, 1, 7));

}  // namespace
}  // namespace ranks::testing
