#pragma once
// The ops `ranks bench` measures, as data: how a size becomes element counts, the nccl-tests
// bus-bandwidth factor, and which API op a backend's capability table must list.

#include <optional>
#include <span>
#include <string_view>

#include "ranks/op.hpp"

namespace ranks::bench {

struct BenchOp {
  std::string_view name;  // as on the command line and in the JSON lines
  OpKind kind;            // what the backend's capability table must support
  // nccl-tests' size convention: true when the size is the whole array spread over the ranks
  // (all_gather's output, reduce_scatter's input, all_to_all's send buffer), so each rank's
  // piece holds size / n bytes; false when every rank holds the whole size.
  bool size_is_whole_array;
  bool uses_reduce_op;
};

std::span<const BenchOp> bench_ops();  // all_reduce, all_gather, reduce_scatter, broadcast, ...
const BenchOp* find_bench_op(std::string_view name);

// busbw = algbw * factor (nccl-tests doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
// reduce_scatter, all_to_all (n-1)/n; broadcast, reduce, sendrecv 1.
double busbw_factor(std::string_view op, int n);

// Elements in each rank's piece for a requested size (rounded down, as nccl-tests does) and the
// size actually measured.
struct OpShape {
  int64_t piece_count = 0;  // elements per rank (per peer for the whole-array ops)
  size_t bytes = 0;         // the measured size in nccl-tests' convention
};
OpShape shape_for(const BenchOp&, size_t requested_bytes, size_t element_size, int n);

}  // namespace ranks::bench
