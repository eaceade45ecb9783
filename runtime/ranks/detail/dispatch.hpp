#pragma once
// The one path every operation takes from the API to a backend: group resolution, sequence
// numbers, deadlines and call sites are assigned here, for every backend alike.

#include "ranks/detail/check.hpp"
#include "ranks/group.hpp"

namespace ranks::detail {

// The group an op runs on, or null when not distributed. Throws InvalidArgument when this rank
// is not a member of group.
GroupImpl* resolve(const Group& group, OpKind op, const std::source_location& where);

Work dispatch(GroupImpl& group, OpRequest&& request, const std::source_location& where);

}  // namespace ranks::detail
