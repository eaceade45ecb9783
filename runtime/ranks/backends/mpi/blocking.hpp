#pragma once
// Collectives of the blocking API as MPI's blocking calls, on the caller's thread.
//
// Open MPI runs a blocking collective with its tuned algorithms (coll/tuned) and a non-blocking
// one with libnbc's, which on 2 ranks cost 2-7x more from 8 B to 512 KiB (reports/
// raw_vs_ranks.md). So a request marked blocking (OpRequest::blocking: the caller waits at once)
// runs as MPI_Allreduce etc., and the deadline is kept by the watchdog (watchdog.hpp), which ends
// the process when a call overstays it; a Timeout can then no longer be caught, only read. Async
// ops (*_async, Work), point-to-point ops and processes without MPI_THREAD_MULTIPLE keep the
// non-blocking, polled path (collectives.cpp), whose Timeout is a catchable exception.

#include <memory>

#include "ranks/backends/mpi/work.hpp"

namespace ranks::backends::mpi {

// Whether request runs here rather than as a polled non-blocking op.
bool runs_blocking(const OpRequest& request);

// Runs the collective on this thread; returns once MPI has finished it. Throws what MPI reports
// (BackendError), Mismatch for new_group and all_to_all disagreements; a call past its deadline
// does not return (see watchdog.hpp). The request has passed check_request.
Work run_blocking(const std::shared_ptr<Comm>& comm, OpRequest&& request);

}  // namespace ranks::backends::mpi
