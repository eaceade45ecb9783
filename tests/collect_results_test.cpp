// collect_results: MMEngine's cases (D10 not distributed; N8 on two ranks, through a directory
// and through the network, with and without tmpdir, size 4 and 3) and what upstream never
// covered: uneven and empty parts, values that look like "none" (never dropped), 7 and 64 ranks,
// argument errors, and a rank that does not share the directory (an error on every rank that
// names it, instead of rank 0's FileNotFoundError).

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

namespace fs = std::filesystem;
using Value =
    std::variant<std::string, int, std::map<int, int>, std::map<std::string, std::string>>;

// The order MMEngine documents, computed without interleaving loops: element i of part r goes
// before element j of part s exactly when (i, r) < (j, s).
template <class T>
std::vector<T> expected_order(const std::vector<std::vector<T>>& parts, size_t size) {
  std::vector<std::pair<size_t, size_t>> keys;
  for (size_t r = 0; r < parts.size(); ++r) {
    for (size_t i = 0; i < parts[r].size(); ++i) keys.emplace_back(i, r);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<T> out;
  for (const auto& [i, r] : keys) {
    if (out.size() < size) out.push_back(parts[r][i]);
  }
  return out;
}

TEST(CollectResultsNotDistributed, ReturnsThePartUpToSize) {
  const std::vector<Value> part = {std::string("foo"), std::map<int, int>{{1, 2}}};
  EXPECT_EQ(collect_results(part, 2, "cpu"), part);
  EXPECT_EQ(collect_results(part, 2, "gpu"), part);
  EXPECT_EQ(collect_results(part, 1), std::vector<Value>{part[0]});
  EXPECT_EQ(collect_results(part, 10), part);
}

TEST(CollectResultsNotDistributed, ArgumentsAreCheckedFirst) {
  const std::vector<int> part = {1};
  try {
    (void)collect_results(part, 1, "npu");
    ADD_FAILURE() << "npu accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(Contains(e.what(), "collect_results at collect_results_test.cpp:"));
    EXPECT_TRUE(Contains(e.what(), "device is 'npu'"));
  }
  EXPECT_THROW((void)collect_results(part, 1, "gpu", fs::path("/tmp")), InvalidArgument);
}

class CollectResults : public ::testing::TestWithParam<std::string> {};

TEST_P(CollectResults, UpstreamTwoRankCases) {
  run_on(GetParam(), 2, [] {
    const int rank = get_rank();
    const std::vector<std::vector<Value>> parts = {
        {std::string("foo"), std::map<int, int>{{1, 2}}},
        {24, std::map<std::string, std::string>{{"a", "b"}}}};
    const std::vector<Value>& mine = parts[static_cast<size_t>(rank)];
    const std::vector<Value> four = {std::string("foo"), 24, std::map<int, int>{{1, 2}},
                                     std::map<std::string, std::string>{{"a", "b"}}};
    const std::vector<Value> three(four.begin(), four.begin() + 3);
    auto check = [&](const std::optional<std::vector<Value>>& got, const std::vector<Value>& want) {
      if (rank == 0) {
        EXPECT_EQ(got, want);
      } else {
        EXPECT_EQ(got, std::nullopt);
      }
    };
    check(collect_results(mine, 4, "cpu"), four);
    check(collect_results(mine, 4, "gpu"), four);
    check(collect_results(mine, 3, "cpu"), three);
    check(collect_results(mine, 3, "gpu"), three);
    // A tmpdir every rank is told (MMEngine's test): it is gone afterwards, as in MMEngine.
    std::vector<std::string> tmpdir(1);
    if (rank == 0) {
      char name[] = "/tmp/ranks-collect-XXXXXX";
      tmpdir[0] = mkdtemp(name);
    }
    broadcast_object_list(tmpdir);
    check(collect_results(mine, 4, "cpu", fs::path(tmpdir[0])), four);
    barrier();
    if (rank == 0) {
      EXPECT_FALSE(fs::exists(tmpdir[0]));
    }
    // Unlike MMEngine, a tmpdir that holds anything else stays, with what it holds.
    if (rank == 0) {
      char name[] = "/tmp/ranks-collect-XXXXXX";
      tmpdir[0] = mkdtemp(name);
      std::ofstream(fs::path(tmpdir[0]) / "keep.txt") << "not the call's";
    }
    broadcast_object_list(tmpdir);
    check(collect_results(mine, 4, "cpu", fs::path(tmpdir[0])), four);
    barrier();
    if (rank == 0) {
      EXPECT_TRUE(fs::exists(fs::path(tmpdir[0]) / "keep.txt"));
      EXPECT_EQ(std::distance(fs::directory_iterator(tmpdir[0]), fs::directory_iterator()), 1);
      fs::remove_all(tmpdir[0]);
    }
  });
}

TEST_P(CollectResults, ADirectoryItMakesIsItsOwnersAlone) {
  run_on(GetParam(), 2, [] {
    const int rank = get_rank();
    std::vector<std::string> base(1);
    if (rank == 0) {
      char name[] = "/tmp/ranks-collect-base-XXXXXX";
      base[0] = (fs::path(mkdtemp(name)) / "made" / "here").string();
    }
    broadcast_object_list(base);
    const std::vector<int> mine = {rank};
    auto got = collect_results(mine, 2, "cpu", fs::path(base[0]));
    barrier();
    if (rank == 0) {
      EXPECT_EQ(got, (std::vector<int>{0, 1}));
      // The call removes its tmpdir once empty; the parent it made stays, the user's alone.
      const fs::path made = fs::path(base[0]).parent_path();
      ASSERT_TRUE(fs::is_directory(made));
      EXPECT_EQ(fs::status(made).permissions() & fs::perms::all, fs::perms::owner_all);
      fs::remove_all(made.parent_path());
    }
  });
}

TEST_P(CollectResults, UnevenEmptyAndNoneLikeParts) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    // The example of MMEngine PR #1469.
    const std::vector<std::vector<int>> parts = {{1, 2}, {3, 4, 5, 6, 7}, {8, 9, 10}};
    for (const char* device : {"cpu", "gpu"}) {
      auto got = collect_results(parts[static_cast<size_t>(rank)], 10, device);
      if (rank == 0) {
        EXPECT_EQ(got, (std::vector<int>{1, 3, 8, 2, 4, 9, 5, 10, 6, 7})) << device;
        EXPECT_EQ(got, expected_order(parts, 10));
      }
      // An empty part empties nothing else.
      const std::vector<std::vector<int>> with_empty = {{1, 2}, {}, {3}};
      got = collect_results(with_empty[static_cast<size_t>(rank)], 3, device);
      if (rank == 0) {
        EXPECT_EQ(got, (std::vector<int>{1, 3, 2})) << device;
      }
      // Values that look like None are results too.
      const std::vector<std::vector<std::optional<int>>> nones = {
          {std::nullopt, 1}, {std::nullopt}, {2, std::nullopt}};
      auto kept = collect_results(nones[static_cast<size_t>(rank)], 5, device);
      if (rank == 0) {
        EXPECT_EQ(kept, expected_order(nones, 5)) << device;
      }
    }
  });
}

TEST_P(CollectResults, ARankThatDoesNotShareTheDirectoryIsNamedEverywhere) {
  if (is_simulated(GetParam())) GTEST_SKIP() << "simulated ranks share one process's filesystem view";
  run_on(GetParam(), 2, [] {
    // /proc/self/cwd is one path that each process resolves to its own working directory: two
    // processes with different working directories see two different "shared" directories,
    // exactly as two nodes without a shared filesystem do.
    const int rank = get_rank();
    std::vector<std::string> base(1);
    if (rank == 0) {
      char name[] = "/tmp/ranks-unshared-XXXXXX";
      base[0] = mkdtemp(name);
    }
    broadcast_object_list(base);
    const fs::path own = fs::path(base[0]) / fmt::format("rank{}", rank);
    fs::create_directories(own);
    const fs::path previous = fs::current_path();
    fs::current_path(own);
    try {
      (void)collect_results(std::vector<int>{rank}, 2, "cpu", fs::path("/proc/self/cwd/results"));
      ADD_FAILURE() << "rank " << rank << " collected through an unshared directory";
    } catch (const Error& e) {
      EXPECT_TRUE(Contains(e.what(), "rank 1 (host"));
      EXPECT_TRUE(Contains(e.what(), "does not see the directory"));
      EXPECT_TRUE(Contains(e.what(), "collect_results_test.cpp"));
    }
    fs::current_path(previous);
    barrier();
    if (rank == 0) {
      // Rank 0 cleaned up: its directory for the call, and the tmpdir that was left empty.
      EXPECT_TRUE(fs::is_directory(fs::path(base[0]) / "rank0"));
      EXPECT_FALSE(fs::exists(fs::path(base[0]) / "rank0" / "results"));
      fs::remove_all(base[0]);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, CollectResults, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

TEST(CollectResultsManyRanks, SevenAndSixtyFourRanks) {
  for (int n : {7, 64}) {
    run_ranks(n, [n] {
      const int rank = get_rank();
      std::vector<std::vector<std::string>> parts(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        for (int i = 0; i < (r * 3) % 5; ++i) {
          parts[static_cast<size_t>(r)].push_back(fmt::format("r{}i{}", r, i));
        }
      }
      const size_t size = static_cast<size_t>(n);  // fewer than there are: truncated
      for (const char* device : {"cpu", "gpu"}) {
        auto got = collect_results(parts[static_cast<size_t>(rank)], size, device);
        if (rank == 0) {
          EXPECT_EQ(got, expected_order(parts, size)) << device << " n=" << n;
        } else {
          EXPECT_FALSE(got.has_value());
        }
      }
    });
  }
}

// Without a tmpdir the parts go under ./.dist_test, which is gone afterwards when the call left
// it empty (MMEngine leaves it behind). Run in a scratch working directory of its own.
TEST(CollectResults, TheDefaultTmpdirIsRemovedWhenLeftEmpty) {
  char name[] = "/tmp/ranks-collect-cwd-XXXXXX";
  const fs::path scratch = mkdtemp(name);
  const fs::path before = fs::current_path();
  fs::current_path(scratch);
  run_ranks(3, [] {
    const int rank = get_rank();
    auto got = collect_results(std::vector<int>{rank}, 3, "cpu");
    if (rank == 0) {
      EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
    }
  });
  EXPECT_FALSE(fs::exists(scratch / ".dist_test"));
  fs::current_path(before);
  fs::remove_all(scratch);
}

}  // namespace
}  // namespace ranks::testing
