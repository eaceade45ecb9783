// RANKS_DEBUG=detail on the real backends: calls that disagree (element count, reduce op, root,
// op, dtype) raise Mismatch on every rank with the field-by-field difference and both call sites,
// before any data moves, and the group stays usable. Real processes (the simulator always makes
// this check: tests/diagnosis_test.cpp), but for object collectives, whose body runs on both.

#include <cstdlib>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

class DebugDetail : public ::testing::TestWithParam<std::string> {
 protected:
  // The processes this test starts inherit the setting.
  void SetUp() override { setenv("RANKS_DEBUG", "detail", 1); }
  void TearDown() override { unsetenv("RANKS_DEBUG"); }
};

// Runs call on this rank and expects a Mismatch whose message contains every part.
template <class F>
void expect_mismatch(F call, const std::vector<std::string>& parts) {
  try {
    call();
    ADD_FAILURE() << "rank " << get_rank() << ": no mismatch";
  } catch (const Mismatch& e) {
    for (const std::string& part : parts) EXPECT_TRUE(Contains(e.what(), part));
  }
}

TEST_P(DebugDetail, DisagreeingCallsAreAMismatchOnEveryRank) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    Tensor t = Tensor::zeros({rank == 1 ? 8 : 4}, DType::Float32);
    expect_mismatch([&] { all_reduce(t); },
                    {"RANKS_DEBUG=detail",
                     "rank 0 called all_reduce(sum, float32 x 4 on cpu) at "
                     "debug_detail_test.cpp:",
                     "rank 1 called all_reduce(sum, float32 x 8 on cpu)", "element count (4 vs 8)",
                     // the simulator's numbering: the check is not an op
                     "on group 'world' at seq 0"});
    Tensor u = Tensor::zeros({2}, DType::Int64);
    expect_mismatch([&] { all_reduce(u, rank == 2 ? ReduceOp::Max : ReduceOp::Sum); },
                    {"rank 2 called all_reduce(max", "reduce op (sum vs max)", "at seq 1"});
    expect_mismatch([&] { broadcast(u, rank == 0 ? 0 : 1); }, {"root (0 vs 1)"});
    expect_mismatch(
        [&] {
          if (rank == 0) {
            barrier();
          } else {
            all_reduce(u);
          }
        },
        {"op (barrier vs all_reduce)"});
    Tensor typed = rank == 2 ? Tensor::zeros({2}, DType::Int32) : Tensor::zeros({2}, DType::Int64);
    expect_mismatch([&] { all_reduce(typed); }, {"dtype (int64 vs int32)"});
    // Nothing moved and nobody is left behind: the group still works.
    Tensor ok = Tensor::of<int64_t>({rank, 1});
    all_reduce(ok);
    EXPECT_EQ(ok.to_vector<int64_t>(), (std::vector<int64_t>{0 + 1 + 2, 3}));
  });
}

TEST_P(DebugDetail, SubGroupsAndObjectCollectives) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    Group g = new_group({1, 2});
    if (g.is_member()) {
      Tensor t = Tensor::zeros({rank}, DType::Float32);
      expect_mismatch([&] { all_reduce(t, ReduceOp::Sum, g); },
                      {"group 'world/1,2'", "element count (1 vs 2)"});
      EXPECT_EQ(all_gather_object(std::string(static_cast<size_t>(rank), 'x'), g),
                (std::vector<std::string>{"x", "xx"}));
    }
  });
}

// Rank 0 broadcasts a list while the others all-gather objects: the message names the object
// collectives the program called along with the ops in them that disagree.
void disagreeing_object_collectives() {
  const int rank = get_rank();
  std::vector<int> list{rank};
  expect_mismatch(
      [&] {
        if (rank == 0) {
          broadcast_object_list(list, 0);
        } else {
          (void)all_gather_object(rank);
        }
      },
      {"rank 0 called broadcast_object_list's broadcast(src 0, uint8 x ",
       "rank 1 called all_gather_object's all_gather(uint8 x ", "op (broadcast vs all_gather)"});
}

TEST_P(DebugDetail, ObjectCollectivesAreNamedAsTheProgramCalledThem) {
  run_on(GetParam(), 3, disagreeing_object_collectives);
}

TEST(DebugDetailInTheSimulator, ObjectCollectivesAreNamedAsTheProgramCalledThem) {
  // The simulator makes the check on every run; a caught Mismatch still fails the run.
  sim::Report report = simulate(3, disagreeing_object_collectives);
  EXPECT_EQ(report.outcome, sim::Outcome::Mismatch) << report.to_text();
  EXPECT_TRUE(Contains(report.message, "rank 0 called broadcast_object_list's broadcast("))
      << report.message;
}

std::vector<std::string> real_backends() {
  std::vector<std::string> names;
  for (const std::string& b : test_backends()) {
    if (!is_simulated(b)) names.push_back(b);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Backends, DebugDetail, ::testing::ValuesIn(real_backends()),
                         [](const auto& param_info) { return param_info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DebugDetail);

}  // namespace
}  // namespace ranks::testing
