// Every op as one of MPI's non-blocking calls, polled by its Work (the blocking API's collectives
// take blocking.hpp's path instead), from the op's one description (plan.hpp). Results land in
// the caller's tensors directly where MPI allows (in place), else in staging memory copied out by
// the work's last step.

#include "ranks/collectives.hpp"

#include <fmt/format.h>

#include "ranks/backends/mpi/blocking.hpp"
#include "ranks/backends/mpi/plan.hpp"
#include "ranks/backends/mpi/requests.hpp"
#include "ranks/backends/mpi/work.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::mpi {

namespace {

// The op's description is formatted only when MPI fails: posting stays cheap.
void ok(const MpiWork& w, int rc, const char* call) {
  if (rc != MPI_SUCCESS) check_mpi(rc, call, w.describe());
}

// The step that checks a receive's size against its tensor, once MPI has its status.
void add_received_check(MpiWork& w, int count, MPI_Datatype type) {
  w.steps.emplace_back([count, type](MpiWork& work, const MPI_Status& status) {
    work.source_rank = status.MPI_SOURCE;
    int got = 0;
    {
      auto lock = lock_mpi();
      MPI_Get_count(&status, type, &got);
    }
    if (got != count) {
      throw Mismatch(
          fmt::format("mismatched point-to-point: {}: rank {} sent {} elements (tag {}) "
                      "but this rank receives into {}",
                      work.describe(), work.comm->global_rank(status.MPI_SOURCE), got, work.op.tag,
                      work.op.outputs[0].describe()));
    }
  });
}

// Posts the op's first MPI call (plan.hpp); what follows it (a second call, copies out of
// staging, checks) are steps.
void post(MpiWork& w) {
  auto lock = lock_mpi();
  const OpPlan plan = plan_op(*w.comm, w.op, w.staging);
  ok(w, issue(plan.call, w.comm->handle, &w.request), plan.call.name(true));
  switch (plan.after.then) {
    case Then::Done:
      return;
    case Then::CheckReceived:
      return add_received_check(w, plan.call.count, plan.call.type);
    case Then::MoveAllToAll:
      w.steps.emplace_back([](MpiWork& work, const MPI_Status&) {
        const MpiCall moves = plan_moves_call(work.op, work.staging);
        auto inner = lock_mpi();
        ok(work, issue(moves, work.comm->handle, &work.request), moves.name(true));
      });
      break;
    default:
      break;
  }
  w.steps.emplace_back([after = plan.after](MpiWork& work, const MPI_Status&) {
    finish(*work.comm, work.op, work.staging, after);
  });
}

}  // namespace

Work start(const std::shared_ptr<Comm>& comm, OpRequest&& request) {
  check_request(*comm, request);
  if (!is_point_to_point(request.kind)) {
    if (std::string why = comm->broken(); !why.empty()) {
      throw BackendError(ranks::detail::failed_earlier_text(
          describe(*comm, request), comm->name,
          fmt::format("{} ({})", why, capabilities("mpi").after_timeout_note)));
    }
  }
  if (runs_blocking(request)) return run_blocking(comm, std::move(request));
  auto work = std::make_shared<MpiWork>(comm, std::move(request));
  post(*work);
  work->update_in_mpi();
  comm->track(work);
  return Work(std::move(work));
}

}  // namespace ranks::backends::mpi
