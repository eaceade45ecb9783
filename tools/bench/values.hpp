#pragma once
// The bench's data and its check: what each rank puts in, and what each op must give back,
// computed here from the inputs' formula rather than by any library kernel (the #wrong column).

#include <cmath>
#include <cstdint>

#include "ranks/reduce_op.hpp"
#include "ranks/tensor.hpp"

namespace ranks::bench {

// Element `index` of rank `rank`'s input: small integers, so sums over thousands of ranks stay
// exact in float32 and products stay small (mostly 1s, some 2s).
double input_value(int rank, int64_t index, ReduceOp op);
// What reducing input_value(r, index) over ranks 0..n-1 gives in dtype: exact arithmetic,
// wrapped to the width of an integer dtype (an integer mean divides that sum, truncating); a
// float mean is divided by n and the check allows the dtype's rounding.
double reduced_value(int n, int64_t index, ReduceOp op, DType dtype = DType::Float64);

// Sets t[i] = input_value(rank, first + i).
void fill(Tensor& t, int rank, int64_t first, ReduceOp op);
// Elements of t that differ from expected(first + i) by more than the dtype's rounding
// (integers: truncated toward zero, as ranks' mean does).
template <class Expected>
int64_t count_wrong(const Tensor& t, int64_t first, Expected expected);

// Element access as double, whatever the dtype.
double get_element(const Tensor& t, int64_t i);
double tolerance(DType dtype, double expected);

template <class Expected>
int64_t count_wrong(const Tensor& t, int64_t first, Expected expected) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double want = expected(first + i);
    if (!is_floating(t.dtype())) want = std::trunc(want);
    if (std::abs(get_element(t, i) - want) > tolerance(t.dtype(), want)) ++wrong;
  }
  return wrong;
}

}  // namespace ranks::bench
