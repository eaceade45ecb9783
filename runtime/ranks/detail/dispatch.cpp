#include "ranks/detail/dispatch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ranks/capabilities.hpp"
#include "ranks/detail/debug_check.hpp"
#include "ranks/detail/foreign_call.hpp"
#include "ranks/detail/rejected_op.hpp"
#include "ranks/errors.hpp"
#include "ranks/group.hpp"

namespace ranks::detail {

namespace {

// The errors are built out of line, so that the frames of the two functions every op calls stay
// small: a simulated rank's stack lines are what a 16,384-rank run misses the cache on.
[[noreturn, gnu::noinline]] void throw_not_a_member(const GroupImpl& impl, OpKind op,
                                                    const std::source_location& where) {
  throw Rejection<InvalidArgument>(
      fmt::format("{} at {}: this rank (global rank {}) is not a member of group '{}' (members {})",
                  op_name(op), where_str(where), current().rank, impl.spec.name,
                  fmt::join(impl.spec.global_ranks(), ", ")),
      RejectedOp{op, {}, impl.spec.name, -1, where});
}

[[gnu::noinline]] void reject_if_unsupported(const GroupImpl& group, const OpRequest& request,
                                             const std::source_location& where) {
  if (auto why = group.capabilities->why_unsupported(request)) {
    const bool p2p = is_point_to_point(request.kind);
    throw Rejection<Unsupported>(
        fmt::format("{}: {}", Call{request.kind, &group, where}.describe(), *why),
        RejectedOp{request.kind,
                   {},
                   group.spec.name,
                   static_cast<int64_t>(p2p ? group.next_p2p_seq : group.next_collective_seq),
                   where});
  }
}

}  // namespace

GroupImpl* resolve(const Group& group, OpKind op, const std::source_location& where) {
  check_foreign_call(op_name(op), where);
  if (group.is_default()) {
    Context& context = current();
    return context.initialized ? context.world.get() : nullptr;
  }
  GroupImpl* impl = group.impl().get();
  if (impl->backend == nullptr) throw_not_a_member(*impl, op, where);
  return impl;
}

void prepare_dispatch(GroupImpl& group, OpRequest& request, const std::source_location& where) {
  if (group.capabilities != nullptr) {
    if (!group.capabilities->allows(request)) reject_if_unsupported(group, request, where);
    // allows() has checked that the op's tensors share one device type: the first says it.
    const TensorList& tensors = request.inputs.empty() ? request.outputs : request.inputs;
    if (group.capabilities->one_gpu_per_rank && !tensors.empty() &&
        tensors.front().device().type == Device::Type::CUDA) {
      check_own_gpu({request.kind, &group, where}, request.inputs, request.outputs,
                    current().local_rank);
    }
  }
  request.where = where;
  request.api = group.object_api;
  if (debug_detail() && !is_point_to_point(request.kind) && current().clock == nullptr) {
    verify_same_call(group, request);  // the simulator always compares; real runs on request
  }
  request.seq =
      is_point_to_point(request.kind) ? group.next_p2p_seq++ : group.next_collective_seq++;
  request.timeout = group.timeout;
}

}  // namespace ranks::detail
