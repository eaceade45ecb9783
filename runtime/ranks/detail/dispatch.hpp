#pragma once
// The one path every operation takes from the API to a backend: group resolution, sequence
// numbers, deadlines and call sites are assigned here, for every backend alike.

#include "ranks/backend.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/group.hpp"

namespace ranks::detail {

// The group an op runs on, or null when not distributed. Throws InvalidArgument when this rank
// is not a member of group.
GroupImpl* resolve(const Group& group, OpKind op, const std::source_location& where);

// Checks the op against the group's backend and stamps it (call site, sequence number,
// timeout) for dispatch().
void prepare_dispatch(GroupImpl& group, OpRequest& request, const std::source_location& where);

// Inline, so that the backend's submit is called from the op's own frame: a frame of its own
// here would put every op's deepest calls 96 bytes further down the stack, and a simulated
// rank's stack lines are what a 16,384-rank run waits on (measured: reports/simulator.md).
inline Work dispatch(GroupImpl& group, OpRequest&& request, const std::source_location& where) {
  prepare_dispatch(group, request, where);
  return group.backend->submit(std::move(request));
}

}  // namespace ranks::detail
