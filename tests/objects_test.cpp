// Object collectives and sync_random_seed: MMEngine's upstream cases (shared/research/
// mmengine_dist.md §9: D5-D9 not distributed, G5/G6/G8/G9 on two ranks) and the cases upstream
// never covered (§9.7): non-zero src/dst, sub-groups, lists of different lengths, values that
// look like "none", world sizes 3, 7 and 64, and a rank whose object cannot be decoded. Every
// multi-rank body runs on the simulator and on each real backend built.

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness.hpp"
#include "ranks/context.hpp"

namespace ranks::testing {
namespace {

// Python's ['foo', 12, {1: 2}] and None, as one C++ type.
using Value = std::variant<std::monostate, std::string, int, std::map<int, int>>;
const std::vector<Value> upstream_list = {std::string("foo"), 12, std::map<int, int>{{1, 2}}};

// Rank r's object in the many-rank cases: different sizes on every rank.
std::map<std::string, std::vector<int>> object_of(int r) {
  std::map<std::string, std::vector<int>> m;
  for (int k = 0; k <= r % 5; ++k) m[fmt::format("key{}", k)] = std::vector<int>(k + r, r);
  return m;
}

// The draw sync_random_seed makes from a generator, computed here independently (splitmix64).
int64_t expected_draw(uint64_t state) {
  uint64_t z = state + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<int64_t>((z ^ (z >> 31)) >> 33);
}

TEST(ObjectsNotDistributed, UpstreamCases) {
  ASSERT_FALSE(is_distributed());
  current().rng.seed(1234);
  EXPECT_EQ(sync_random_seed(), expected_draw(1234));  // D5
  std::vector<Value> list = upstream_list;
  broadcast_object_list(list);  // D6
  EXPECT_EQ(list, upstream_list);
  EXPECT_EQ(all_gather_object(std::string("foo")), std::vector<std::string>{"foo"});  // D8
  EXPECT_EQ(gather_object(std::string("foo")), std::vector<std::string>{"foo"});      // D9
  EXPECT_EQ(gather_object(std::string("foo"), 0), std::vector<std::string>{"foo"});
}

class Objects : public ::testing::TestWithParam<std::string> {};

TEST_P(Objects, UpstreamTwoRankCases) {
  run_on(GetParam(), 2, [] {
    const int rank = get_rank();
    // G5: rank 0's draw, on both ranks.
    detail::Rng before = current().rng;
    const int64_t seed = sync_random_seed();
    EXPECT_GE(seed, 0);
    EXPECT_LT(seed, int64_t{1} << 31);
    if (rank == 0) {
      EXPECT_EQ(seed, static_cast<int64_t>(before.next() >> 33));
    }
    EXPECT_EQ(all_gather_object(seed), (std::vector<int64_t>{seed, seed}));
    // G6
    std::vector<Value> list = rank == 0 ? upstream_list : std::vector<Value>(3);
    broadcast_object_list(list);
    EXPECT_EQ(list, upstream_list);
    // G8: 'foo' and {1: 2}; then ['foo', {1: 2}] and {2: 3}.
    using Item = std::variant<std::string, std::map<int, int>>;
    const std::vector<Item> first = {std::string("foo"), std::map<int, int>{{1, 2}}};
    EXPECT_EQ(all_gather_object(first[static_cast<size_t>(rank)]), first);
    using Nested = std::variant<std::vector<Item>, std::map<int, int>>;
    const std::vector<Nested> second = {first, std::map<int, int>{{2, 3}}};
    EXPECT_EQ(all_gather_object(second[static_cast<size_t>(rank)]), second);
    // G9
    auto gathered = gather_object(first[static_cast<size_t>(rank)], 0);
    if (rank == 0) {
      EXPECT_EQ(gathered, first);
    } else {
      EXPECT_EQ(gathered, std::nullopt);
    }
  });
}

TEST_P(Objects, NonZeroRootsAndUnevenLists) {
  for (int n : {2, 3}) {
    run_on(GetParam(), n, [n] {
      const int rank = get_rank();
      const int last = n - 1;
      // Lists of different lengths everywhere: the src's list wins, resized.
      std::vector<std::string> list(static_cast<size_t>(rank + 1), fmt::format("r{}", rank));
      broadcast_object_list(list, last);
      EXPECT_EQ(list, std::vector<std::string>(static_cast<size_t>(n), fmt::format("r{}", last)));
      // An empty list from src empties every list.
      std::vector<int> empty_everywhere = rank == 0 ? std::vector<int>{} : std::vector<int>{1, 2};
      broadcast_object_list(empty_everywhere, 0);
      EXPECT_TRUE(empty_everywhere.empty());
      auto gathered = gather_object(object_of(rank), last);
      if (rank == last) {
        ASSERT_TRUE(gathered.has_value());
        ASSERT_EQ(gathered->size(), static_cast<size_t>(n));
        for (int r = 0; r < n; ++r) EXPECT_EQ((*gathered)[static_cast<size_t>(r)], object_of(r));
      } else {
        EXPECT_FALSE(gathered.has_value());
      }
    });
  }
}

TEST_P(Objects, ValuesThatLookLikeNoneSurvive) {
  run_on(GetParam(), 2, [] {
    const std::vector<std::optional<int>> mine = {std::nullopt, get_rank(), std::nullopt};
    auto all = all_gather_object(mine);
    ASSERT_EQ(all.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(all[static_cast<size_t>(r)],
                (std::vector<std::optional<int>>{std::nullopt, r, std::nullopt}));
    }
    EXPECT_EQ(all_gather_object(std::string()), (std::vector<std::string>{"", ""}));
  });
}

TEST_P(Objects, SubGroups) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    Group odd_out = new_group({0, 2});
    if (!odd_out.is_member()) return;
    // Global ranks 0 and 2 are group ranks 0 and 1; roots are group ranks.
    auto all = all_gather_object(rank, odd_out);
    EXPECT_EQ(all, (std::vector<int>{0, 2}));
    std::vector<int> list = {rank};
    broadcast_object_list(list, 1, odd_out);
    EXPECT_EQ(list, std::vector<int>{2});
    auto gathered = gather_object(rank * 10, 1, odd_out);
    if (rank == 2) {
      EXPECT_EQ(gathered, (std::vector<int>{0, 20}));
    } else {
      EXPECT_FALSE(gathered.has_value());
    }
    detail::Rng before = current().rng;
    const int64_t seed = sync_random_seed(odd_out);
    if (rank == 0) {
      EXPECT_EQ(seed, static_cast<int64_t>(before.next() >> 33));
    }
    EXPECT_EQ(all_gather_object(seed, odd_out), (std::vector<int64_t>{seed, seed}));
  });
}

// A rank outside the group gets the error the tensor collectives give, not a one-rank answer.
TEST_P(Objects, ARankOutsideTheGroupIsRefused) {
  run_on(GetParam(), 3, [] {
    Group pair = new_group({1, 2});
    if (pair.is_member()) return;
    auto refused = [](const std::function<void()>& call) {
      try {
        call();
        ADD_FAILURE() << "an object helper on a group this rank is not in returned";
      } catch (const InvalidArgument& e) {
        EXPECT_TRUE(Contains(e.what(), "is not a member of group")) << e.what();
      }
    };
    refused([&] { (void)all_gather_object(1, pair); });
    refused([&] { (void)gather_object(1, 0, pair); });
    std::vector<int> list = {0};
    refused([&] { broadcast_object_list(list, 0, pair); });
    std::map<std::string, Tensor> dict = {{"a", Tensor::of<float>({1.0f})}};
    refused([&] { all_reduce_dict(dict, "sum", pair); });
    refused([&] { (void)sync_random_seed(pair); });
  });
}

TEST_P(Objects, DifferentTypesOnTheRanksAreAClearError) {
  run_on(GetParam(), 2, [] {
    // Each rank decodes the other's object and fails naming the rank it came from and its own
    // type; the second pair has bodies of the same length, whose bits would read back as the
    // wrong numbers without the type in the payload.
    const std::string other = get_rank() == 0 ? "rank 1" : "rank 0";
    auto expect_mismatch = [&](const std::function<void()>& call, const std::string& own_type) {
      try {
        call();
        ADD_FAILURE() << "rank " << get_rank() << " decoded another rank's type";
      } catch (const Mismatch& e) {
        EXPECT_TRUE(Contains(
            e.what(), "the object from " + other + " is not of this rank's type " + own_type))
            << e.what();
      }
    };
    if (get_rank() == 0) {
      expect_mismatch([] { (void)all_gather_object(std::string("abc")); }, "std::");
      expect_mismatch(
          [] {
            (void)all_gather_object(std::vector<float>{1.5f, 2.5f});
          },
          "std::vector<float>");
    } else {
      expect_mismatch(
          [] {
            (void)all_gather_object(std::vector<int64_t>{1, 2, 3, 4});
          },
          "std::vector<long int>");
      expect_mismatch(
          [] {
            (void)all_gather_object(std::vector<int32_t>{1, 2});
          },
          "std::vector<int>");
    }
    // broadcast: only the receivers read, and the same numbers in the same type still arrive.
    std::vector<double> values = {get_rank() == 0 ? 0.25 : 9.0};
    if (get_rank() == 0) {
      std::vector<float> as_float = {0.25f};
      broadcast_object_list(as_float, 0);
    } else {
      expect_mismatch([&] { broadcast_object_list(values, 0); }, "std::vector<double>");
    }
    broadcast_object_list(values, 0);
    EXPECT_EQ(values, std::vector<double>{0.25});
  });
}

TEST_P(Objects, ADecodingErrorNamesTheCallItsGroupAndItsLine) {
  run_on(GetParam(), 2, [] {
    // The payload is read after the ops that moved it have completed: the error names the
    // object collective the program called, not them.
    std::vector<float> sent{1.5f, 2.5f};
    std::vector<int> received;
    const int line = __LINE__ + 3;
    try {
      if (get_rank() == 0) broadcast_object_list(sent, 0);
      if (get_rank() == 1) broadcast_object_list(received, 0);
      EXPECT_EQ(get_rank(), 0) << "rank 1 read a list of float as a list of int";
    } catch (const Mismatch& e) {
      EXPECT_EQ(get_rank(), 1);
      EXPECT_TRUE(Contains(e.what(), "broadcast_object_list on group 'world' at objects_test.cpp:" +
                                         std::to_string(line) +
                                         ": the object from rank 0 is not of this rank's type "
                                         "std::vector<int>"))
          << e.what();
    }
  });
}

TEST_P(Objects, RanksNamingDifferentDstsAreAMismatchOnEveryRank) {
  run_on(GetParam(), 3, [] {
    // Small objects travel in one all_gather, which has no root to disagree on: the dst each rank
    // was called with travels in the heads, and every rank raises the same Mismatch before any
    // rank takes itself for the root. Large ones the same, before the parts move.
    const int rank = get_rank();
    for (size_t bytes : {size_t{8}, size_t{4 * object::eager_bytes}}) {
      const std::string mine(bytes, static_cast<char>('a' + rank));
      const int line = __LINE__ + 2;
      try {
        (void)gather_object(mine, rank == 1 ? 1 : 0);
        ADD_FAILURE() << "rank " << rank << " gathered with mismatched dsts (" << bytes << " B)";
      } catch (const Mismatch& e) {
        EXPECT_TRUE(Contains(e.what(), "mismatched gather_object on group 'world'")) << e.what();
        EXPECT_TRUE(Contains(e.what(), "different dst: ranks 0,2 gave 0; rank 1 gave 1"))
            << e.what();
        EXPECT_TRUE(Contains(e.what(), "objects_test.cpp:" + std::to_string(line))) << e.what();
      }
    }
    // No rank was left in a collective: the group goes on.
    auto gathered = gather_object(rank * 10, 0);
    EXPECT_EQ(gathered.has_value(), rank == 0);
    if (gathered) {
      EXPECT_EQ(*gathered, (std::vector<int>{0, 10, 20}));
    }
  });
}

// A type whose serialize() leaves a field out: the others' objects come back without it, this
// rank's own entry is a copy of what it passed (objects.hpp), as with one rank.
struct Partly {
  int sent = 0;
  int kept_here = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(sent);
  }
};

TEST_P(Objects, OwnEntryIsACopyOfTheObject) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    const Partly mine{rank + 10, rank + 100};
    auto check = [&](const std::vector<Partly>& all) {
      ASSERT_EQ(all.size(), 3u);
      for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(all[static_cast<size_t>(r)].sent, r + 10);
        EXPECT_EQ(all[static_cast<size_t>(r)].kept_here, r == rank ? rank + 100 : 0);
      }
    };
    check(all_gather_object(mine));
    auto gathered = gather_object(mine, 2);
    EXPECT_EQ(gathered.has_value(), rank == 2);
    if (gathered) check(*gathered);
  });
}

// Payloads up to object::eager_bytes travel with their length in one collective, larger ones
// in a second: objects on both sides of the boundary, and ranks on different sides of it.
TEST_P(Objects, SmallAndLargeObjectsAroundTheEagerLimit) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    // A string of k chars is a payload of the header, 8 (its length) and k bytes.
    const size_t boundary = object::eager_bytes - object::header_bytes - 8;
    ASSERT_EQ(object::encode(std::string(boundary, 'x')).size(), object::eager_bytes);
    for (size_t base : {size_t{0}, boundary - 1, boundary, boundary + 1, size_t{50000}}) {
      auto text_of = [&](int r) { return std::string(base + static_cast<size_t>(r), 'a' + r); };
      auto all = all_gather_object(text_of(rank));
      ASSERT_EQ(all.size(), 3u);
      for (int r = 0; r < 3; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], text_of(r)) << base;
      auto gathered = gather_object(text_of(rank), 1);
      EXPECT_EQ(gathered.has_value(), rank == 1);
      if (gathered) {
        for (int r = 0; r < 3; ++r) EXPECT_EQ((*gathered)[static_cast<size_t>(r)], text_of(r));
      }
      for (int src : {0, 2}) {
        std::vector<std::string> list = {text_of(rank), "second"};
        broadcast_object_list(list, src);
        EXPECT_EQ(list, (std::vector<std::string>{text_of(src), "second"})) << base;
      }
      auto collected = collect_results(std::vector<std::string>{text_of(rank)}, 3, "gpu");
      if (rank == 0) {
        EXPECT_EQ(collected, (std::vector<std::string>{text_of(0), text_of(1), text_of(2)}));
      }
    }
  });
}

// all_gather_object's heads carry as many payload bytes as the group's previous call needed, so a
// steady size takes one collective per call; a payload that outgrows the heads takes a second
// (object/exchange.cpp). Sizes that rise, fall, cross the eager limit and exceed the 16 MiB
// ceiling, on two groups whose hints must not mix, with ranks of different sizes.
TEST_P(Objects, RepeatedGathersOfChangingSizes) {
  const bool huge = is_simulated(GetParam());  // 17 MiB parts: quick in one process
  run_on(GetParam(), 3, [huge] {
    const int rank = get_rank();
    Group pair = new_group({0, 2});
    auto text_of = [](size_t size, int r, char tag) {
      return std::string(size + 1000 * static_cast<size_t>(r), static_cast<char>(tag + r));
    };
    auto collectives = [](const Group& g) {
      return (g.is_default() ? current().world : g.impl())->next_collective_seq;
    };
    std::vector<std::pair<size_t, uint64_t>> calls = {
        // (size, collectives the call takes: 2 when the heads cannot carry the largest payload)
        {50'000, 2}, {50'000, 1}, {52'000, 1}, {60'000, 2}, {100, 1},
        {70'000, 2}, {70'000, 1}, {10, 1},     {3'000, 2},  {3'000, 1}};
    if (huge) calls.insert(calls.end(), {{17u << 20, 2}, {17u << 20, 2}, {60'000, 2}, {60'000, 1}});
    size_t call = 0;
    for (auto [size, expected] : calls) {
      SCOPED_TRACE(fmt::format("call {}: size {}", call, size));
      const uint64_t before = collectives(Group{});
      auto all = all_gather_object(text_of(size, rank, 'a'));
      EXPECT_EQ(collectives(Group{}) - before, expected);
      ASSERT_EQ(all.size(), 3u);
      for (int r = 0; r < 3; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], text_of(size, r, 'a'));
      if (pair.is_member()) {
        // A different size on the sub-group each time: its heads follow its own calls.
        const size_t other = call % 3 == 0 ? 200 : 90'000;
        auto both = all_gather_object(text_of(other, rank, 'k'), pair);
        ASSERT_EQ(both.size(), 2u);
        EXPECT_EQ(both[0], text_of(other, 0, 'k'));
        EXPECT_EQ(both[1], text_of(other, 2, 'k'));
      }
      ++call;
    }
  });
}

// With KeepExchangeBlocks (as the Python package runs them), large blocks come from the thread's
// spares: growing and shrinking payloads, both ways of gathering, and in the simulator ranks
// that take and give back spares on one thread in turn, each getting every member's bytes.
TEST_P(Objects, KeptBlocksCarryEveryPayloadWhateverItsSize) {
  run_on(GetParam(), 3, [] {
    const object::KeepExchangeBlocks keep;
    const int rank = get_rank();
    auto text_of = [](size_t size, int r, size_t call) {
      return std::string(size + 4099 * static_cast<size_t>(r), static_cast<char>('a' + r + call));
    };
    const std::vector<size_t> sizes = {200'000, 1'000'000, 150'000, 3'000'000, 200'000, 90};
    for (size_t call = 0; call < sizes.size(); ++call) {
      SCOPED_TRACE(fmt::format("call {}: size {}", call, sizes[call]));
      auto all = all_gather_object(text_of(sizes[call], rank, call));
      ASSERT_EQ(all.size(), 3u);
      for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(all[static_cast<size_t>(r)], text_of(sizes[call], r, call));
      }
      auto at_root = gather_object(text_of(sizes[call], rank, call + 1), 1);
      if (rank == 1) {
        ASSERT_TRUE(at_root.has_value());
        for (int r = 0; r < 3; ++r) {
          EXPECT_EQ((*at_root)[static_cast<size_t>(r)], text_of(sizes[call], r, call + 1));
        }
      } else {
        EXPECT_FALSE(at_root.has_value());
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, Objects, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

// World sizes 3, 7 and 64 in the simulator, every root.
TEST(ObjectsManyRanks, EveryCollectiveAndRoot) {
  for (int n : {3, 7, 64}) {
    run_ranks(n, [n] {
      const int rank = get_rank();
      auto all = all_gather_object(object_of(rank));
      ASSERT_EQ(all.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], object_of(r));
      for (int root : {0, n / 2, n - 1}) {
        std::vector<std::string> list = {fmt::format("from {}", rank)};
        broadcast_object_list(list, root);
        EXPECT_EQ(list, std::vector<std::string>{fmt::format("from {}", root)});
        auto gathered = gather_object(rank, root);
        EXPECT_EQ(gathered.has_value(), rank == root);
        if (gathered) {
          for (int r = 0; r < n; ++r) EXPECT_EQ((*gathered)[static_cast<size_t>(r)], r);
        }
      }
    });
  }
}

// Under the nccl rules payloads travel on the GPU (comm_device() is cuda there), as in MMEngine;
// the simulator enforces that nccl takes CUDA tensors, so this runs every object path that way.
TEST(ObjectsManyRanks, UnderNcclRulesPayloadsGoThroughTheGpu) {
  sim::Options options = default_options();
  options.backend = "nccl";
  run_ranks(
      3,
      [] {
        const int rank = get_rank();
        EXPECT_EQ(comm_device().type, Device::Type::CUDA);
        auto all = all_gather_object(object_of(rank));
        for (int r = 0; r < 3; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], object_of(r));
        std::vector<std::string> list = {fmt::format("{}", rank)};
        broadcast_object_list(list, 2);
        EXPECT_EQ(list, std::vector<std::string>{"2"});
        auto gathered = gather_object(rank, 1);
        EXPECT_EQ(gathered.has_value(), rank == 1);
        const int64_t seed = sync_random_seed();
        EXPECT_EQ(all_gather_object(seed), (std::vector<int64_t>(3, seed)));
        auto collected = collect_results(std::vector<int>{rank, rank + 3}, 6, "gpu");
        if (rank == 0) {
          EXPECT_EQ(collected, (std::vector<int>{0, 1, 2, 3, 4, 5}));
        }
      },
      options);
}

// A shapes-only run moves no tensor data, but objects are the program's own metadata: they still
// arrive, so a program that logs or agrees through them runs as it would with data.
TEST(ObjectsManyRanks, ShapesOnlyRunsStillMoveObjects) {
  sim::Options options = default_options();
  options.move_data = false;
  run_ranks(
      4,
      [] {
        const int rank = get_rank();
        auto all = all_gather_object(object_of(rank));
        for (int r = 0; r < 4; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], object_of(r));
        std::vector<std::string> list = {fmt::format("from {}", rank)};
        broadcast_object_list(list, 3);
        EXPECT_EQ(list, std::vector<std::string>{"from 3"});
        auto gathered = gather_object(object_of(rank), 2);
        if (rank == 2) {
          ASSERT_TRUE(gathered.has_value());
          for (int r = 0; r < 4; ++r) EXPECT_EQ((*gathered)[static_cast<size_t>(r)], object_of(r));
        }
        const int64_t seed = sync_random_seed();
        EXPECT_EQ(all_gather_object(seed), (std::vector<int64_t>(4, seed)));
        std::map<std::string, Tensor> metrics = {{"loss", Tensor::of<float>({1.0f * rank})}};
        all_reduce_dict(metrics);  // the key check passes; the values, tensors, do not move
        auto collected = collect_results(std::vector<int>{rank, rank + 4}, 8, "cpu");
        if (rank == 0) {
          EXPECT_EQ(collected, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));  // MMEngine's zip
        }
        // Tensor collectives stay shapes-only.
        Tensor t = Tensor::of<int32_t>({rank});
        all_reduce(t);
        EXPECT_EQ(t.to_vector<int32_t>(), std::vector<int32_t>{rank});
      },
      options);
}

// The report of a rank stuck in an object collective names the call site in the program.
TEST(ObjectsManyRanks, ReportsNameTheCallerAndTheOp) {
  sim::Report report = simulate(2, [] {
    if (get_rank() == 0) (void)all_gather_object(1);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock);
  EXPECT_TRUE(Contains(report.to_text(), "objects_test.cpp"));
  ASSERT_EQ(report.ranks.size(), 2u);
  // The call the program made, not the all_gather it runs through.
  EXPECT_EQ(report.ranks[0].op, "all_gather_object") << report.to_text();
  EXPECT_TRUE(Contains(report.to_text(), "blocked in all_gather_object")) << report.to_text();
}

}  // namespace
}  // namespace ranks::testing
