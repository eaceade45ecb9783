// new_group(ranks, backend): a group on another backend than the world's (torch's
// new_group(backend="gloo") for CPU objects in an nccl job). The body runs simulated under each
// world's rules and for real: an mpi world (mpirun, which wires up no store) with gloo groups
// beside it, whose members rendezvous through a store rank 0 starts for them.

#include <fmt/format.h>

#include <numeric>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

std::vector<int> everyone(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// A group of `side` over the whole world, then one over the odd ranks; the world keeps working
// between and after them.
void side_group_body(const std::string& side) {
  const int rank = get_rank();
  const int n = get_world_size();
  const std::string world_backend = *get_backend();
  Group all = new_group(everyone(n), side);
  EXPECT_EQ(all.backend(), side);
  EXPECT_EQ(*get_backend(all), side);
  EXPECT_EQ(all.rank(), rank);
  EXPECT_EQ(all.name(), fmt::format("world/{}", fmt::join(everyone(n), ",")));

  Tensor t = Tensor::from(std::vector<int64_t>{rank + 1, 2 * rank});
  all_reduce(t, ReduceOp::Sum, all);
  EXPECT_EQ(t.to_doubles(), (std::vector<double>{n * (n + 1) / 2.0, n * (n - 1.0)}));
  std::vector<std::string> names = all_gather_object(fmt::format("r{}", rank), all);
  std::vector<std::string> want;
  for (int r = 0; r < n; ++r) want.push_back(fmt::format("r{}", r));
  EXPECT_EQ(names, want);

  barrier();  // the world, on its own backend
  EXPECT_EQ(*get_backend(), world_backend);

  std::vector<int> odds;
  for (int r = 1; r < n; r += 2) odds.push_back(r);
  Group odd = new_group(odds, side);
  if (rank % 2 == 1) {
    EXPECT_EQ(odd.rank(), rank / 2);
    Tensor v = Tensor::from(std::vector<double>{static_cast<double>(rank)});
    all_reduce(v, ReduceOp::Max, odd);
    EXPECT_EQ(v.to_doubles(), std::vector<double>{static_cast<double>(odds.back())});
  } else {
    EXPECT_FALSE(odd.is_member());
    EXPECT_EQ(get_rank(odd), -1);
  }
  // On the world's backend: a GPU tensor where the world is nccl's.
  const Device device = world_backend == "nccl" ? Device::cuda(get_local_rank()) : Device::cpu();
  Tensor w = Tensor::from(std::vector<double>{1.0}, {}, device);
  all_reduce(w);
  EXPECT_EQ(w.to_doubles(), std::vector<double>{static_cast<double>(n)});
}

struct SideCase {
  std::string world;  // the world's backend (rules, when simulated)
  std::string side;
  bool real = false;
};

class SideGroups : public ::testing::TestWithParam<SideCase> {};

TEST_P(SideGroups, CollectivesAndObjectsOnTheSideGroup) {
  const SideCase c = GetParam();
  for (int n : {2, 3}) {
    if (c.real) {
      run_processes(c.world, n, [&] { side_group_body(c.side); });
    } else {
      run_ranks(n, [&] { side_group_body(c.side); }, options_for(c.world));
    }
  }
}

std::vector<SideCase> side_cases() {
  std::vector<SideCase> cases = {{"nccl", "gloo"}, {"mpi", "gloo"}, {"gloo", "mpi"}};
  if (backend_built("mpi") && backend_built("gloo")) cases.push_back({"mpi", "gloo", true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, SideGroups, ::testing::ValuesIn(side_cases()),
                         [](const auto& param_info) {
                           return fmt::format("{}_world_{}_side{}", param_info.param.world,
                                              param_info.param.side, param_info.param.real ? "_real" : "");
                         });

// The side group follows its own backend's rules: in an nccl job the world refuses a gather of
// host tensors, the gloo group beside it takes it (the reason torch programs make one).
TEST(SideGroupRules, AGlooGroupTakesWhatTheNcclWorldRefuses) {
  run_ranks(
      4,
      [] {
        Tensor host = Tensor::from(std::vector<float>{static_cast<float>(get_rank())});
        EXPECT_THROW((void)gather(host, 0), Unsupported);
        Group cpu = new_group(everyone(4), "gloo");
        std::vector<Tensor> at_root = gather(host, 0, cpu);
        if (get_rank() == 0) {
          ASSERT_EQ(at_root.size(), 4U);
          for (int r = 0; r < 4; ++r) {
            EXPECT_EQ(at_root[static_cast<size_t>(r)].to_doubles(),
                      std::vector<double>{static_cast<double>(r)});
          }
        } else {
          EXPECT_TRUE(at_root.empty());
        }
      },
      options_for("nccl"));
}

TEST(SideGroupRules, TheWorldsOwnBackendGivesAPlainGroup) {
  run_ranks(
      2,
      [] {
        Group same = new_group({0, 1}, "mpi");
        EXPECT_EQ(same.backend(), "mpi");
        EXPECT_EQ(same.name(), "world/0,1");
        Group again = new_group({0, 1});
        EXPECT_EQ(again.name(), "world/0,1#2");
      },
      options_for("mpi"));
}

TEST(SideGroupRules, RanksAskingForDifferentBackendsAreAMismatch) {
  int line = 0;
  sim::Report report = simulate(3, [&] {
    line = __LINE__ + 1;
    Group g = new_group({0, 1, 2}, get_rank() == 1 ? "mpi" : "gloo");
    ADD_FAILURE() << "new_group returned on rank " << get_rank();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Mismatch) << report.to_text();
  EXPECT_TRUE(Contains(report.message, "new_group"));
  EXPECT_TRUE(Contains(report.message, fmt::format("side_groups_test.cpp:{}", line)));
}

TEST(SideGroupRules, AnUnknownBackendIsRefusedByName) {
  run_ranks(2, [] {
    try {
      (void)new_group({0, 1}, "ucc");
      ADD_FAILURE() << "new_group accepted backend 'ucc'";
    } catch (const InvalidArgument& e) {
      EXPECT_TRUE(Contains(e.what(), "backend 'ucc' is not one of nccl, gloo, mpi"));
      EXPECT_TRUE(Contains(e.what(), "side_groups_test.cpp"));
    }
    barrier();  // the refused call took no part in any agreement
  });
}

TEST(SideGroupRules, NotDistributedTheGroupOfRankZeroIsTheWorld) {
  Group g = new_group({0}, "gloo");
  EXPECT_TRUE(g.is_default());
  EXPECT_EQ(g.size(), 1);
  EXPECT_THROW((void)new_group({0, 1}, "gloo"), InvalidArgument);
}

}  // namespace
}  // namespace ranks::testing
