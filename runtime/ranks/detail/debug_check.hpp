#pragma once
// RANKS_DEBUG=detail for real runs: before each collective the members exchange fingerprints of
// their calls and raise Mismatch with the field-by-field difference, instead of hanging or
// reducing garbage: the check the simulator always makes. Torch's TORCH_DISTRIBUTED_DEBUG=DETAIL
// does the same through a helper process group.

#include "ranks/context.hpp"

namespace ranks::detail {

// Whether RANKS_DEBUG is "detail" (read once per process: it is a launch setting).
bool debug_detail();

// Exchanges request's fingerprint with the group's other members through the group's own
// backend (an all_gather of a fixed-size record, so it needs no store and works under mpirun),
// and throws Mismatch on every member when any two differ. Takes one collective sequence number.
void verify_same_call(GroupImpl& group, const OpRequest& request);

}  // namespace ranks::detail
