#include "bench_ops.hpp"

#include <algorithm>
#include <array>

namespace ranks::bench {

namespace {

constexpr std::array ops = {
    BenchOp{"all_reduce", OpKind::AllReduce, false, true},
    BenchOp{"all_gather", OpKind::AllGather, true, false},
    BenchOp{"reduce_scatter", OpKind::ReduceScatter, true, true},
    BenchOp{"broadcast", OpKind::Broadcast, false, false},
    BenchOp{"reduce", OpKind::Reduce, false, true},
    BenchOp{"all_to_all", OpKind::AllToAll, true, false},
    BenchOp{"sendrecv", OpKind::Send, false, false},
};

}  // namespace

std::span<const BenchOp> bench_ops() { return ops; }

const BenchOp* find_bench_op(std::string_view name) {
  auto it =
      std::find_if(ops.begin(), ops.end(), [&](const BenchOp& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

double busbw_factor(std::string_view op, int n) {
  const double nn = n;
  if (op == "all_reduce") return 2 * (nn - 1) / nn;
  if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") return (nn - 1) / nn;
  return 1;
}

OpShape shape_for(const BenchOp& op, size_t requested_bytes, size_t element_size, int n) {
  const size_t pieces = op.size_is_whole_array ? static_cast<size_t>(n) : 1;
  const size_t count = requested_bytes / element_size / pieces;
  return OpShape{static_cast<int64_t>(count), count * element_size * pieces};
}

}  // namespace ranks::bench
