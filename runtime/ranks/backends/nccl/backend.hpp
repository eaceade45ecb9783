#pragma once
// The nccl backend (CUDA tensors over NCCL >= 2.18): one NCCL communicator per group.
//
// Set-up. create_world binds this process to cuda:<local rank> (LOCAL_RANK, or the rank among
// the ranks on this host), gets the unique id through the job's store (rank 0 makes it) and
// creates the world communicator at once, not at the first op. Sub-groups are split from the
// world with ncclCommSplit (every world rank takes part; non-members with NCCL_SPLIT_NOCOLOR), so
// no further id exchange. Communicators are non-blocking (ncclConfig_t::blocking = 0): every NCCL
// call returns at once and is polled against the op's deadline, so a missing peer at init, split
// or launch ends in a Timeout rather than a hang.
//
// Streams. Each communicator has its own CUDA stream. An op first makes that stream wait for the
// caller's stream (the legacy default stream: ranks has no stream API, and cudaMemcpy, which
// Tensor uses, runs there), runs there, and ends with a CUDA event; Work::wait() blocks the CPU
// until the event has fired, and later work on the default stream is ordered after it.
//
// CPU tensors (MMEngine's rule, for the ops the capability table marks "staged"): copied to a
// temporary buffer on the communicator's device, reduced there, and copied back before the
// op's event fires.
//
// Failure. A process-wide watchdog thread (watchdog.hpp) polls every op in flight: an NCCL
// asynchronous error fails the group with BackendError (ncclGetErrorString and
// ncclGetLastError), and an op past its deadline fails it with Timeout in the simulator's message
// shape plus the flight recorder's entries; then the communicator is aborted, and every pending
// and later op of the group raises the same kind of error. RANKS_NCCL_ON_TIMEOUT=exit prints the
// report and ends the process instead of calling ncclCommAbort, which can itself hang.

#include <memory>

#include "ranks/backend.hpp"
#include "ranks/backends/registry.hpp"

namespace ranks::backends::nccl {

// The world communicator of this process: setup.rank of setup.world_size on cuda:setup.local_rank,
// the unique id through setup.store (required). Unsupported when this process has no CUDA device
// (or none at that index); Timeout or RendezvousError when the ranks do not all arrive within
// setup.timeout; BackendError when NCCL refuses.
std::unique_ptr<Backend> create_world(const WorldSetup& setup);

}  // namespace ranks::backends::nccl
