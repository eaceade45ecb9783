#pragma once
// Who else is stuck, and where, when an op of a real run times out. A timeout by itself says
// that some rank did not arrive, not which one nor what it does instead; in the simulator the
// engine sees every rank, in a real job only the ranks can say. So a rank whose op times out
// writes where it is stuck to the rendezvous store (key ranks/stuck/<global rank>), gives the
// ranks it waits on a short window to write theirs (they time out at about the same moment when
// they are stuck too), and its Timeout then names, for each: stuck in this op too, stuck in
// another op (which, where), or silent (busy outside ranks, or hung there). This is what torch's
// monitored barrier and flight-recorder analysis tell, at no cost before a timeout.

#include <chrono>
#include <string>

#include "ranks/backend.hpp"
#include "ranks/op.hpp"

namespace ranks::detail {

// How long a timed-out rank waits for the others' records: 2 s, or the op's own timeout when
// that is shorter, or RANKS_STUCK_WINDOW_MS.
std::chrono::milliseconds stuck_window(std::chrono::milliseconds op_timeout);

// Publishes this rank's record for `request` on `group` and describes the ranks it waits on,
// e.g. "; rank 1 timed out in this all_reduce too; rank 3 is stuck in recv from rank 0 (tag 0)
// on group 'world' p2p seq 0 at train.cpp:9; rank 2 wrote nothing within 2000 ms: not in
// this all_reduce; no op of ranks timed out there (busy elsewhere, in an op whose deadline is
// later, dead, or hung outside ranks)".
// Empty without a store. Never throws: it runs on the way to reporting a failure.
std::string stuck_peers(const GroupSpec& group, const OpRequest& request,
                        std::chrono::milliseconds window);

}  // namespace ranks::detail
