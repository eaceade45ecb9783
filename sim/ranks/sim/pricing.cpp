// What a matched op costs on the virtual clock: the op's size as nccl-tests counts it, the link
// class its ranks talk over (ranks_per_node gives the nodes), and the cost model's price.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ranks/errors.hpp"
#include "ranks/sim/comm.hpp"

namespace ranks::sim::detail {

namespace {

size_t total_bytes(const TensorList& tensors) {
  size_t bytes = 0;
  for (const Tensor& t : tensors) bytes += t.nbytes();
  return bytes;
}

// nccl-tests' size: the buffer for all_reduce, broadcast and reduce; the whole gathered (or
// scattered) array for all_gather, gather, reduce_scatter and scatter; everything one rank
// sends for all_to_all.
double op_bytes(const OpRequest& r, int n) {
  const double per_rank =
      r.described_tensor() ? static_cast<double>(r.described_tensor()->nbytes()) : 0.0;
  switch (r.kind) {
    case OpKind::AllGather:
    case OpKind::Gather:
    case OpKind::Scatter:
    case OpKind::ReduceScatter:
      return per_rank * n;
    case OpKind::AllToAll:
      return static_cast<double>(total_bytes(r.inputs));
    case OpKind::Barrier:
    case OpKind::NewGroup:
      return 0;
    default:
      return per_rank;
  }
}

// The virtual clock counts 64-bit nanoseconds (292 years); a price beyond it is a model error,
// not a time (llround would make it 0 or negative).
Nanos to_nanos(double seconds) {
  constexpr double most = 9.2e18;
  if (!(seconds * 1e9 < most)) {
    throw InvalidArgument(fmt::format(
        "cost model prices one op at {:g} s, beyond the virtual clock (292 years): check the "
        "model's alpha and beta",
        seconds));
  }
  return Nanos(std::llround(seconds * 1e9));
}

}  // namespace

// The nodes a group spans and its members on the node where it has fewest (members are sorted,
// nodes hold consecutive ranks).
struct NodeSpan {
  int nodes = 0;
  int fewest = 0;
};

NodeSpan node_span(const Engine& engine, const SimGroup& group) {
  NodeSpan span{0, group.size()};
  int run = 0, node = -1;
  for (int i = 0; i < group.size(); ++i) {
    const int here = engine.node_of(group.global_rank(i));
    if (here != node) {
      if (run > 0) span.fewest = std::min(span.fewest, run);
      ++span.nodes;
      node = here;
      run = 0;
    }
    ++run;
  }
  span.fewest = std::min(span.fewest, run);
  return span;
}

Nanos collective_cost(const Engine& engine, const SimGroup& group, const OpRequest& first) {
  const int n = group.size();
  // Members are sorted and nodes hold consecutive ranks, so the ends tell whether it spans nodes.
  const LinkClass link =
      engine.node_of(group.global_rank(0)) == engine.node_of(group.global_rank(n - 1))
          ? LinkClass::Intra
          : LinkClass::Inter;
  const sim::CostModel& model = engine.cost_model();
  // Only a model with rails or NCCL's layout needs the span (a pass over the members, once per
  // collective).
  const NodeSpan span = link == LinkClass::Inter && (model.inter_rails > 1 || model.nccl)
                            ? node_span(engine, group)
                            : NodeSpan{1, 1};
  return to_nanos(predict(model, op_family(first.kind), n, op_bytes(first, n), link, span.fewest,
                          span.nodes)
                      .seconds);
}

Nanos message_cost(const Engine& engine, const SimGroup& group, int src, int dst, size_t bytes) {
  const LinkClass link =
      engine.node_of(group.global_rank(src)) == engine.node_of(group.global_rank(dst))
          ? LinkClass::Intra
          : LinkClass::Inter;
  // The group's size picks a calibrated model's fit for that world size (one message is one
  // step whatever n is, but measured figures at n ranks carry their oversubscription).
  return to_nanos(
      predict(engine.cost_model(), "sendrecv", group.size(), static_cast<double>(bytes), link)
          .seconds);
}

}  // namespace ranks::sim::detail
