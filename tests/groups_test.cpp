// Sub-groups made by new_group(): membership and group ranks (sorted global ranks, as in torch),
// names, collectives inside groups with group-rank roots, overlapping groups, repeated member
// lists, non-members, and a rank that disagrees about the member list.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The position of global rank r among the sorted members, or -1.
int position(const std::vector<int>& members, int r) {
  std::vector<int> s = sorted(members);
  auto it = std::find(s.begin(), s.end(), r);
  return it == s.end() ? -1 : static_cast<int>(it - s.begin());
}

std::string expected_name(const std::vector<int>& members) {
  return fmt::format("world/{}", fmt::join(sorted(members), ","));
}

// Checks every query on g as global rank `rank` sees it.
void check_group(const Group& g, const std::vector<int>& members, int rank) {
  const int pos = position(members, rank);
  EXPECT_EQ(g.is_member(), pos >= 0) << "rank " << rank;
  EXPECT_EQ(g.rank(), pos) << "rank " << rank;
  EXPECT_EQ(g.size(), static_cast<int>(members.size()));
  EXPECT_EQ(g.global_ranks(), sorted(members));
  EXPECT_EQ(g.name(), expected_name(members));
  EXPECT_EQ(g.backend(), default_options().backend);
  EXPECT_FALSE(g.is_default());
  if (pos >= 0) {
    EXPECT_EQ(get_rank(g), pos);
    EXPECT_EQ(get_world_size(g), static_cast<int>(members.size()));
    EXPECT_EQ(get_dist_info(g), std::make_pair(pos, static_cast<int>(members.size())));
    EXPECT_EQ(is_main_process(g), pos == 0);
  } else {
    // torch.distributed's answers outside the group.
    EXPECT_EQ(get_rank(g), -1);
    EXPECT_EQ(get_world_size(g), -1);
    EXPECT_EQ(get_dist_info(g), std::make_pair(-1, -1));
  }
}

class Groups : public ::testing::TestWithParam<int> {};

std::vector<int> evens(int n) {
  std::vector<int> v;
  for (int r = 0; r < n; r += 2) v.push_back(r);
  return v;
}

TEST_P(Groups, EvenRanks) {
  const int n = GetParam();
  run_ranks(n, [n] {
    const int rank = get_rank();
    const std::vector<int> members = evens(n);
    Group g = new_group(members);
    check_group(g, members, rank);
    if (!g.is_member()) return;
    // Sum of the members' global ranks: 0 + 2 + ... + (n - 2).
    Tensor t = Tensor::of<int64_t>({rank, 1});
    all_reduce(t, ReduceOp::Sum, g);
    const int64_t half = n / 2;
    EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{half * (half - 1), half}));
  });
}

TEST_P(Groups, UnsortedMemberListFollowsSortedGlobalRanks) {
  const int n = GetParam();
  // {5, 1, 2} where the world has rank 5; {3, 1, 2} on four ranks.
  const std::vector<int> members = n > 5 ? std::vector<int>{5, 1, 2} : std::vector<int>{3, 1, 2};
  run_ranks(n, [members] {
    const int rank = get_rank();
    Group g = new_group(members);
    check_group(g, members, rank);
    if (!g.is_member()) return;
    // Group ranks 0, 1, 2 are global ranks 1, 2, max; all_gather returns them in that order.
    auto all = all_gather(Tensor::of<int32_t>({rank}), g);
    ASSERT_EQ(all.size(), 3u);
    const std::vector<int> s = sorted(members);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(all[static_cast<size_t>(i)].item<int32_t>(), s[i]);
  });
}

TEST_P(Groups, SingletonGroup) {
  const int n = GetParam();
  run_ranks(n, [n] {
    const int rank = get_rank();
    const std::vector<int> members = {n - 1};
    Group g = new_group(members);
    check_group(g, members, rank);
    if (!g.is_member()) return;
    Tensor t = Tensor::of<float>({1.5f, -2.0f});
    all_reduce(t, ReduceOp::Sum, g);
    broadcast(t, 0, g);
    barrier(g);
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
    auto gathered = all_gather(t, g);
    ASSERT_EQ(gathered.size(), 1u);
    EXPECT_EQ(gathered[0].to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  });
}

TEST_P(Groups, NonMembersCannotUseTheGroup) {
  const int n = GetParam();
  run_ranks(n, [n] {
    const int rank = get_rank();
    const std::vector<int> members = evens(n);
    Group g = new_group(members);
    if (rank % 2 == 0) return;
    EXPECT_FALSE(g.is_member());
    EXPECT_EQ(g.rank(), -1);
    EXPECT_EQ(get_rank(g), -1);
    Tensor t = Tensor::of<int32_t>({rank});
    // Every op refuses, naming the group; nothing is written.
    auto expect_refused = [&](auto&& call, const char* what) {
      try {
        call();
        ADD_FAILURE() << what << " on a group this rank is not in did not throw";
      } catch (const InvalidArgument& e) {
        EXPECT_TRUE(Contains(e.what(), expected_name(members))) << what;
        EXPECT_TRUE(Contains(e.what(), "not a member")) << what;
      }
    };
    expect_refused([&] { all_reduce(t, ReduceOp::Sum, g); }, "all_reduce");
    expect_refused([&] { broadcast(t, 0, g); }, "broadcast");
    expect_refused([&] { barrier(g); }, "barrier");
    expect_refused([&] { all_gather(t, g); }, "all_gather");
    expect_refused([&] { send(t, 0, g); }, "send");
    expect_refused([&] { recv(t, 0, g); }, "recv");
    EXPECT_EQ(t.item<int32_t>(), rank);
  });
}

TEST_P(Groups, CollectivesInsideASubGroup) {
  const int n = GetParam();
  // {1, 3, 5} where the world has rank 5; {1, 2, 3} on four ranks.
  const std::vector<int> members = n > 5 ? std::vector<int>{1, 3, 5} : std::vector<int>{1, 2, 3};
  run_ranks(n, [members] {
    const int rank = get_rank();
    Group g = new_group(members);
    Tensor t = Tensor::of<int64_t>({rank * 10 + 1});
    if (!g.is_member()) {
      // Untouched by the group's ops.
      barrier();
      EXPECT_EQ(t.item<int64_t>(), rank * 10 + 1);
      return;
    }
    Tensor sum = t.clone();
    all_reduce(sum, ReduceOp::Sum, g);
    int64_t want = 0;
    for (int m : members) want += m * 10 + 1;
    EXPECT_EQ(sum.item<int64_t>(), want);

    // src is a group rank: group rank 2 is the third-smallest member (global 5 for {1, 3, 5}).
    Tensor b = t.clone();
    broadcast(b, 2, g);
    EXPECT_EQ(b.item<int64_t>(), members[2] * 10 + 1);

    // reduce and gather to group rank 1 (global members[1]).
    Tensor r = t.clone();
    reduce(r, 1, ReduceOp::Max, g);
    if (rank == members[1]) {
      EXPECT_EQ(r.item<int64_t>(), members[2] * 10 + 1);
    }
    auto at_one = gather(t, 1, g);
    EXPECT_EQ(at_one.size(), rank == members[1] ? 3u : 0u);
    for (size_t i = 0; i < at_one.size(); ++i) {
      EXPECT_EQ(at_one[i].item<int64_t>(), members[i] * 10 + 1);
    }

    // scatter from group rank 0 (global members[0]): group rank i gets 100 + i.
    std::vector<Tensor> pieces;
    if (rank == members[0]) {
      for (int i = 0; i < 3; ++i) pieces.push_back(Tensor::of<int64_t>({100 + i}));
    }
    Tensor piece = Tensor::zeros({1}, DType::Int64);
    scatter(piece, pieces, 0, g);
    EXPECT_EQ(piece.item<int64_t>(), 100 + g.rank());
    barrier();
  });
}

TEST_P(Groups, OverlappingGroupsInInterleavedOrder) {
  const int n = GetParam();
  run_ranks(n, [n] {
    const int rank = get_rank();
    // A = {0, 1, 2}, B = {1, 2, 3}: ranks 1 and 2 are in both, ranks >= 4 in neither.
    const std::vector<int> a_members = {0, 1, 2};
    const std::vector<int> b_members = {1, 2, 3};
    Group a = new_group(a_members);
    Group b = new_group(b_members);
    EXPECT_NE(a.name(), b.name());
    for (int round = 0; round < 3; ++round) {
      for (int which = 0; which < 2; ++which) {
        const Group& g = which == 0 ? a : b;
        const std::vector<int>& members = which == 0 ? a_members : b_members;
        if (!g.is_member()) continue;
        Tensor t = Tensor::of<int64_t>({rank + 100 * round + 1000 * which});
        all_reduce(t, ReduceOp::Sum, g);
        int64_t want = 0;
        for (int m : members) want += m + 100 * round + 1000 * which;
        EXPECT_EQ(t.item<int64_t>(), want) << "round " << round << " group " << which;
      }
    }
    // The world is unaffected by the groups' sequence numbers.
    Tensor w = Tensor::of<int64_t>({1});
    all_reduce(w);
    EXPECT_EQ(w.item<int64_t>(), n);
  });
}

TEST_P(Groups, SameMemberListTwiceGivesDistinctGroups) {
  const int n = GetParam();
  run_ranks(n, [] {
    const int rank = get_rank();
    Group g1 = new_group({0, 1});
    Group g2 = new_group({1, 0});
    EXPECT_NE(g1.name(), g2.name());
    EXPECT_EQ(g1.global_ranks(), g2.global_ranks());
    if (rank > 1) return;
    // Rank 0 starts g1's all_reduce first, rank 1 g2's: matching by member list would pair them.
    Tensor x = Tensor::of<int64_t>({rank + 1});         // g1: 1 + 2
    Tensor y = Tensor::of<int64_t>({10 * (rank + 1)});  // g2: 10 + 20
    Work first =
        rank == 0 ? all_reduce_async(x, ReduceOp::Sum, g1) : all_reduce_async(y, ReduceOp::Sum, g2);
    Work second =
        rank == 0 ? all_reduce_async(y, ReduceOp::Sum, g2) : all_reduce_async(x, ReduceOp::Sum, g1);
    first.wait();
    second.wait();
    EXPECT_EQ(x.item<int64_t>(), 3);
    EXPECT_EQ(y.item<int64_t>(), 30);
  });
}

std::string world_name(const ::testing::TestParamInfo<int>& param) {
  return fmt::format("n{}", param.param);
}

INSTANTIATE_TEST_SUITE_P(Sim, Groups, ::testing::Values(4, 8, 64), world_name);

TEST(GroupsCrossMatch, TwinGroupsDoNotMatchEachOther) {
  // Rank 0 uses only the first of two {0, 1} groups and rank 1 only the second: no match.
  sim::Report report = simulate(2, [] {
    Group g1 = new_group({0, 1});
    Group g2 = new_group({0, 1});
    Tensor t = Tensor::of<int32_t>({1});
    all_reduce(t, ReduceOp::Sum, get_rank() == 0 ? g1 : g2);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
}

TEST(GroupsCrossMatch, TwinGroupsDoNotShareMessages) {
  sim::Report report = simulate(2, [] {
    Group g1 = new_group({0, 1});
    Group g2 = new_group({0, 1});
    Tensor t = Tensor::of<int32_t>({1});
    if (get_rank() == 0) {
      send(t, 1, g1);
    } else {
      recv(t, 0, g2);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
}

TEST(GroupsMismatch, ARankWithOtherMembersIsAMismatch) {
  int line = 0;
  sim::Report report = simulate(4, [&] {
    std::vector<int> members = get_rank() == 2 ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 1};
    line = __LINE__ + 1;
    new_group(members);
    ADD_FAILURE() << "new_group returned on rank " << get_rank();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Mismatch) << report.to_text();
  EXPECT_TRUE(Contains(report.message, "new_group"));
  EXPECT_TRUE(Contains(report.message, fmt::format("groups_test.cpp:{}", line)));
  for (const auto& row : report.ranks) EXPECT_EQ(row.state, "failed") << "rank " << row.rank;
}

TEST(GroupsMismatch, InvalidMemberListsAreRejected) {
  run_ranks(4, [] {
    EXPECT_THROW(new_group({}), InvalidArgument);
    EXPECT_THROW(new_group({0, 4}), InvalidArgument);
    EXPECT_THROW(new_group({-1, 0}), InvalidArgument);
    EXPECT_THROW(new_group({1, 2, 1}), InvalidArgument);
    // The rejected calls took no part in any agreement: a valid one still works.
    Group g = new_group({1, 2});
    EXPECT_EQ(g.name(), "world/1,2");
  });
}

TEST(GroupsMismatch, NewGroupOutsideASimulationOrInitHasOnlyRankZero) {
  // Not distributed, the process is rank 0 of one (Fallback.NewGroupOfRankZeroIsTheWorldOfOne).
  EXPECT_THROW(new_group({1}), InvalidArgument);
  EXPECT_TRUE(new_group({0}).is_default());
}

}  // namespace
}  // namespace ranks::testing
