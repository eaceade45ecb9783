#include "ranks/op.hpp"

namespace ranks {

std::string_view op_name(OpKind kind) {
  switch (kind) {
    case OpKind::Barrier:
      return "barrier";
    case OpKind::AllReduce:
      return "all_reduce";
    case OpKind::Broadcast:
      return "broadcast";
    case OpKind::Reduce:
      return "reduce";
    case OpKind::AllGather:
      return "all_gather";
    case OpKind::Gather:
      return "gather";
    case OpKind::Scatter:
      return "scatter";
    case OpKind::ReduceScatter:
      return "reduce_scatter";
    case OpKind::AllToAll:
      return "all_to_all";
    case OpKind::Send:
      return "send";
    case OpKind::Recv:
      return "recv";
    case OpKind::NewGroup:
      return "new_group";
  }
  return "unknown";
}

bool is_point_to_point(OpKind kind) { return kind == OpKind::Send || kind == OpKind::Recv; }

bool has_root(OpKind kind) {
  return kind == OpKind::Broadcast || kind == OpKind::Reduce || kind == OpKind::Gather ||
         kind == OpKind::Scatter;
}

bool uses_reduce_op(OpKind kind) {
  return kind == OpKind::AllReduce || kind == OpKind::Reduce || kind == OpKind::ReduceScatter;
}

const Tensor* OpRequest::described_tensor() const {
  // Scatter's root holds a list; every rank holds the output, so describe by the output.
  if (kind == OpKind::Scatter || kind == OpKind::ReduceScatter || kind == OpKind::Recv) {
    return outputs.empty() ? nullptr : &outputs.front();
  }
  if (!inputs.empty()) return &inputs.front();
  return outputs.empty() ? nullptr : &outputs.front();
}

}  // namespace ranks
