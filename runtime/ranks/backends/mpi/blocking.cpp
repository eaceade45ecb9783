#include "ranks/backends/mpi/blocking.hpp"

#include "ranks/backends/mpi/plan.hpp"
#include "ranks/backends/mpi/watchdog.hpp"

namespace ranks::backends::mpi {

namespace {

// The op's description is formatted only when MPI fails: calls stay cheap.
void ok(const Comm& comm, const OpRequest& op, int rc, const MpiCall& call) {
  if (rc != MPI_SUCCESS) check_mpi(rc, call.name(false), describe(comm, op));
}

}  // namespace

bool runs_blocking(const OpRequest& request) {
  // Without MPI_THREAD_MULTIPLE every MPI call holds one lock: a blocking call would hold it for
  // as long as the peers take, and stall another thread's sends that a peer may be waiting for.
  return request.blocking && !is_point_to_point(request.kind) && thread_multiple();
}

Work run_blocking(const std::shared_ptr<Comm>& comm, OpRequest&& request) {
  const Watch watch(*comm, request, timeout_or(request, comm->default_timeout));
  Staging staging;
  const OpPlan plan = plan_op(*comm, request, staging);
  ok(*comm, request, issue(plan.call, comm->handle, nullptr), plan.call);
  if (plan.after.then == Then::MoveAllToAll) {
    const MpiCall moves = plan_moves_call(request, staging);
    ok(*comm, request, issue(moves, comm->handle, nullptr), moves);
  }
  finish(*comm, request, staging, plan.after);
  return Work{};  // done: the caller's wait() returns at once
}

}  // namespace ranks::backends::mpi
