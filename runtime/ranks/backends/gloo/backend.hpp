#pragma once
// The gloo backend (Debian's libgloo, TCP transport): one communicator per group, each a gloo
// context connected as a full mesh, with rendezvous through the job's ranks::Store.
//
// Network address. Each process opens one gloo TCP device, shared by all its communicators, on
//   1. the interface named by RANKS_GLOO_IFACE (or torch's GLOO_SOCKET_IFNAME), else
//   2. the address this host's name resolves to, when this host can bind it (so ranks on other
//      nodes can reach it), else
//   3. 127.0.0.1 (a single-node job still works when the host name does not resolve).
//
// Failure. A gloo context cannot recover from a broken connection or a timeout, so the first
// one ends the communicator: the op that saw it fails with RankFailure (a peer's connection
// closed: it died, or gave up on the group after an error of its own) or Timeout, every pending
// and later op of that group fails at once with the same kind of error, and the connections are
// closed so that the peers learn about it now rather than at their own deadline. Because gloo
// writes with writev, create_world sets SIGPIPE to ignored when it has the default action (which
// would kill a rank that writes to a dead peer before gloo can report it).

#include <memory>

#include "ranks/backend.hpp"
#include "ranks/backends/registry.hpp"

namespace ranks::backends::gloo {

// The world communicator of this process: setup.rank of setup.world_size, rendezvous through
// setup.store (required), every blocking step bounded by setup.timeout (30 min when zero).
// Throws RendezvousError naming the ranks that did not join, or when the mesh cannot connect.
std::unique_ptr<Backend> create_world(const WorldSetup& setup);

}  // namespace ranks::backends::gloo
