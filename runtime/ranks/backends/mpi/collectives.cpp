// Every op as one of MPI's non-blocking calls, polled by its Work (the blocking API's collectives
// take blocking.hpp's path instead). Results land in the caller's tensors directly where MPI
// allows (in place), else in staging memory copied out by the work's last step.

#include "ranks/collectives.hpp"

#include <fmt/format.h>

#include "ranks/backends/mpi/blocking.hpp"
#include "ranks/backends/mpi/requests.hpp"
#include "ranks/backends/mpi/types.hpp"
#include "ranks/backends/mpi/work.hpp"
#include "ranks/detail/adjacent.hpp"
#include "ranks/detail/group_agreement.hpp"
#include "ranks/detail/reduce.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::mpi {

namespace {

// The op's description is formatted only when MPI fails: posting stays cheap.
void ok(const MpiWork& w, int rc, const char* call) {
  if (rc != MPI_SUCCESS) check_mpi(rc, call, w.describe());
}

// Mean is a sum divided on the ranks that receive it.
void add_mean_step(MpiWork& w, size_t output) {
  if (w.op.reduce_op != ReduceOp::Mean) return;
  w.steps.emplace_back([output](MpiWork& work, const MPI_Status&) {
    Tensor& t = work.op.outputs[output];
    ranks::detail::divide_by(t.data_ptr(), t.numel(), t.dtype(), work.comm->size());
  });
}

// Copies staging slices of `each` bytes into the outputs, in group-rank order.
void add_unstage_step(MpiWork& w, size_t each) {
  w.steps.emplace_back([each](MpiWork& work, const MPI_Status&) {
    for (size_t j = 0; j < work.op.outputs.size(); ++j) {
      copy_bytes(work.op.outputs[j].data_ptr(), work.recv_buffer.get() + j * each, each);
    }
  });
}

void post_new_group(MpiWork& w) {
  // This rank's hash, then every rank's, in one staging block.
  const auto n = static_cast<size_t>(w.comm->size());
  w.send_buffer = staging((n + 1) * sizeof(uint64_t));
  auto* words = reinterpret_cast<uint64_t*>(w.send_buffer.get());
  words[0] = w.op.extra;
  ok(w,
     MPI_Iallgather(words, 1, MPI_UINT64_T, words + 1, 1, MPI_UINT64_T, w.comm->handle, &w.request),
     "MPI_Iallgather");
  w.steps.emplace_back([](MpiWork& work, const MPI_Status&) {
    const auto* v = reinterpret_cast<const uint64_t*>(work.send_buffer.get());
    ranks::detail::check_group_agreement(
        work.describe(), v + 1, static_cast<size_t>(work.comm->size()), v[0], *work.comm->members);
  });
}

// all_to_all: the sizes first, then the moves (requests.hpp).
void post_all_to_all(MpiWork& w) {
  w.plan = std::make_shared<AllToAllPlan>(static_cast<size_t>(w.comm->size()));
  describe_sizes(*w.comm, w.op, *w.plan);
  ok(w,
     MPI_Ialltoall(w.plan->mine(), 2, MPI_INT, w.plan->theirs(), 2, MPI_INT, w.comm->handle,
                   &w.request),
     "MPI_Ialltoall");
  w.steps.emplace_back([](MpiWork& work, const MPI_Status&) {
    AllToAllPlan& plan = *work.plan;
    plan_moves(work.op, plan, work.send_buffer, work.recv_buffer);
    MPI_Datatype type = datatype(work.op.inputs[0].dtype());
    auto lock = lock_mpi();
    ok(work,
       MPI_Ialltoallv(work.send_buffer.get(), plan.send_counts(), plan.send_displs(), type,
                      work.recv_buffer.get(), plan.recv_counts(), plan.recv_displs(), type,
                      work.comm->handle, &work.request),
       "MPI_Ialltoallv");
  });
  w.steps.emplace_back([](MpiWork& work, const MPI_Status&) {
    finish_moves(*work.comm, work.op, *work.plan, work.recv_buffer.get(), work.describe());
  });
}

void post_recv(MpiWork& w) {
  Tensor& t = w.op.outputs[0];
  const int count = count_of(*w.comm, w.op, t);
  MPI_Datatype type = datatype(t.dtype());
  ok(w,
     MPI_Irecv(t.data_ptr(), count, type, w.op.root == any_source ? MPI_ANY_SOURCE : w.op.root,
               w.op.tag, w.comm->handle, &w.request),
     "MPI_Irecv");
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
                      work.op.outputs[0].str()));
    }
  });
}

// Posts the op's first MPI call; later ones (and copies out of staging) are steps.
void post(MpiWork& w) {
  OpRequest& r = w.op;
  Comm& comm = *w.comm;
  const bool is_root = r.root == comm.rank;
  const MPI_Comm c = comm.handle;
  auto lock = lock_mpi();
  switch (r.kind) {
    case OpKind::Barrier:
      return ok(w, MPI_Ibarrier(c, &w.request), "MPI_Ibarrier");
    case OpKind::NewGroup:
      return post_new_group(w);
    case OpKind::AllReduce: {
      Tensor& t = in_place(r);
      ok(w,
         MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), count_of(comm, r, t), datatype(t.dtype()),
                        reduction(r.reduce_op, t.dtype()), c, &w.request),
         "MPI_Iallreduce");
      return add_mean_step(w, 0);
    }
    case OpKind::Broadcast: {
      // MPI's root only reads its buffer: the src is never written.
      Tensor& t = in_place(r);
      return ok(w,
                MPI_Ibcast(t.data_ptr(), count_of(comm, r, t), datatype(t.dtype()), r.root, c,
                           &w.request),
                "MPI_Ibcast");
    }
    case OpKind::Reduce: {
      // Only the root receives; the others' buffers are send buffers and stay as they were.
      Tensor& t = in_place(r);
      ok(w,
         MPI_Ireduce(is_root ? MPI_IN_PLACE : t.data_ptr(), is_root ? t.data_ptr() : nullptr,
                     count_of(comm, r, t), datatype(t.dtype()), reduction(r.reduce_op, t.dtype()),
                     r.root, c, &w.request),
         "MPI_Ireduce");
      if (is_root) add_mean_step(w, 0);
      return;
    }
    case OpKind::AllGather:
    case OpKind::Gather: {
      const Tensor& in = r.inputs[0];
      const int count = count_of(comm, r, in);
      MPI_Datatype type = datatype(in.dtype());
      const bool receives = r.kind == OpKind::AllGather || is_root;
      void* at = nullptr;  // the outputs when they lie back to back, else staging
      if (receives) {
        count_of(comm, r, in.numel() * comm.size());
        at = ranks::detail::adjacent_outputs(r.outputs, in);
        if (at == nullptr) {
          w.recv_buffer = staging(in.nbytes() * static_cast<size_t>(comm.size()));
          at = w.recv_buffer.get();
          add_unstage_step(w, in.nbytes());
        }
      }
      if (r.kind == OpKind::AllGather) {
        return ok(w, MPI_Iallgather(in.data_ptr(), count, type, at, count, type, c, &w.request),
                  "MPI_Iallgather");
      }
      return ok(w, MPI_Igather(in.data_ptr(), count, type, at, count, type, r.root, c, &w.request),
                "MPI_Igather");
    }
    case OpKind::Scatter:
    case OpKind::ReduceScatter: {
      Tensor& out = r.outputs[0];
      const int count = count_of(comm, r, out);
      MPI_Datatype type = datatype(out.dtype());
      if (!r.inputs.empty()) {
        count_of(comm, r, out.numel() * comm.size());
        w.send_buffer = staging(out.nbytes() * r.inputs.size());
        for (size_t j = 0; j < r.inputs.size(); ++j) {
          copy_bytes(w.send_buffer.get() + j * out.nbytes(), r.inputs[j].data_ptr(), out.nbytes());
        }
      }
      if (r.kind == OpKind::Scatter) {
        return ok(w,
                  MPI_Iscatter(is_root ? w.send_buffer.get() : nullptr, count, type, out.data_ptr(),
                               count, type, r.root, c, &w.request),
                  "MPI_Iscatter");
      }
      ok(w,
         MPI_Ireduce_scatter_block(w.send_buffer.get(), out.data_ptr(), count, type,
                                   reduction(r.reduce_op, out.dtype()), c, &w.request),
         "MPI_Ireduce_scatter_block");
      return add_mean_step(w, 0);
    }
    case OpKind::AllToAll:
      return post_all_to_all(w);
    case OpKind::Send: {
      const Tensor& t = r.inputs[0];
      return ok(w,
                MPI_Isend(t.data_ptr(), count_of(comm, r, t), datatype(t.dtype()), r.root, r.tag, c,
                          &w.request),
                "MPI_Isend");
    }
    case OpKind::Recv:
      return post_recv(w);
  }
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
