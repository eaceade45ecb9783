#pragma once
// Measures one op at one size on the calling rank (every rank calls it, in the same order):
// a checked run on fresh data, warm-up runs, then timed runs between a barrier and the clock.
// ranks::now() is the virtual clock under `ranks sim`, so the same loop reports the cost
// model's prediction there.

#include <cstdint>

#include "bench_ops.hpp"
#include "ranks/dtype.hpp"
#include "ranks/reduce_op.hpp"

namespace ranks::bench {

struct RunConfig {
  DType dtype = DType::Float32;
  ReduceOp reduce_op = ReduceOp::Sum;
  int warmup = 5;
  int iters = 20;
  bool check = true;
  // Timed blocks of `iters` runs; the fastest block is reported (timeit's rule: on a shared
  // machine interference only ever adds time). 1: nccl-tests' single block.
  int repeats = 1;
  // The simulator moves no data (ranks sim --shapes-only): buffers stay untouched, so a
  // thousand ranks of 1 GiB cost address space, not memory; nothing is checked.
  bool shapes_only = false;
};

struct Measurement {
  OpShape shape;
  double seconds = 0;  // per op: the slowest rank's average (the fastest of the repeats)
  int64_t wrong = 0;   // summed over ranks; -1 when not checked
};

Measurement measure(const BenchOp& op, const RunConfig& config, size_t requested_bytes);

}  // namespace ranks::bench
