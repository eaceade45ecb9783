#include "ranks/backends/mpi/blocking.hpp"

#include <cstdint>
#include <vector>

#include "ranks/backends/mpi/requests.hpp"
#include "ranks/backends/mpi/types.hpp"
#include "ranks/backends/mpi/watchdog.hpp"
#include "ranks/detail/adjacent.hpp"
#include "ranks/detail/group_agreement.hpp"

namespace ranks::backends::mpi {

namespace {

struct Call {
  Comm& comm;
  OpRequest& op;

  // The op's description is formatted only when MPI fails: calls stay cheap.
  void ok(int rc, const char* name) const {
    if (rc != MPI_SUCCESS) check_mpi(rc, name, describe(comm, op));
  }
  bool is_root() const { return op.root == comm.rank; }
};

void new_group(const Call& call) {
  uint64_t mine = call.op.extra;
  std::vector<uint64_t> all(static_cast<size_t>(call.comm.size()));
  call.ok(MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, call.comm.handle),
          "MPI_Allgather");
  ranks::detail::check_group_agreement(describe(call.comm, call.op), all.data(), all.size(), mine,
                                       *call.comm.members);
}

void all_gather_or_gather(const Call& call) {
  OpRequest& r = call.op;
  const Tensor& in = r.inputs[0];
  const int count = count_of(call.comm, r, in);
  const MPI_Datatype type = datatype(in.dtype());
  const bool receives = r.kind == OpKind::AllGather || call.is_root();
  std::unique_ptr<std::byte[]> recv;  // staging, unless the outputs lie back to back
  void* at = nullptr;
  if (receives) {
    count_of(call.comm, r, in.numel() * call.comm.size());
    at = ranks::detail::adjacent_outputs(r.outputs, in);
    if (at == nullptr) {
      recv = staging(in.nbytes() * static_cast<size_t>(call.comm.size()));
      at = recv.get();
    }
  }
  if (r.kind == OpKind::AllGather) {
    call.ok(MPI_Allgather(in.data_ptr(), count, type, at, count, type, call.comm.handle),
            "MPI_Allgather");
  } else {
    call.ok(MPI_Gather(in.data_ptr(), count, type, at, count, type, r.root, call.comm.handle),
            "MPI_Gather");
  }
  if (recv == nullptr) return;
  for (size_t j = 0; j < r.outputs.size(); ++j) {
    copy_bytes(r.outputs[j].data_ptr(), recv.get() + j * in.nbytes(), in.nbytes());
  }
}

void scatter_or_reduce_scatter(const Call& call) {
  OpRequest& r = call.op;
  Tensor& out = r.outputs[0];
  const int count = count_of(call.comm, r, out);
  const MPI_Datatype type = datatype(out.dtype());
  std::unique_ptr<std::byte[]> send;
  if (!r.inputs.empty()) {
    count_of(call.comm, r, out.numel() * call.comm.size());
    send = staging(out.nbytes() * r.inputs.size());
    for (size_t j = 0; j < r.inputs.size(); ++j) {
      copy_bytes(send.get() + j * out.nbytes(), r.inputs[j].data_ptr(), out.nbytes());
    }
  }
  if (r.kind == OpKind::Scatter) {
    call.ok(
        MPI_Scatter(send.get(), count, type, out.data_ptr(), count, type, r.root, call.comm.handle),
        "MPI_Scatter");
    return;
  }
  call.ok(MPI_Reduce_scatter_block(send.get(), out.data_ptr(), count, type,
                                   reduction(r.reduce_op, out.dtype()), call.comm.handle),
          "MPI_Reduce_scatter_block");
  finish_mean(call.comm, r, out);
}

void all_to_all(const Call& call) {
  OpRequest& r = call.op;
  AllToAllPlan plan(static_cast<size_t>(call.comm.size()));
  describe_sizes(call.comm, r, plan);
  call.ok(MPI_Alltoall(plan.mine(), 2, MPI_INT, plan.theirs(), 2, MPI_INT, call.comm.handle),
          "MPI_Alltoall");
  std::unique_ptr<std::byte[]> send;
  std::unique_ptr<std::byte[]> recv;
  plan_moves(r, plan, send, recv);
  const MPI_Datatype type = datatype(r.inputs[0].dtype());
  call.ok(MPI_Alltoallv(send.get(), plan.send_counts(), plan.send_displs(), type, recv.get(),
                        plan.recv_counts(), plan.recv_displs(), type, call.comm.handle),
          "MPI_Alltoallv");
  finish_moves(call.comm, r, plan, recv.get(), describe(call.comm, r));
}

void run(const Call& call) {
  OpRequest& r = call.op;
  const MPI_Comm c = call.comm.handle;
  switch (r.kind) {
    case OpKind::Barrier:
      return call.ok(MPI_Barrier(c), "MPI_Barrier");
    case OpKind::NewGroup:
      return new_group(call);
    case OpKind::AllReduce: {
      Tensor& t = in_place(r);
      call.ok(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), count_of(call.comm, r, t),
                            datatype(t.dtype()), reduction(r.reduce_op, t.dtype()), c),
              "MPI_Allreduce");
      return finish_mean(call.comm, r, t);
    }
    case OpKind::Broadcast: {
      // MPI's root only reads its buffer: the src is never written.
      Tensor& t = in_place(r);
      return call.ok(
          MPI_Bcast(t.data_ptr(), count_of(call.comm, r, t), datatype(t.dtype()), r.root, c),
          "MPI_Bcast");
    }
    case OpKind::Reduce: {
      // Only the root receives; the others' buffers are send buffers and stay as they were.
      Tensor& t = in_place(r);
      const bool root = call.is_root();
      call.ok(MPI_Reduce(root ? MPI_IN_PLACE : t.data_ptr(), root ? t.data_ptr() : nullptr,
                         count_of(call.comm, r, t), datatype(t.dtype()),
                         reduction(r.reduce_op, t.dtype()), r.root, c),
              "MPI_Reduce");
      if (root) finish_mean(call.comm, r, t);
      return;
    }
    case OpKind::AllGather:
    case OpKind::Gather:
      return all_gather_or_gather(call);
    case OpKind::Scatter:
    case OpKind::ReduceScatter:
      return scatter_or_reduce_scatter(call);
    case OpKind::AllToAll:
      return all_to_all(call);
    case OpKind::Send:
    case OpKind::Recv:
      break;  // runs_blocking keeps them on the polled path
  }
}

}  // namespace

bool runs_blocking(const OpRequest& request) {
  // Without MPI_THREAD_MULTIPLE every MPI call holds one lock: a blocking call would hold it for
  // as long as the peers take, and stall another thread's sends that a peer may be waiting for.
  return request.blocking && !is_point_to_point(request.kind) && thread_multiple();
}

Work run_blocking(const std::shared_ptr<Comm>& comm, OpRequest&& request) {
  const Watch watch(*comm, request, timeout_or(request, comm->default_timeout));
  run(Call{*comm, request});
  return Work{};  // done: the caller's wait() returns at once
}

}  // namespace ranks::backends::mpi
