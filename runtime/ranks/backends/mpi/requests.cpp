#include "ranks/backends/mpi/requests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "ranks/collectives.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/reduce.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::mpi {

[[noreturn]] void invalid(const Comm& comm, const OpRequest& r, const std::string& what) {
  throw InvalidArgument(fmt::format("{}: {}", describe(comm, r), what));
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

void check_request(const Comm& comm, const OpRequest& r) {
  if (is_point_to_point(r.kind) && r.tag > comm.tag_ub) {
    invalid(comm, r, fmt::format("tag {} is out of MPI's range [0, {}]", r.tag, comm.tag_ub));
  }
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

std::unique_ptr<std::byte[]> staging(size_t bytes) {
  return std::make_unique_for_overwrite<std::byte[]>(bytes == 0 ? 1 : bytes);
}

void finish_mean(const Comm& comm, const OpRequest& r, Tensor& t) {
  if (r.reduce_op != ReduceOp::Mean) return;
  ranks::detail::divide_by(t.data_ptr(), t.numel(), t.dtype(), comm.size());
}

void describe_sizes(const Comm& comm, const OpRequest& r, AllToAllPlan& plan) {
  int* mine = plan.mine();
  int64_t send_total = 0;
  int64_t recv_total = 0;
  for (size_t j = 0; j < plan.n; ++j) {
    mine[2 * j] = count_of(comm, r, r.inputs[j]);
    mine[2 * j + 1] = count_of(comm, r, r.outputs[j]);
    send_total += r.inputs[j].numel();
    recv_total += r.outputs[j].numel();
  }
  count_of(comm, r, std::max(send_total, recv_total));  // displacements are int too
}

void plan_moves(const OpRequest& r, AllToAllPlan& plan, std::unique_ptr<std::byte[]>& send,
                std::unique_ptr<std::byte[]>& recv) {
  const size_t element = dtype_size(r.inputs[0].dtype());
  const int* ours = plan.mine();
  const int* peers = plan.theirs();
  int send_at = 0;
  int recv_at = 0;
  for (size_t j = 0; j < plan.n; ++j) {
    plan.send_counts()[j] = std::min(ours[2 * j], peers[2 * j + 1]);
    plan.recv_counts()[j] = std::min(ours[2 * j + 1], peers[2 * j]);
    plan.send_displs()[j] = send_at;
    plan.recv_displs()[j] = recv_at;
    send_at += ours[2 * j];
    recv_at += ours[2 * j + 1];
  }
  send = staging(static_cast<size_t>(send_at) * element);
  recv = staging(static_cast<size_t>(recv_at) * element);
  for (size_t j = 0; j < plan.n; ++j) {
    copy_bytes(send.get() + static_cast<size_t>(plan.send_displs()[j]) * element,
               r.inputs[j].data_ptr(), r.inputs[j].nbytes());
  }
}

void finish_moves(const Comm& comm, OpRequest& r, AllToAllPlan& plan, const std::byte* recv,
                  const std::string& describe) {
  const int* ours = plan.mine();
  const int* peers = plan.theirs();
  std::string diffs;
  for (size_t j = 0; j < plan.n; ++j) {
    const int peer = comm.global_rank(static_cast<int>(j));
    if (ours[2 * j] != peers[2 * j + 1]) {
      diffs += fmt::format("; this rank sends {} elements to rank {}, which has room for {}",
                           ours[2 * j], peer, peers[2 * j + 1]);
    }
    if (ours[2 * j + 1] != peers[2 * j]) {
      diffs += fmt::format("; rank {} sends {} elements to this rank, which has room for {}", peer,
                           peers[2 * j], ours[2 * j + 1]);
    }
  }
  if (!diffs.empty()) throw Mismatch(fmt::format("mismatched all_to_all: {}{}", describe, diffs));
  const size_t element = dtype_size(r.inputs[0].dtype());
  for (size_t j = 0; j < plan.n; ++j) {
    copy_bytes(r.outputs[j].data_ptr(), recv + static_cast<size_t>(plan.recv_displs()[j]) * element,
               r.outputs[j].nbytes());
  }
}

}  // namespace ranks::backends::mpi
