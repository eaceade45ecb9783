// What a matched op costs on the virtual clock: the op's size as nccl-tests counts it, the link
// class its ranks talk over (ranks_per_node gives the nodes), and the cost model's price.

#include <cmath>

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

Nanos to_nanos(double seconds) { return Nanos(std::llround(seconds * 1e9)); }

}  // namespace

Nanos collective_cost(const Engine& engine, const SimGroup& group, const OpRequest& first) {
  const int n = group.size();
  // Members are sorted and nodes hold consecutive ranks, so the ends tell whether it spans nodes.
  const LinkClass link =
      engine.node_of(group.global_rank(0)) == engine.node_of(group.global_rank(n - 1))
          ? LinkClass::Intra
          : LinkClass::Inter;
  return to_nanos(
      predict(engine.cost_model(), op_family(first.kind), n, op_bytes(first, n), link).seconds);
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
