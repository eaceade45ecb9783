#pragma once
// Expected results of reductions, computed from first principles (int64 and double arithmetic),
// never with the library's own kernels.

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {

// The inputs a reduction test uses: products need mostly ones to stay in range.
inline int64_t reduce_input(ReduceOp op, int rank, int64_t i) {
  if (op == ReduceOp::Product) return (rank + i) % 5 == 0 ? 2 : 1;
  return small_value(rank, i);
}

// The reduction of element i over `ranks` (their values given by input(rank)) as stored in dtype.
template <class Input>
double expected_reduction(DType dtype, ReduceOp op, const std::vector<int>& ranks, Input input) {
  std::vector<int64_t> in;
  for (int r : ranks) in.push_back(static_cast<int64_t>(stored(dtype, input(r))));
  const bool is_bool = dtype == DType::Bool;
  int64_t acc = in[0];
  for (size_t k = 1; k < in.size(); ++k) {
    int64_t v = in[k];
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Mean:
        acc = is_bool ? (acc || v) : acc + v;
        break;
      case ReduceOp::Product:
        acc = is_bool ? (acc && v) : acc * v;
        break;
      case ReduceOp::Min:
        acc = std::min(acc, v);
        break;
      case ReduceOp::Max:
        acc = std::max(acc, v);
        break;
      case ReduceOp::BAnd:
        acc &= v;
        break;
      case ReduceOp::BOr:
        acc |= v;
        break;
      case ReduceOp::BXor:
        acc ^= v;
        break;
    }
  }
  if (op != ReduceOp::Mean || is_bool) return stored(dtype, acc);
  const auto n = static_cast<int64_t>(in.size());
  if (is_floating(dtype)) return static_cast<double>(acc) / static_cast<double>(n);
  // Integer mean: the sum wraps in the tensor's dtype first, then truncates toward zero.
  return static_cast<double>(static_cast<int64_t>(stored(dtype, acc)) / n);
}

// How far a stored result may be from the exact value: only means of floats round.
inline double tolerance(DType dtype, double expected) {
  double relative = dtype == DType::Float16    ? 1e-3
                    : dtype == DType::BFloat16 ? 8e-3
                    : dtype == DType::Float32  ? 1e-6
                                               : 1e-12;
  return is_floating(dtype) ? std::abs(expected) * relative : 0.0;
}

#define EXPECT_STORED_EQ(dtype, actual, expected) \
  EXPECT_NEAR(actual, expected, ::ranks::testing::tolerance(dtype, expected))

}  // namespace ranks::testing
