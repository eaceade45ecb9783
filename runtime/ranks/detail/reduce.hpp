#pragma once
// Element-wise reduction kernels: the exact arithmetic the simulator (and any backend that
// reduces on the host) uses, so every path agrees bit for bit.

#include <cstdint>

#include "ranks/dtype.hpp"
#include "ranks/reduce_op.hpp"

namespace ranks::detail {

// acc[i] = acc[i] op src[i] for i in [0, count). Mean accumulates like Sum (finish with
// divide_by). Integers wrap on overflow; 16-bit floats compute in float and round back; Min/Max
// on floats return NaN when either side is NaN; Bool uses logical or (Sum, Max, BOr), and
// (Product, Min, BAnd) and xor (BXor). acc and src must be the same buffer or not overlap.
// Throws InvalidArgument for a bitwise op on a floating dtype or a negative count.
void reduce_into(void* acc, const void* src, int64_t count, DType dtype, ReduceOp op);

// reduce_into's kernel for one dtype and op, chosen once where many buffers are folded alike (a
// simulated collective folds every rank's input with it). count must be >= 0.
using Reducer = void (*)(void* acc, const void* src, int64_t count);
// Throws InvalidArgument for a bitwise op on a floating dtype.
Reducer reducer_for(DType dtype, ReduceOp op);

// The finish of Mean: acc[i] /= divisor. Integers truncate toward zero (MMEngine's mean after
// its float cast); 16-bit floats divide in float and round back; Bool is left as is (true when
// any rank was true). Throws InvalidArgument for divisor <= 0 or a negative count.
void divide_by(void* acc, int64_t count, DType dtype, int64_t divisor);

}  // namespace ranks::detail
