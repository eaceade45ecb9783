// Every op of the nccl capability table on one communicator: the collectives NCCL has, and
// gather, scatter and all_to_all as grouped ncclSend/ncclRecv. Tensor conventions are those of
// ranks/op.hpp; the semantics are the simulator's (broadcast never writes the src, reduce writes
// only the root, recv reports the sender).

#include "ranks/collectives.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "ranks/backends/nccl/types.hpp"
#include "ranks/backends/nccl/watchdog.hpp"
#include "ranks/backends/nccl/work.hpp"
#include "ranks/detail/group_agreement.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::nccl::detail {

namespace {

// One op being enqueued: where each tensor lives on the communicator's device. A cpu tensor is
// staged (MMEngine's rule): copied to the device before the op when it is read, and copied back
// once the op has completed (Work::wait) when it is written.
class Launch {
 public:
  Launch(NcclWork& work, const Communicator& comm) : work_(work), comm_(comm) {}

  Communicator& comm() const { return *work_.comm(); }
  OpRequest& request() { return work_.request(); }
  cudaStream_t stream() const { return comm_.stream(); }
  Device device() const { return Device::cuda(comm_.device()); }

  // The device address of t for this op; read: NCCL reads it, written: NCCL writes it.
  void* on_device(Tensor& t, bool read, bool written) {
    if (t.device().is_cuda()) return t.data_ptr();
    for (auto& s : work_.staged) {
      if (s.host.defined() && s.host.data_ptr() == t.data_ptr() && s.bytes == t.nbytes()) {
        return s.device;
      }
    }
    void* staged = comm().allocate(t.nbytes());
    work_.staged.push_back({staged, t.nbytes(), t, written});
    // From pageable memory the copy returns once CUDA holds the bytes: no wait for the stream.
    if (read && t.nbytes() > 0) {
      check_cuda(
          cudaMemcpyAsync(staged, t.data_ptr(), t.nbytes(), cudaMemcpyHostToDevice, stream()),
          "cudaMemcpyAsync", [this] { return comm_.describe(work_.request()); });
    }
    return staged;
  }
  // A scratch buffer on the device, alive until the op has completed.
  void* scratch(int64_t numel, DType dtype) {
    const size_t bytes = static_cast<size_t>(numel) * dtype_size(dtype);
    void* p = comm().allocate(bytes);
    work_.staged.push_back({p, bytes, Tensor(), false});
    return p;
  }
  NcclWork& work() { return work_; }
  // An asynchronous device-to-device copy on the communicator's stream.
  void copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0 || dst == src) return;
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()),
               "cudaMemcpyAsync", [this] { return comm_.describe(work_.request()); });
  }

 private:
  NcclWork& work_;
  const Communicator& comm_;
};

size_t count(const Tensor& t) { return static_cast<size_t>(t.numel()); }

// new_group's agreement on the world: every rank must be creating the same group (the hash of
// its name in request.extra), or the new group's first collective would hang or mix data. The
// hashes are all-gathered; the comparison runs when the op completes (Work::wait).
void agree_on_new_group(Launch& l, ncclComm_t nccl) {
  const std::string what = l.comm().describe(l.request());
  const int rank = l.comm().spec().rank;
  const int size = l.comm().spec().size();
  auto* slots = static_cast<int64_t*>(l.scratch(size, DType::Int64));
  const auto mine = static_cast<int64_t>(l.request().extra);
  check_cuda(cudaMemcpyAsync(slots + rank, &mine, sizeof(mine), cudaMemcpyHostToDevice, l.stream()),
             "cudaMemcpyAsync", what);
  check_nccl(ncclAllGather(slots + rank, slots, 1, ncclInt64, nccl, l.stream()), "ncclAllGather",
             what, nccl);
  const Communicator& comm = l.comm();
  l.work().set_completion([slots, size, mine, what, &comm] {
    std::vector<uint64_t> hashes(static_cast<size_t>(size));  // the int64 slots' bits
    check_cuda(
        cudaMemcpy(hashes.data(), slots, hashes.size() * sizeof(int64_t), cudaMemcpyDeviceToHost),
        "cudaMemcpy", what);
    ranks::detail::check_group_agreement(what, hashes.data(), hashes.size(),
                                         static_cast<uint64_t>(mine), comm.spec().global_ranks());
  });
}

// The NCCL calls of one op, between ncclGroupStart and ncclGroupEnd (called by enqueue).
void issue(Launch& l, ncclComm_t nccl) {
  OpRequest& r = l.request();
  auto what = [&] { return l.comm().describe(r); };
  const int rank = l.comm().spec().rank;
  const int size = l.comm().spec().size();
  cudaStream_t s = l.stream();
  auto call = [&](ncclResult_t result, std::string_view name) {
    check_nccl(result, name, what, nccl);
  };
  switch (r.kind) {
    case OpKind::NewGroup:
      return agree_on_new_group(l, nccl);
    case OpKind::Barrier: {
      // NCCL has no barrier: an all_reduce of one element on the device orders every rank.
      void* one = l.scratch(1, DType::Float32);
      call(ncclAllReduce(one, one, 1, ncclFloat32, ncclSum, nccl, s), "ncclAllReduce");
      return;
    }
    case OpKind::AllReduce: {
      Tensor& t = r.outputs.front();
      void* p = l.on_device(t, true, true);
      call(ncclAllReduce(p, p, count(t), nccl_dtype(t.dtype()), nccl_op(r.reduce_op, t.dtype()),
                         nccl, s),
           "ncclAllReduce");
      return;
    }
    case OpKind::Broadcast: {
      Tensor& t = r.outputs.front();
      void* p = l.on_device(t, rank == r.root, rank != r.root);
      call(ncclBroadcast(p, p, count(t), nccl_dtype(t.dtype()), r.root, nccl, s), "ncclBroadcast");
      return;
    }
    case OpKind::Reduce: {
      Tensor& t = r.outputs.front();
      void* p = l.on_device(t, true, rank == r.root);
      call(ncclReduce(p, p, count(t), nccl_dtype(t.dtype()), nccl_op(r.reduce_op, t.dtype()),
                      r.root, nccl, s),
           "ncclReduce");
      return;
    }
    case OpKind::AllGather: {
      Tensor& in = r.inputs.front();
      const size_t bytes = in.nbytes();
      // NCCL gathers into one buffer; the outputs are separate tensors, filled from it.
      auto* gathered = static_cast<char*>(l.scratch(in.numel() * size, in.dtype()));
      call(ncclAllGather(l.on_device(in, true, false), gathered, count(in), nccl_dtype(in.dtype()),
                         nccl, s),
           "ncclAllGather");
      for (int i = 0; i < size; ++i) {
        l.copy(l.on_device(r.outputs[static_cast<size_t>(i)], false, true),
               gathered + static_cast<size_t>(i) * bytes, bytes);
      }
      return;
    }
    case OpKind::ReduceScatter: {
      Tensor& out = r.outputs.front();
      const size_t bytes = out.nbytes();
      auto* packed = static_cast<char*>(l.scratch(out.numel() * size, out.dtype()));
      for (int i = 0; i < size; ++i) {
        l.copy(packed + static_cast<size_t>(i) * bytes,
               l.on_device(r.inputs[static_cast<size_t>(i)], true, false), bytes);
      }
      call(ncclReduceScatter(packed, l.on_device(out, false, true), count(out),
                             nccl_dtype(out.dtype()), nccl_op(r.reduce_op, out.dtype()), nccl, s),
           "ncclReduceScatter");
      return;
    }
    case OpKind::Gather: {
      Tensor& in = r.inputs.front();
      void* mine = l.on_device(in, true, false);
      if (rank != r.root) {
        call(ncclSend(mine, count(in), nccl_dtype(in.dtype()), r.root, nccl, s), "ncclSend");
        return;
      }
      for (int i = 0; i < size; ++i) {
        Tensor& out = r.outputs[static_cast<size_t>(i)];
        void* p = l.on_device(out, false, true);
        if (i == rank) {
          l.copy(p, mine, in.nbytes());
        } else {
          call(ncclRecv(p, count(out), nccl_dtype(out.dtype()), i, nccl, s), "ncclRecv");
        }
      }
      return;
    }
    case OpKind::Scatter: {
      Tensor& out = r.outputs.front();
      void* mine = l.on_device(out, false, true);
      if (rank != r.root) {
        call(ncclRecv(mine, count(out), nccl_dtype(out.dtype()), r.root, nccl, s), "ncclRecv");
        return;
      }
      for (int i = 0; i < size; ++i) {
        Tensor& in = r.inputs[static_cast<size_t>(i)];
        void* p = l.on_device(in, true, false);
        if (i == rank) {
          l.copy(mine, p, out.nbytes());
        } else {
          call(ncclSend(p, count(in), nccl_dtype(in.dtype()), i, nccl, s), "ncclSend");
        }
      }
      return;
    }
    case OpKind::AllToAll: {
      for (int i = 0; i < size; ++i) {
        Tensor& in = r.inputs[static_cast<size_t>(i)];
        Tensor& out = r.outputs[static_cast<size_t>(i)];
        void* src = l.on_device(in, true, false);
        void* dst = l.on_device(out, false, true);
        if (i == rank) {
          l.copy(dst, src, in.nbytes());
        } else {
          call(ncclSend(src, count(in), nccl_dtype(in.dtype()), i, nccl, s), "ncclSend");
          call(ncclRecv(dst, count(out), nccl_dtype(out.dtype()), i, nccl, s), "ncclRecv");
        }
      }
      return;
    }
    case OpKind::Send: {
      Tensor& t = r.inputs.front();
      call(ncclSend(l.on_device(t, true, false), count(t), nccl_dtype(t.dtype()), r.root, nccl, s),
           "ncclSend");
      return;
    }
    case OpKind::Recv: {
      Tensor& t = r.outputs.front();
      call(ncclRecv(l.on_device(t, false, true), count(t), nccl_dtype(t.dtype()), r.root, nccl, s),
           "ncclRecv");
      return;
    }
  }
  throw InvalidArgument(fmt::format("{}: the nccl backend has no such op", what()));
}

void enqueue(NcclWork& work) {
  Communicator& comm = *work.comm();
  OpRequest& r = work.request();
  auto what = [&] { return comm.describe(r); };
  if (r.kind == OpKind::Recv) work.source_rank = r.root;
  DeviceGuard guard(comm.device(), what);
  work.done_event = comm.take_event();
  Launch launch(work, comm);
  comm.launch([&](ncclComm_t nccl) {
    // The op reads what the caller's stream (and staging, by cudaMemcpy on it) wrote before.
    // cudaStreamWaitEvent waits for the record as it is now, so one event serves every launch.
    check_cuda(cudaEventRecord(comm.ready_event(), nullptr), "cudaEventRecord", what);
    check_cuda(cudaStreamWaitEvent(comm.stream(), comm.ready_event(), 0), "cudaStreamWaitEvent",
               what);

    check_nccl(ncclGroupStart(), "ncclGroupStart", what, nccl);
    try {
      issue(launch, nccl);
    } catch (...) {
      ncclGroupEnd();
      throw;
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", what, nccl);
    settle(nccl, work.deadline(), what, [&comm] { return comm.failure(); });
    check_cuda(cudaEventRecord(work.done_event, comm.stream()), "cudaEventRecord", what);
  });
  // Written cpu tensors get their values once the op has completed, on the waiting thread.
  bool copy_back = false;
  for (const auto& s : work.staged) copy_back = copy_back || s.copy_back;
  if (copy_back) {
    // (new_group's check, the only other completion step, stages nothing.)
    work.set_completion([&work] {
      for (auto& s : work.staged) {
        if (!s.copy_back || s.bytes == 0) continue;
        check_cuda(cudaMemcpy(s.host.data_ptr(), s.device, s.bytes, cudaMemcpyDeviceToHost),
                   "cudaMemcpy", [&] { return work.comm()->describe(work.request()); });
      }
    });
  }
}

}  // namespace

Work start(const std::shared_ptr<Communicator>& comm, OpRequest&& request) {
  auto work = std::make_shared<NcclWork>(comm, std::move(request));
  try {
    enqueue(*work);
  } catch (const InvalidArgument&) {
    throw;  // a refusal leaves the communicator as it was, and is thrown from submit, as
            // dispatch's are
  } catch (const Unsupported&) {
    throw;
  } catch (const Error&) {
    // A launch that NCCL may have half taken (a timeout while it settled, an NCCL error) leaves
    // the communicator unusable: the op, and every later one, fails with the group.
    comm->fail(std::current_exception(), &work->request());
    auto failed = std::make_shared<ranks::detail::CompletedWork>();
    failed->error = comm->failure_for(work->request());
    return Work(failed);
  }
  Watchdog::instance().watch(work);
  return Work(work);
}

}  // namespace ranks::backends::nccl::detail
