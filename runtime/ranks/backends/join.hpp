#pragma once
// What the backends that rendezvous through a store (gloo, nccl) do before their library's own
// bootstrap: every member announces itself, so that a rank that never comes is named instead of
// surfacing as a timeout deep inside gloo or NCCL.

#include <chrono>
#include <string>

#include "ranks/backend.hpp"
#include "ranks/store.hpp"

namespace ranks::backends {

// Sets "joined/<group rank>" and waits up to `timeout` for every member's key. RendezvousError
// otherwise: "<who>: 2/3 ranks joined within 30 s; missing: 2 (<the store's error>)", the
// missing members named by their global ranks.
void join_members(Store& store, const GroupSpec& spec, std::chrono::milliseconds timeout,
                  const std::string& who);

}  // namespace ranks::backends
