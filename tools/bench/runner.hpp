#pragma once
// Measures one op at one size on the calling rank (every rank calls it, in the same order):
// a checked run on fresh data, warm-up runs, then timed runs between a barrier and the clock.
// ranks::now() is the virtual clock under `ranks sim`, so the same loop reports the cost
// model's prediction there.

#include <cstdint>
#include <string_view>

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
  // nccl-tests' in-place: all_gather's input is its own slice of the output buffer and
  // reduce_scatter's output its own slice of the input buffer. all_reduce, broadcast and reduce
  // are in place whatever this says (the API has no separate output for them); all_to_all and
  // sendrecv have no in-place form here.
  bool in_place = false;
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

// Whether op runs in place under config (always for all_reduce, broadcast and reduce), and
// whether it can run as config asks at all ("" when it can; else why not).
bool runs_in_place(const BenchOp& op, const RunConfig& config);
std::string_view in_place_unsupported(const BenchOp& op, const RunConfig& config);

}  // namespace ranks::bench
