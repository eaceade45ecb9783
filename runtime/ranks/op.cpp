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

}  // namespace ranks
