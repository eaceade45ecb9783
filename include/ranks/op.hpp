#pragma once
// The description of one operation as it travels from the API through dispatch to a backend.
// Every backend receives the same shape, so capability checks, sequence numbers, fingerprints
// and the flight recorder are written once.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string_view>
#include <vector>

#include "ranks/reduce_op.hpp"
#include "ranks/tensor.hpp"
#include "ranks/tensor_list.hpp"

namespace ranks {

enum class OpKind : uint8_t {
  Barrier,
  AllReduce,
  Broadcast,
  Reduce,
  AllGather,
  Gather,
  Scatter,
  ReduceScatter,
  AllToAll,
  Send,
  Recv,
  NewGroup,  // the world-wide agreement behind new_group()
};

std::string_view op_name(OpKind);  // "all_reduce", "send", ...
inline constexpr size_t op_kind_count = static_cast<size_t>(OpKind::NewGroup) + 1;

// Inline: every op asks these several times on its way through dispatch and the backend.
constexpr bool is_point_to_point(OpKind kind) {
  return kind == OpKind::Send || kind == OpKind::Recv;
}
// broadcast, reduce, gather, scatter
constexpr bool has_root(OpKind kind) {
  return kind == OpKind::Broadcast || kind == OpKind::Reduce || kind == OpKind::Gather ||
         kind == OpKind::Scatter;
}
// all_reduce, reduce, reduce_scatter
constexpr bool uses_reduce_op(OpKind kind) {
  return kind == OpKind::AllReduce || kind == OpKind::Reduce || kind == OpKind::ReduceScatter;
}

// Tensor conventions (every backend follows them):
//   barrier, new_group   no tensors
//   all_reduce, reduce, broadcast   inputs = outputs = {t} (in place)
//   all_gather           inputs = {t}, outputs = one per group rank
//   gather               inputs = {t}, outputs = one per group rank on the root, none elsewhere
//   scatter              inputs = one per group rank on the root, none elsewhere; outputs = {t}
//   reduce_scatter       inputs = one per group rank, outputs = {t}
//   all_to_all           inputs = outputs = one per group rank
//   send                 inputs = {t}, peer = dst;  recv: outputs = {t}, peer = src or any_source
struct OpRequest {
  OpRequest() = default;
  OpRequest(const OpRequest&) = default;
  OpRequest(OpRequest&&) noexcept = default;
  OpRequest& operator=(const OpRequest&) = default;
  OpRequest& operator=(OpRequest&&) noexcept = default;
  // Inlined: every op destroys a request or two, mostly moved from, whose lists are then empty.
  [[gnu::always_inline]] ~OpRequest() = default;

  OpKind kind = OpKind::Barrier;
  ReduceOp reduce_op = ReduceOp::Sum;
  int root = -1;  // group rank of src/dst for rooted ops; the peer for send/recv
  int tag = 0;
  // The caller waits for the op at once (the blocking API, not *_async): a backend may run it on
  // the calling thread and return a completed Work, sparing the handoff to a progress thread.
  // Backends that ignore it stay correct.
  bool blocking = false;
  // RANKS_DEBUG=detail's exchange of call fingerprints before a collective: it carries that
  // collective's seq (so seq numbers match the simulator's), and backends that tag messages by
  // seq keep the two apart.
  bool fingerprint_check = false;
  TensorList inputs;
  TensorList outputs;
  uint64_t extra = 0;  // op-specific fingerprint data (new_group: hash of the member list)

  // Filled in by dispatch.
  // The object collective this op is part of ("gather_object"; Context::object_call), or null.
  const char* api = nullptr;
  uint64_t seq = 0;  // per group: collectives and point-to-point ops count separately
  std::chrono::milliseconds timeout{0};
  std::source_location where;

  // The tensor whose dtype/shape describes the op for this rank (for reports and checks).
  [[gnu::always_inline]] const Tensor* described_tensor() const {
    // Scatter's root holds a list; every rank holds the output, so describe by the output.
    if (kind == OpKind::Scatter || kind == OpKind::ReduceScatter || kind == OpKind::Recv) {
      return outputs.empty() ? nullptr : &outputs.front();
    }
    if (!inputs.empty()) return &inputs.front();
    return outputs.empty() ? nullptr : &outputs.front();
  }
};

// The op's deadline: its own timeout, or `fallback` (its group's) when dispatch gave none.
inline std::chrono::milliseconds timeout_or(const OpRequest& request,
                                            std::chrono::milliseconds fallback) {
  return request.timeout.count() > 0 ? request.timeout : fallback;
}

// What the caller knows the op by: the object collective it is part of, else its own name.
inline std::string_view op_label(const OpRequest& request) {
  return request.api != nullptr ? std::string_view(request.api) : op_name(request.kind);
}

}  // namespace ranks
