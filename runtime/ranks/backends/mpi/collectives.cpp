// Every op as one of MPI's non-blocking calls. Results land in the caller's tensors directly
// where MPI allows (in place), else in staging memory copied out by the work's last step.

#include "ranks/collectives.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstring>

#include "ranks/backends/mpi/types.hpp"
#include "ranks/backends/mpi/work.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/reduce.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::mpi {

namespace {

using ranks::detail::where_str;

std::string prefix(const Comm& comm, const OpRequest& r) {
  return fmt::format("{} on group '{}' (rank {} of {}) at {}", op_name(r.kind), comm.name,
                     comm.rank, comm.size(), where_str(r.where));
}

[[noreturn]] void invalid(const Comm& comm, const OpRequest& r, const std::string& what) {
  throw InvalidArgument(fmt::format("{}: {}", prefix(comm, r), what));
}

// MPI counts are int.
int count_of(const Comm& comm, const OpRequest& r, int64_t n) {
  if (n > INT_MAX) {
    invalid(comm, r,
            fmt::format("{} elements exceed MPI's int counts (at most {} per call); "
                        "split the tensor",
                        n, INT_MAX));
  }
  return static_cast<int>(n);
}
int count_of(const Comm& comm, const OpRequest& r, const Tensor& t) {
  return count_of(comm, r, t.numel());
}

void expect_lists(const Comm& comm, const OpRequest& r, size_t inputs, size_t outputs) {
  if (r.inputs.size() != inputs || r.outputs.size() != outputs) {
    invalid(comm, r,
            fmt::format("expected {} input and {} output tensors (op.hpp), got {} and {}", inputs,
                        outputs, r.inputs.size(), r.outputs.size()));
  }
}

// Every tensor of a list has like's dtype and element count.
void expect_like(const Comm& comm, const OpRequest& r, const std::vector<Tensor>& list,
                 const Tensor& like, std::string_view what) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].dtype() != like.dtype() || list[i].numel() != like.numel()) {
      invalid(comm, r,
              fmt::format("{}[{}] is {}, expected {} elements of {}", what, i, list[i].str(),
                          like.numel(), dtype_name(like.dtype())));
    }
  }
}

void check_request(const Comm& comm, const OpRequest& r) {
  for (const auto* list : {&r.inputs, &r.outputs}) {
    for (const Tensor& t : *list) {
      if (!t.defined()) invalid(comm, r, "a tensor is undefined");
      if (t.device().is_cuda()) {
        throw Unsupported(fmt::format(
            "{}: the mpi backend moves cpu tensors only (Debian's Open MPI is not cuda-aware); "
            "got {}; move the tensor to the cpu",
            prefix(comm, r), t.str()));
      }
    }
  }
  const auto n = static_cast<size_t>(comm.size());
  const bool is_root = r.root == comm.rank;
  if (has_root(r.kind) && (r.root < 0 || r.root >= comm.size())) {
    invalid(comm, r, fmt::format("root {} is out of range [0, {})", r.root, comm.size()));
  }
  switch (r.kind) {
    case OpKind::Barrier:
    case OpKind::NewGroup:
      return expect_lists(comm, r, 0, 0);
    case OpKind::AllReduce:
    case OpKind::Broadcast:
    case OpKind::Reduce:
      expect_lists(comm, r, 1, 1);
      return expect_like(comm, r, r.outputs, r.inputs[0], "the outputs");
    case OpKind::AllGather:
      expect_lists(comm, r, 1, n);
      return expect_like(comm, r, r.outputs, r.inputs[0], "the outputs");
    case OpKind::Gather:
      expect_lists(comm, r, 1, is_root ? n : 0);
      return expect_like(comm, r, r.outputs, r.inputs[0], "the outputs");
    case OpKind::Scatter:
      expect_lists(comm, r, is_root ? n : 0, 1);
      return expect_like(comm, r, r.inputs, r.outputs[0], "the inputs");
    case OpKind::ReduceScatter:
      expect_lists(comm, r, n, 1);
      return expect_like(comm, r, r.inputs, r.outputs[0], "the inputs");
    case OpKind::AllToAll:
      expect_lists(comm, r, n, n);
      for (const auto* list : {&r.inputs, &r.outputs}) {
        for (const Tensor& t : *list) {
          if (t.dtype() != r.inputs[0].dtype()) {
            invalid(comm, r, fmt::format("the tensors mix {} and {}", r.inputs[0].str(), t.str()));
          }
        }
      }
      return;
    case OpKind::Send:
    case OpKind::Recv: {
      const bool send = r.kind == OpKind::Send;
      expect_lists(comm, r, send ? 1 : 0, send ? 0 : 1);
      if (!(r.root >= 0 && r.root < comm.size()) && !(!send && r.root == any_source)) {
        invalid(comm, r,
                fmt::format("{} {} is out of range [0, {}){}", send ? "dst" : "src", r.root,
                            comm.size(), send ? "" : " (or any_source)"));
      }
      if (r.tag < 0 || r.tag > comm.tag_ub) {
        invalid(comm, r, fmt::format("tag {} is out of MPI's range [0, {}]", r.tag, comm.tag_ub));
      }
      return;
    }
  }
}

// The op's description is formatted only when MPI fails: posting stays cheap.
void ok(const MpiWork& w, int rc, const char* call) {
  if (rc != MPI_SUCCESS) check_mpi(rc, call, w.describe());
}

void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

// The in-place ops work on outputs[0]; a caller that passed a distinct input gets it copied in.
Tensor& in_place(OpRequest& r) {
  Tensor& t = r.outputs[0];
  if (r.inputs[0].data_ptr() != t.data_ptr()) {
    copy_bytes(t.data_ptr(), r.inputs[0].data_ptr(), t.nbytes());
  }
  return t;
}

// Mean is a sum divided on the ranks that receive it.
void add_mean_step(MpiWork& w, size_t output) {
  if (w.op.reduce_op != ReduceOp::Mean) return;
  w.steps.emplace_back([output](MpiWork& work, const MPI_Status&) {
    Tensor& t = work.op.outputs[output];
    ranks::detail::divide_by(t.data_ptr(), t.numel(), t.dtype(), work.comm->size());
  });
}

std::unique_ptr<std::byte[]> staging(size_t bytes) {
  return std::make_unique_for_overwrite<std::byte[]>(bytes == 0 ? 1 : bytes);
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
  // Max of (h, ~h) over the ranks gives the largest and the smallest hash: equal iff all agree.
  w.send_buffer = staging(4 * sizeof(uint64_t));
  auto* words = reinterpret_cast<uint64_t*>(w.send_buffer.get());
  words[0] = w.op.extra;
  words[1] = ~w.op.extra;
  ok(w, MPI_Iallreduce(words, words + 2, 2, MPI_UINT64_T, MPI_MAX, w.comm->handle, &w.request),
     "MPI_Iallreduce");
  w.steps.emplace_back([](MpiWork& work, const MPI_Status&) {
    const auto* v = reinterpret_cast<const uint64_t*>(work.send_buffer.get());
    const uint64_t largest = v[2];
    const uint64_t smallest = ~v[3];
    if (largest != smallest) {
      throw Mismatch(
          fmt::format("{}: the ranks disagree on the new group's member list (group "
                      "name hashes from {:#x} to {:#x}; this rank's is {:#x})",
                      work.describe(), smallest, largest, work.op.extra));
    }
  });
}

// all_to_all first swaps the per-pair sizes, so that a disagreement is a Mismatch on both ranks
// of the pair instead of a truncation or a silently short result; then every rank moves the
// smaller of the two sizes, so nobody is left waiting.
void post_all_to_all(MpiWork& w) {
  const auto n = static_cast<size_t>(w.comm->size());
  OpRequest& r = w.op;
  // ints: mine[2n] (what I send to j, room I have for j) | theirs[2n] | counts and displacements
  w.ints.assign(8 * n, 0);
  int* mine = w.ints.data();
  int* theirs = mine + 2 * n;
  for (size_t j = 0; j < n; ++j) {
    mine[2 * j] = count_of(*w.comm, r, r.inputs[j]);
    mine[2 * j + 1] = count_of(*w.comm, r, r.outputs[j]);
  }
  int64_t send_total = 0;
  int64_t recv_total = 0;
  for (size_t j = 0; j < n; ++j) {
    send_total += r.inputs[j].numel();
    recv_total += r.outputs[j].numel();
  }
  count_of(*w.comm, r, std::max(send_total, recv_total));  // displacements are int too
  ok(w, MPI_Ialltoall(mine, 2, MPI_INT, theirs, 2, MPI_INT, w.comm->handle, &w.request),
     "MPI_Ialltoall");
  w.steps.emplace_back([n](MpiWork& work, const MPI_Status&) {
    OpRequest& op = work.op;
    const size_t element = dtype_size(op.inputs[0].dtype());
    int* ours = work.ints.data();
    int* peers = ours + 2 * n;
    int* send_counts = peers + 2 * n;
    int* send_displs = send_counts + n;
    int* recv_counts = send_displs + n;
    int* recv_displs = recv_counts + n;
    int send_at = 0;
    int recv_at = 0;
    for (size_t j = 0; j < n; ++j) {
      send_counts[j] = std::min(ours[2 * j], peers[2 * j + 1]);
      recv_counts[j] = std::min(ours[2 * j + 1], peers[2 * j]);
      send_displs[j] = send_at;
      recv_displs[j] = recv_at;
      send_at += ours[2 * j];
      recv_at += ours[2 * j + 1];
    }
    work.send_buffer = staging(static_cast<size_t>(send_at) * element);
    work.recv_buffer = staging(static_cast<size_t>(recv_at) * element);
    for (size_t j = 0; j < n; ++j) {
      copy_bytes(work.send_buffer.get() + static_cast<size_t>(send_displs[j]) * element,
                 op.inputs[j].data_ptr(), op.inputs[j].nbytes());
    }
    MPI_Datatype type = datatype(op.inputs[0].dtype());
    auto lock = lock_mpi();
    ok(work,
       MPI_Ialltoallv(work.send_buffer.get(), send_counts, send_displs, type,
                      work.recv_buffer.get(), recv_counts, recv_displs, type, work.comm->handle,
                      &work.request),
       "MPI_Ialltoallv");
  });
  w.steps.emplace_back([n](MpiWork& work, const MPI_Status&) {
    OpRequest& op = work.op;
    const int* ours = work.ints.data();
    const int* peers = ours + 2 * n;
    const int* recv_displs = peers + 2 * n + 3 * n;
    std::string diffs;
    for (size_t j = 0; j < n; ++j) {
      const int peer = work.comm->global_rank(static_cast<int>(j));
      if (ours[2 * j] != peers[2 * j + 1]) {
        diffs += fmt::format("; this rank sends {} elements to rank {}, which has room for {}",
                             ours[2 * j], peer, peers[2 * j + 1]);
      }
      if (ours[2 * j + 1] != peers[2 * j]) {
        diffs += fmt::format("; rank {} sends {} elements to this rank, which has room for {}",
                             peer, peers[2 * j], ours[2 * j + 1]);
      }
    }
    if (!diffs.empty()) {
      throw Mismatch(fmt::format("mismatched all_to_all: {}{}", work.describe(), diffs));
    }
    const size_t element = dtype_size(op.inputs[0].dtype());
    for (size_t j = 0; j < n; ++j) {
      copy_bytes(op.outputs[j].data_ptr(),
                 work.recv_buffer.get() + static_cast<size_t>(recv_displs[j]) * element,
                 op.outputs[j].nbytes());
    }
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
      if (receives) {
        count_of(comm, r, in.numel() * comm.size());
        w.recv_buffer = staging(in.nbytes() * static_cast<size_t>(comm.size()));
        add_unstage_step(w, in.nbytes());
      }
      if (r.kind == OpKind::AllGather) {
        return ok(w,
                  MPI_Iallgather(in.data_ptr(), count, type, w.recv_buffer.get(), count, type, c,
                                 &w.request),
                  "MPI_Iallgather");
      }
      return ok(w,
                MPI_Igather(in.data_ptr(), count, type, receives ? w.recv_buffer.get() : nullptr,
                            count, type, r.root, c, &w.request),
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
      throw BackendError(
          fmt::format("{}: the group's MPI communicator can run no more "
                      "collectives: {}",
                      prefix(*comm, request), why));
    }
  }
  auto work = std::make_shared<MpiWork>(comm, std::move(request));
  post(*work);
  work->update_in_mpi();
  comm->track(work);
  return Work(std::move(work));
}

}  // namespace ranks::backends::mpi
