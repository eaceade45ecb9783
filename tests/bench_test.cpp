// ranks-bench's pieces: nccl-tests' bus-bandwidth factors and size conventions, the size sweep,
// and the #wrong check, run on every backend this build has at small sizes.

#include <gtest/gtest.h>

#include "bench_ops.hpp"
#include "harness.hpp"
#include "report_lines.hpp"
#include "runner.hpp"
#include "sizes.hpp"
#include "values.hpp"

namespace ranks::testing {
namespace {

using bench::busbw_factor;

TEST(Bench, BusBandwidthFactorsAreNcclTests) {
  // doc/PERFORMANCE.md of nccl-tests, written out for n = 8: 2*7/8, 7/8, 1.
  EXPECT_DOUBLE_EQ(busbw_factor("all_reduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor("all_gather", 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor("reduce_scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor("all_to_all", 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor("reduce", 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor("sendrecv", 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor("all_reduce", 2), 1.0);
}

TEST(Bench, SizesFollowNcclTestsConventions) {
  const auto* gather = bench::find_bench_op("all_gather");
  const auto* reduce = bench::find_bench_op("all_reduce");
  ASSERT_TRUE(gather && reduce);
  // all_gather's size is the gathered array: 1 KiB of float32 over 4 ranks = 64 each.
  auto g = bench::shape_for(*gather, 1024, 4, 4);
  EXPECT_EQ(g.piece_count, 64);
  EXPECT_EQ(g.bytes, 1024u);
  // Rounded down to whole elements per rank: 1000 B over 3 ranks = 83 floats each.
  auto odd = bench::shape_for(*gather, 1000, 4, 3);
  EXPECT_EQ(odd.piece_count, 83);
  EXPECT_EQ(odd.bytes, 996u);
  EXPECT_EQ(bench::shape_for(*reduce, 1024, 4, 4).piece_count, 256);
}

TEST(Bench, SizeSweep) {
  EXPECT_EQ(bench::parse_size("256M"), 256u << 20);
  EXPECT_EQ(bench::parse_size("4K"), 4096u);
  EXPECT_EQ(bench::parse_size("8"), 8u);
  EXPECT_THROW(bench::parse_size("12Q"), InvalidArgument);
  EXPECT_THROW(bench::parse_size("99999999999999999999999"), InvalidArgument);
  EXPECT_THROW(bench::parse_size("2000000G"), InvalidArgument);
  EXPECT_EQ(bench::parse_size("1024G"), size_t{1} << 40);
  EXPECT_EQ(bench::size_sweep(8, 64, 2, 0), (std::vector<size_t>{8, 16, 32, 64}));
  EXPECT_EQ(bench::size_sweep(100, 400, 2, 100), (std::vector<size_t>{100, 200, 300, 400}));
  EXPECT_THROW(bench::size_sweep(0, 8, 2, 0), InvalidArgument);
  // A fraction grows large sizes but rounds a small one back to itself: refused, not an
  // endless sweep (4 x 1.1 = 4.4 -> 4).
  EXPECT_EQ(bench::size_sweep(64, 100, 1.5, 0), (std::vector<size_t>{64, 96}));
  EXPECT_THROW(bench::size_sweep(4, 64, 1.1, 0), InvalidArgument);
}

TEST(Bench, TheCheckCountsWrongElements) {
  auto t = Tensor::zeros({10}, DType::Float32);
  bench::fill(t, 3, 0, ReduceOp::Sum);
  auto mine = [](int64_t i) { return bench::input_value(3, i, ReduceOp::Sum); };
  EXPECT_EQ(bench::count_wrong(t, 0, mine), 0);
  t.data<float>()[4] += 1;
  t.data<float>()[7] = -5;
  EXPECT_EQ(bench::count_wrong(t, 0, mine), 2);
  // The expected sum, written out: (7r + 3i) mod 4 over r = 0..3 at i = 1 is 3 + 2 + 1 + 0.
  EXPECT_EQ(bench::reduced_value(4, 1, ReduceOp::Sum), 6);
}

// Integer reductions wrap as the dtype does (every backend's sum of int8 does); the expected
// values must too, or a correct run of 130 ranks would count wrong values.
TEST(Bench, ExpectedIntegerResultsWrapAsTheDtypeDoes) {
  const int n = 130;
  for (int64_t i = 0; i < 8; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r)
      sum += static_cast<int64_t>(bench::input_value(r, i, ReduceOp::Sum));
    ASSERT_GT(sum, 127);  // the case this test is about
    EXPECT_EQ(bench::reduced_value(n, i, ReduceOp::Sum, DType::Int8), static_cast<int8_t>(sum));
    EXPECT_EQ(bench::reduced_value(n, i, ReduceOp::Sum, DType::UInt8), static_cast<uint8_t>(sum));
    EXPECT_EQ(bench::reduced_value(n, i, ReduceOp::Mean, DType::Int8),
              static_cast<int8_t>(sum) / n);
    EXPECT_EQ(bench::reduced_value(n, i, ReduceOp::Sum, DType::Float32), sum);
  }
  // Products stay small at any world size: 1, 2 or 4.
  for (int world : {7, 64, 1000}) {
    for (int64_t i = 0; i < 14; ++i) {
      const double p = bench::reduced_value(world, i, ReduceOp::Product, DType::Int8);
      EXPECT_TRUE(p == 1 || p == 2 || p == 4) << world << " " << i << " " << p;
    }
  }
  // And the library agrees at that size.
  run_ranks(n, [] {
    bench::RunConfig config;
    config.dtype = DType::Int8;
    config.warmup = 0;
    config.iters = 1;
    for (const auto& op : bench::bench_ops()) {
      if (op.name != "all_reduce" && op.name != "reduce_scatter") continue;
      EXPECT_EQ(bench::measure(op, config, 1040).wrong, 0) << op.name;
    }
  });
}

TEST(Bench, WrongValuesFailTheRunAndTheFooterSaysSo) {
  EXPECT_NO_THROW(bench::fail_if_wrong(0));
  EXPECT_NO_THROW(bench::fail_if_wrong(-1));
  EXPECT_THROW(bench::fail_if_wrong(3), Error);
  auto footer = [](int64_t wrong) {
    char buffer[256] = {};
    std::FILE* out = fmemopen(buffer, sizeof(buffer), "w");
    bench::print_footer(out, wrong, 3.0, 2);
    std::fclose(out);
    return std::string(buffer);
  };
  EXPECT_EQ(footer(0), "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.500\n");
  EXPECT_TRUE(Contains(footer(7), "# Out of bounds values : 7 FAILED"));
  EXPECT_TRUE(Contains(footer(-1), "N/A (not checked)"));
}

class BenchOnBackend : public ::testing::TestWithParam<std::string> {};

// Every op the backend supports, a few small sizes and dtypes: #wrong is zero everywhere.
TEST_P(BenchOnBackend, EveryOpIsCorrectAtSmallSizes) {
  const std::string backend = GetParam();
  for (int n : {2, 4}) {
    run_on(backend, n, [backend] {
      const std::string name = is_simulated(backend) ? "mpi" : backend;
      for (const auto& op : bench::bench_ops()) {
        const OpSupport* row = capabilities(name).find(op.kind);
        if (row == nullptr || row->cpu == Support::No) continue;
        for (DType dtype : {DType::Float32, DType::Int32, DType::BFloat16}) {
          for (ReduceOp rop : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Mean}) {
            if (!op.uses_reduce_op && rop != ReduceOp::Sum) continue;
            for (size_t bytes : {64, 1000, 4096}) {
              // Separate buffers, and in place (nccl-tests' -I 1) where the op has that form.
              for (bool in_place : {false, true}) {
                bench::RunConfig config{dtype, rop, 1, 2, true, 1};
                config.in_place = in_place;
                if (!bench::in_place_unsupported(op, config).empty()) continue;
                bench::Measurement m = bench::measure(op, config, bytes);
                EXPECT_EQ(m.wrong, 0)
                    << op.name << " " << dtype_name(dtype) << " " << reduce_op_name(rop) << " "
                    << bytes << " B" << (in_place ? " in place" : "");
                EXPECT_GT(m.shape.piece_count, 0);
              }
            }
          }
        }
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BenchOnBackend, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace ranks::testing
