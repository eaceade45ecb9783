#include "ranks/backends/mpi/plan.hpp"

#include "ranks/backends/mpi/types.hpp"
#include "ranks/collectives.hpp"
#include "ranks/detail/adjacent.hpp"
#include "ranks/detail/group_agreement.hpp"

namespace ranks::backends::mpi {

const char* MpiCall::name(bool nonblocking) const {
  switch (fn) {
    case Fn::Barrier:
      return nonblocking ? "MPI_Ibarrier" : "MPI_Barrier";
    case Fn::Allreduce:
      return nonblocking ? "MPI_Iallreduce" : "MPI_Allreduce";
    case Fn::Bcast:
      return nonblocking ? "MPI_Ibcast" : "MPI_Bcast";
    case Fn::Reduce:
      return nonblocking ? "MPI_Ireduce" : "MPI_Reduce";
    case Fn::Allgather:
      return nonblocking ? "MPI_Iallgather" : "MPI_Allgather";
    case Fn::Gather:
      return nonblocking ? "MPI_Igather" : "MPI_Gather";
    case Fn::Scatter:
      return nonblocking ? "MPI_Iscatter" : "MPI_Scatter";
    case Fn::ReduceScatterBlock:
      return nonblocking ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block";
    case Fn::Alltoall:
      return nonblocking ? "MPI_Ialltoall" : "MPI_Alltoall";
    case Fn::Alltoallv:
      return nonblocking ? "MPI_Ialltoallv" : "MPI_Alltoallv";
    case Fn::Send:
      return nonblocking ? "MPI_Isend" : "MPI_Send";
    case Fn::Recv:
      return nonblocking ? "MPI_Irecv" : "MPI_Recv";
  }
  return "MPI";
}

int issue(const MpiCall& c, MPI_Comm comm, MPI_Request* request) {
  const bool nb = request != nullptr;
  // MPI's C API takes non-const buffers in places where it only reads them.
  void* send = const_cast<void*>(c.send);
  switch (c.fn) {
    case MpiCall::Fn::Barrier:
      return nb ? MPI_Ibarrier(comm, request) : MPI_Barrier(comm);
    case MpiCall::Fn::Allreduce:
      return nb ? MPI_Iallreduce(send, c.recv, c.count, c.type, c.op, comm, request)
                : MPI_Allreduce(send, c.recv, c.count, c.type, c.op, comm);
    case MpiCall::Fn::Bcast:
      return nb ? MPI_Ibcast(c.recv, c.count, c.type, c.root, comm, request)
                : MPI_Bcast(c.recv, c.count, c.type, c.root, comm);
    case MpiCall::Fn::Reduce:
      return nb ? MPI_Ireduce(send, c.recv, c.count, c.type, c.op, c.root, comm, request)
                : MPI_Reduce(send, c.recv, c.count, c.type, c.op, c.root, comm);
    case MpiCall::Fn::Allgather:
      return nb ? MPI_Iallgather(send, c.count, c.type, c.recv, c.count, c.type, comm, request)
                : MPI_Allgather(send, c.count, c.type, c.recv, c.count, c.type, comm);
    case MpiCall::Fn::Gather:
      return nb ? MPI_Igather(send, c.count, c.type, c.recv, c.count, c.type, c.root, comm,
                              request)
                : MPI_Gather(send, c.count, c.type, c.recv, c.count, c.type, c.root, comm);
    case MpiCall::Fn::Scatter:
      return nb ? MPI_Iscatter(send, c.count, c.type, c.recv, c.count, c.type, c.root, comm,
                               request)
                : MPI_Scatter(send, c.count, c.type, c.recv, c.count, c.type, c.root, comm);
    case MpiCall::Fn::ReduceScatterBlock:
      return nb ? MPI_Ireduce_scatter_block(send, c.recv, c.count, c.type, c.op, comm, request)
                : MPI_Reduce_scatter_block(send, c.recv, c.count, c.type, c.op, comm);
    case MpiCall::Fn::Alltoall:
      return nb ? MPI_Ialltoall(send, c.count, c.type, c.recv, c.count, c.type, comm, request)
                : MPI_Alltoall(send, c.count, c.type, c.recv, c.count, c.type, comm);
    case MpiCall::Fn::Alltoallv: {
      // MPI's C API takes non-const count arrays where it only reads them.
      auto& p = const_cast<AllToAllPlan&>(*c.plan);
      return nb ? MPI_Ialltoallv(send, p.send_counts(), p.send_displs(), c.type, c.recv,
                                 p.recv_counts(), p.recv_displs(), c.type, comm, request)
                : MPI_Alltoallv(send, p.send_counts(), p.send_displs(), c.type, c.recv,
                                p.recv_counts(), p.recv_displs(), c.type, comm);
    }
    case MpiCall::Fn::Send:
      return nb ? MPI_Isend(send, c.count, c.type, c.root, c.tag, comm, request)
                : MPI_Send(send, c.count, c.type, c.root, c.tag, comm);
    case MpiCall::Fn::Recv:
      return nb ? MPI_Irecv(c.recv, c.count, c.type, c.root, c.tag, comm, request)
                : MPI_Recv(c.recv, c.count, c.type, c.root, c.tag, comm, MPI_STATUS_IGNORE);
  }
  return MPI_ERR_OTHER;
}

namespace {

using Fn = MpiCall::Fn;

Then mean_of(const OpRequest& r) {
  return r.reduce_op == ReduceOp::Mean ? Then::DivideMean : Then::Done;
}

// all_gather and gather: into the outputs when they lie back to back, else through staging.
OpPlan gather_plan(const Comm& comm, OpRequest& r, Staging& staging) {
  const Tensor& in = r.inputs[0];
  OpPlan p;
  p.call = {r.kind == OpKind::AllGather ? Fn::Allgather : Fn::Gather, in.data_ptr(), nullptr,
            count_of(comm, r, in), datatype(in.dtype())};
  p.call.root = r.root;
  if (r.kind == OpKind::AllGather || r.root == comm.rank) {
    count_of(comm, r, in.numel() * comm.size());
    p.call.recv = ranks::detail::adjacent_outputs(r.outputs, in);
    if (p.call.recv == nullptr) {
      staging.recv = mpi::staging(in.nbytes() * static_cast<size_t>(comm.size()));
      p.call.recv = staging.recv.get();
      p.after.then = Then::Unstage;
      p.after.unstage_each = in.nbytes();
    }
  }
  return p;
}

// scatter and reduce_scatter: the root's (every rank's) list of inputs, staged back to back.
OpPlan scatter_plan(const Comm& comm, OpRequest& r, Staging& staging) {
  Tensor& out = r.outputs[0];
  if (!r.inputs.empty()) {
    count_of(comm, r, out.numel() * comm.size());
    staging.send = mpi::staging(out.nbytes() * r.inputs.size());
    for (size_t j = 0; j < r.inputs.size(); ++j) {
      copy_bytes(staging.send.get() + j * out.nbytes(), r.inputs[j].data_ptr(), out.nbytes());
    }
  }
  OpPlan p;
  p.call = {r.kind == OpKind::Scatter ? Fn::Scatter : Fn::ReduceScatterBlock, staging.send.get(),
            out.data_ptr(), count_of(comm, r, out), datatype(out.dtype())};
  p.call.root = r.root;
  if (r.kind == OpKind::ReduceScatter) {
    p.call.op = reduction(r.reduce_op, out.dtype());
    p.after.then = mean_of(r);
  }
  return p;
}

}  // namespace

OpPlan plan_op(const Comm& comm, OpRequest& r, Staging& staging) {
  OpPlan p;
  switch (r.kind) {
    case OpKind::Barrier:
      p.call.fn = Fn::Barrier;
      return p;
    case OpKind::NewGroup: {
      // This rank's hash, then every rank's, in one staging block.
      const auto n = static_cast<size_t>(comm.size());
      staging.send = mpi::staging((n + 1) * sizeof(uint64_t));
      auto* words = reinterpret_cast<uint64_t*>(staging.send.get());
      words[0] = r.extra;
      p.call = {Fn::Allgather, words, words + 1, 1, MPI_UINT64_T};
      p.after.then = Then::CheckAgreement;
      return p;
    }
    case OpKind::AllReduce: {
      Tensor& t = in_place(r);
      p.call = {Fn::Allreduce, MPI_IN_PLACE, t.data_ptr(), count_of(comm, r, t),
                datatype(t.dtype()), reduction(r.reduce_op, t.dtype())};
      p.after.then = mean_of(r);
      return p;
    }
    case OpKind::Broadcast: {
      // MPI's root only reads its buffer: the src is never written.
      Tensor& t = in_place(r);
      p.call = {Fn::Bcast, nullptr, t.data_ptr(), count_of(comm, r, t), datatype(t.dtype())};
      p.call.root = r.root;
      return p;
    }
    case OpKind::Reduce: {
      // Only the root receives; the others' buffers are send buffers and stay as they were.
      Tensor& t = in_place(r);
      const bool root = r.root == comm.rank;
      p.call = {Fn::Reduce, root ? MPI_IN_PLACE : t.data_ptr(), root ? t.data_ptr() : nullptr,
                count_of(comm, r, t), datatype(t.dtype()), reduction(r.reduce_op, t.dtype())};
      p.call.root = r.root;
      if (root) p.after.then = mean_of(r);
      return p;
    }
    case OpKind::AllGather:
    case OpKind::Gather:
      return gather_plan(comm, r, staging);
    case OpKind::Scatter:
    case OpKind::ReduceScatter:
      return scatter_plan(comm, r, staging);
    case OpKind::AllToAll:
      // The sizes first (requests.hpp), then the moves.
      staging.plan = std::make_shared<AllToAllPlan>(static_cast<size_t>(comm.size()));
      describe_sizes(comm, r, *staging.plan);
      p.call = {Fn::Alltoall, staging.plan->mine(), staging.plan->theirs(), 2, MPI_INT};
      p.after.then = Then::MoveAllToAll;
      return p;
    case OpKind::Send: {
      const Tensor& t = r.inputs[0];
      p.call = {Fn::Send, t.data_ptr(), nullptr, count_of(comm, r, t), datatype(t.dtype())};
      p.call.root = r.root;
      p.call.tag = r.tag;
      return p;
    }
    case OpKind::Recv: {
      Tensor& t = r.outputs[0];
      p.call = {Fn::Recv, nullptr, t.data_ptr(), count_of(comm, r, t), datatype(t.dtype())};
      p.call.root = r.root == any_source ? MPI_ANY_SOURCE : r.root;
      p.call.tag = r.tag;
      p.after.then = Then::CheckReceived;
      return p;
    }
  }
  return p;
}

MpiCall plan_moves_call(OpRequest& r, Staging& staging) {
  plan_moves(r, *staging.plan, staging.send, staging.recv);
  MpiCall call{Fn::Alltoallv, staging.send.get(), staging.recv.get(), 0,
               datatype(r.inputs[0].dtype())};
  call.plan = staging.plan.get();
  return call;
}

void finish(const Comm& comm, OpRequest& r, Staging& staging, After after) {
  switch (after.then) {
    case Then::Done:
    case Then::CheckReceived:
      return;
    case Then::DivideMean:
      return finish_mean(comm, r, r.outputs[0]);
    case Then::Unstage:
      for (size_t j = 0; j < r.outputs.size(); ++j) {
        copy_bytes(r.outputs[j].data_ptr(), staging.recv.get() + j * after.unstage_each,
                   after.unstage_each);
      }
      return;
    case Then::CheckAgreement: {
      const auto* words = reinterpret_cast<const uint64_t*>(staging.send.get());
      ranks::detail::check_group_agreement(describe(comm, r), words + 1,
                                           static_cast<size_t>(comm.size()), words[0],
                                           *comm.members);
      return;
    }
    case Then::MoveAllToAll:
      return finish_moves(comm, r, *staging.plan, staging.recv.get(), describe(comm, r));
  }
}

}  // namespace ranks::backends::mpi
