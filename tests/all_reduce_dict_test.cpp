// all_reduce_dict: MMEngine's cases (D7 not distributed; G7 on two ranks: int64 sum, float32
// mean, mixed float32/int32 promoted to float32), the promotion table, other ops, sub-groups and
// the trap MMEngine leaves open: ranks with different keys or shapes get a Mismatch on every
// rank instead of reducing unrelated numbers into each other.

#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using Dict = std::map<std::string, Tensor>;

TEST(AllReduceDictNotDistributed, LeavesTheValues) {
  Dict d = {{"key1", Tensor::of<int64_t>({0, 1})}, {"key2", Tensor::of<int64_t>({0, 1, 2})}};
  all_reduce_dict(d);
  EXPECT_EQ(d["key1"].to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(d["key2"].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
}

TEST(PromoteTypes, TorchRules) {
  EXPECT_EQ(promote_types(DType::Float32, DType::Int32), DType::Float32);
  EXPECT_EQ(promote_types(DType::Int64, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_EQ(promote_types(DType::Float64, DType::BFloat16), DType::Float64);
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int8), DType::Int32);
  EXPECT_EQ(promote_types(DType::Int8, DType::Int64), DType::Int64);
  EXPECT_EQ(promote_types(DType::Bool, DType::UInt8), DType::UInt8);
  EXPECT_EQ(promote_types(DType::Bool, DType::Bool), DType::Bool);
  EXPECT_EQ(promote_types(DType::Int32, DType::Int32), DType::Int32);
}

class AllReduceDict : public ::testing::TestWithParam<std::string> {};

TEST_P(AllReduceDict, UpstreamTwoRankCases) {
  run_on(GetParam(), 2, [] {
    const bool r0 = get_rank() == 0;
    Dict ints = {{"key1", Tensor::of<int64_t>(r0 ? std::initializer_list<int64_t>{0, 1}
                                                 : std::initializer_list<int64_t>{2, 3})},
                 {"key2", Tensor::of<int64_t>(r0 ? std::initializer_list<int64_t>{1, 2}
                                                 : std::initializer_list<int64_t>{3, 4})}};
    all_reduce_dict(ints, "sum");
    EXPECT_EQ(ints["key1"].to_vector<int64_t>(), (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(ints["key2"].to_vector<int64_t>(), (std::vector<int64_t>{4, 6}));

    Dict floats = {{"key1", Tensor::of<float>(r0 ? std::initializer_list<float>{0, 1}
                                                 : std::initializer_list<float>{2, 3})},
                   {"key2", Tensor::of<float>(r0 ? std::initializer_list<float>{1, 2}
                                                 : std::initializer_list<float>{3, 4})}};
    all_reduce_dict(floats, "mean");
    EXPECT_EQ(floats["key1"].to_vector<float>(), (std::vector<float>{1, 2}));
    EXPECT_EQ(floats["key2"].to_vector<float>(), (std::vector<float>{2, 3}));

    // Mixed float32 and int32: both come back float32.
    Dict mixed = {{"key1", Tensor::of<float>(r0 ? std::initializer_list<float>{0, 1}
                                                : std::initializer_list<float>{2, 3})},
                  {"key2", Tensor::of<int32_t>(r0 ? std::initializer_list<int32_t>{1, 2}
                                                  : std::initializer_list<int32_t>{3, 4})}};
    all_reduce_dict(mixed);
    EXPECT_EQ(mixed["key1"].dtype(), DType::Float32);
    EXPECT_EQ(mixed["key2"].dtype(), DType::Float32);
    EXPECT_EQ(mixed["key1"].to_vector<float>(), (std::vector<float>{2, 4}));
    EXPECT_EQ(mixed["key2"].to_vector<float>(), (std::vector<float>{4, 6}));
  });
}

TEST_P(AllReduceDict, ShapesOpsAndTheCallersTensors) {
  run_on(GetParam(), 3, [] {
    const int r = get_rank();
    Tensor mine = Tensor::from<int64_t>(std::vector<int64_t>{r, 10 * r, 1, 2, 3, r}, {2, 3});
    Tensor scalar = Tensor::empty({}, DType::Int64);  // zero dimensions, one element
    scalar.data<int64_t>()[0] = r + 1;
    Dict d = {{"matrix", mine}, {"scalar", scalar}};
    all_reduce_dict(d, ReduceOp::Max);
    EXPECT_EQ(d["matrix"].shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(d["matrix"].to_vector<int64_t>(), (std::vector<int64_t>{2, 20, 1, 2, 3, 2}));
    EXPECT_EQ(d["scalar"].shape(), std::vector<int64_t>{});
    EXPECT_EQ(d["scalar"].to_vector<int64_t>(), std::vector<int64_t>{3});
    // The caller's own tensor is not written (the dict gets new ones, as in MMEngine).
    EXPECT_EQ(mine.to_vector<int64_t>(), (std::vector<int64_t>{r, 10 * r, 1, 2, 3, r}));
    // int64 mean truncates toward zero, as MMEngine's mean does: (0 + 1 + 2) / 3 = 1, 5 / 3 = 1.
    Dict m = {{"a", Tensor::of<int64_t>({r, r == 2 ? 3 : 1})}};
    all_reduce_dict(m, "mean");
    EXPECT_EQ(m["a"].to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
    Dict empty;
    all_reduce_dict(empty);
    EXPECT_TRUE(empty.empty());
  });
}

TEST_P(AllReduceDict, SubGroup) {
  run_on(GetParam(), 3, [] {
    Group g = new_group({1, 2});
    if (!g.is_member()) return;
    Dict d = {{"x", Tensor::of<double>({static_cast<double>(get_rank())})}};
    all_reduce_dict(d, ReduceOp::Sum, g);
    EXPECT_EQ(d["x"].to_vector<double>(), std::vector<double>{3.0});
  });
}

TEST_P(AllReduceDict, DifferentKeysOrShapesAreAMismatchOnEveryRank) {
  run_on(GetParam(), 3, [] {
    const int r = get_rank();
    Dict d = {{"loss", Tensor::of<float>({1.0f})}};
    if (r == 1) d["extra"] = Tensor::of<float>({2.0f});
    try {
      all_reduce_dict(d);
      ADD_FAILURE() << "rank " << r << " reduced dicts with different keys";
    } catch (const Mismatch& e) {
      EXPECT_TRUE(Contains(e.what(), "ranks 0,2 {loss: float32[1]}"));
      EXPECT_TRUE(Contains(e.what(), "rank 1 {extra: float32[1], loss: float32[1]}"));
      EXPECT_TRUE(Contains(e.what(), "all_reduce_dict_test.cpp"));
    }
    Dict shaped = {{"loss", r == 2 ? Tensor::of<float>({1.0f, 2.0f}) : Tensor::of<float>({1.0f})}};
    EXPECT_THROW(all_reduce_dict(shaped), Mismatch);
    // The group is still usable afterwards: no rank was left behind in a collective.
    Dict fine = {{"loss", Tensor::of<float>({1.0f})}};
    all_reduce_dict(fine);
    EXPECT_EQ(fine["loss"].to_vector<float>(), std::vector<float>{3.0f});
  });
}

TEST(AllReduceDictArguments, ValuesOnDifferentDevicesOrUndefined) {
  run_ranks(2, [] {
    Dict split = {{"a", Tensor::of<float>({1.0f})},
                  {"b", Tensor::of<float>({1.0f}, Device::cuda(0))}};
    EXPECT_THROW(all_reduce_dict(split), InvalidArgument);
    Dict undefined = {{"a", Tensor()}};
    EXPECT_THROW(all_reduce_dict(undefined), InvalidArgument);
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, AllReduceDict, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace ranks::testing
