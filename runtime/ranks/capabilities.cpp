#include "ranks/capabilities.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "ranks/collectives.hpp"
#include "ranks/context.hpp"
#include "ranks/errors.hpp"

namespace ranks {

namespace {

constexpr Support Y = Support::Yes;
constexpr Support N = Support::No;
constexpr Support S = Support::Staged;

// Torch columns: the table in torch.distributed's documentation (seed 004 and today's docs).
// Where a ranks column differs, the note says how and why.
constexpr std::array nccl_ops = {
    OpSupport{OpKind::Send, N, Y, N, Y, ""},
    OpSupport{OpKind::Recv, N, Y, N, Y, ""},
    OpSupport{OpKind::Broadcast, S, Y, N, Y, "cpu tensors go through the gpu and back (MMEngine)"},
    OpSupport{OpKind::AllReduce, S, Y, N, Y, "cpu tensors go through the gpu and back (MMEngine)"},
    OpSupport{OpKind::Reduce, N, Y, N, Y, ""},
    OpSupport{OpKind::AllGather, S, Y, N, Y, "cpu tensors go through the gpu and back (MMEngine)"},
    OpSupport{OpKind::Gather, N, Y, N, Y, "grouped send/recv"},
    OpSupport{OpKind::Scatter, N, Y, N, Y, "grouped send/recv"},
    OpSupport{OpKind::ReduceScatter, N, Y, N, Y, ""},
    OpSupport{OpKind::AllToAll, N, Y, N, Y, "grouped send/recv"},
    OpSupport{OpKind::Barrier, Y, Y, N, Y, "an all_reduce of one element on the gpu"},
    OpSupport{OpKind::NewGroup, Y, Y, Y, Y, ""},
};

constexpr std::array gloo_ops = {
    OpSupport{OpKind::Send, Y, N, Y, N, ""},
    OpSupport{OpKind::Recv, Y, N, Y, N, ""},
    OpSupport{OpKind::Broadcast, Y, S, Y, Y,
              "cuda tensors go through host memory (Debian's gloo has no cuda)"},
    OpSupport{OpKind::AllReduce, Y, S, Y, Y,
              "cuda tensors go through host memory (Debian's gloo has no cuda)"},
    OpSupport{OpKind::Reduce, Y, N, Y, N, ""},
    OpSupport{OpKind::AllGather, Y, S, Y, N,
              "cuda tensors go through host memory, as MMEngine's all_gather moves them"},
    OpSupport{OpKind::Gather, Y, N, Y, N, ""},
    OpSupport{OpKind::Scatter, Y, N, Y, N, ""},
    OpSupport{OpKind::ReduceScatter, Y, N, N, N,
              "gloo's halving-doubling reduce_scatter (torch's gloo has none)"},
    OpSupport{OpKind::AllToAll, Y, N, N, N, "gloo::alltoall (torch's table predates it)"},
    OpSupport{OpKind::Barrier, Y, Y, Y, N, "a barrier has no tensor, so no device"},
    OpSupport{OpKind::NewGroup, Y, Y, Y, Y, ""},
};

constexpr std::array mpi_ops = {
    OpSupport{OpKind::Send, Y, N, Y, N, "torch: cuda only with a cuda-aware MPI; Debian's is not"},
    OpSupport{OpKind::Recv, Y, N, Y, N, "torch: cuda only with a cuda-aware MPI; Debian's is not"},
    OpSupport{OpKind::Broadcast, Y, N, Y, N, ""},
    OpSupport{OpKind::AllReduce, Y, N, Y, N, ""},
    OpSupport{OpKind::Reduce, Y, N, Y, N, ""},
    OpSupport{OpKind::AllGather, Y, N, Y, N, ""},
    OpSupport{OpKind::Gather, Y, N, Y, N, ""},
    OpSupport{OpKind::Scatter, Y, N, Y, N, ""},
    OpSupport{OpKind::ReduceScatter, Y, N, N, N,
              "MPI_Reduce_scatter_block (torch does not wire it)"},
    OpSupport{OpKind::AllToAll, Y, N, Y, N, "MPI_Alltoallv"},
    OpSupport{OpKind::Barrier, Y, Y, Y, N, "a barrier has no tensor, so no device"},
    OpSupport{OpKind::NewGroup, Y, Y, Y, Y, ""},
};

constexpr std::array all_reduce_ops = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product,
                                       ReduceOp::Min, ReduceOp::Max,  ReduceOp::BAnd,
                                       ReduceOp::BOr, ReduceOp::BXor};
// NCCL has no bitwise reductions (torch raises for BAND/BOR/BXOR on nccl).
constexpr std::array nccl_reduce_ops = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product,
                                        ReduceOp::Min, ReduceOp::Max};

constexpr std::string_view torch_sources =
    "torch.distributed docs, backends table (seed 004; docs 2.x for nccl send/recv/gather/scatter)";

const BackendCapabilities nccl = [] {
  BackendCapabilities c{"nccl",
                        nccl_ops,
                        nccl_reduce_ops,
                        torch_sources,
                        /*recv_any_source=*/false,
                        /*matches_tags=*/false,
                        /*one_gpu_per_rank=*/true};
  c.after_timeout = AfterTimeout::RanksGroupAborted;
  c.after_timeout_note = "the rank's NCCL communicator is aborted; make a new group to go on";
  c.dead_peer_noticed_at_once = false;
  return c;
}();
const BackendCapabilities gloo = [] {
  BackendCapabilities c{"gloo", gloo_ops, all_reduce_ops, torch_sources};
  c.usual_hardware = "ethernet-40g";
  return c;
}();
const BackendCapabilities mpi = [] {
  BackendCapabilities c{"mpi", mpi_ops, all_reduce_ops, torch_sources};
  c.after_timeout = AfterTimeout::RanksCollectivesRefused;
  c.after_timeout_note =
      "a timed-out send or receive is cancelled, but a collective cannot be, so the rank's MPI "
      "communicator runs no more collectives";
  c.rendezvous_through_store = false;
  // Open MPI 4.1's eager limits less its 56-byte match header: shared memory (btl vader) 4 KiB,
  // TCP (btl tcp, between nodes) 64 KiB.
  c.eager_send_bytes_within_node = 4040;
  c.eager_send_bytes_across_nodes = 65480;
  c.launcher = "mpi";
  c.usual_hardware = "pcie-gen5-ib";
  return c;
}();

constexpr std::array<std::string_view, 3> names = {"nccl", "gloo", "mpi"};

std::string_view mark(Support s) {
  switch (s) {
    case Support::Yes:
      return "✓";
    case Support::Staged:
      return "✓ (staged)";
    case Support::No:
      return "✘";
  }
  return "?";
}

}  // namespace

BackendCapabilities::BackendCapabilities(std::string_view backend_name,
                                         std::span<const OpSupport> op_rows,
                                         std::span<const ReduceOp> reduce_op_list,
                                         std::string_view table_sources, bool receives_any_source,
                                         bool tags_select, bool gpu_per_rank)
    : backend(backend_name),
      ops(op_rows),
      reduce_ops(reduce_op_list),
      sources(table_sources),
      recv_any_source(receives_any_source),
      matches_tags(tags_select),
      one_gpu_per_rank(gpu_per_rank) {
  row_of_.fill(-1);
  for (size_t row = 0; row < ops.size(); ++row) {
    row_of_[static_cast<size_t>(ops[row].op)] = static_cast<int8_t>(row);
  }
  for (ReduceOp op : reduce_ops) reduce_op_bits_ |= reduce_op_bit(op);
}

std::optional<std::string> BackendCapabilities::why_unsupported(const OpRequest& request) const {
  const OpSupport* row = find(request.kind);
  if (row == nullptr) {
    return fmt::format("the {} backend has no {}", backend, op_name(request.kind));
  }
  const Tensor* first = nullptr;
  for (const auto* list : {&request.inputs, &request.outputs}) {
    for (const Tensor& t : *list) {
      if (first == nullptr) {
        first = &t;
      } else if (t.device().type != first->device().type) {
        return fmt::format("its tensors are on different devices ({} and {})",
                           first->device().str(), t.device().str());
      }
    }
  }
  if (first != nullptr) {
    Support s = first->device().is_cuda() ? row->cuda : row->cpu;
    if (s == Support::No) {
      Support other = first->device().is_cuda() ? row->cpu : row->cuda;
      return fmt::format("the {} backend does not support {} on {} tensors{}", backend,
                         op_name(request.kind), first->device().is_cuda() ? "cuda" : "cpu",
                         other != Support::No
                             ? fmt::format("; move the tensor to {}",
                                           first->device().is_cuda() ? "the cpu" : "a cuda device")
                             : std::string(row->note.empty() ? "" : "; ") + std::string(row->note));
    }
  }
  if (request.kind == OpKind::Recv && request.root == any_source && !recv_any_source) {
    return fmt::format(
        "the {} backend has no receive from any source (it matches a receive to one named "
        "sender); pass the src rank, or use the gloo or mpi backend for this exchange",
        backend);
  }
  if (uses_reduce_op(request.kind) &&
      std::find(reduce_ops.begin(), reduce_ops.end(), request.reduce_op) == reduce_ops.end()) {
    return fmt::format("the {} backend has no '{}' reduction", backend,
                       reduce_op_name(request.reduce_op));
  }
  return std::nullopt;
}

bool BackendCapabilities::allows(const OpRequest& request) const {
  const OpSupport* row = find(request.kind);
  if (row == nullptr) return false;
  const Tensor* first = !request.inputs.empty()    ? &request.inputs.front()
                        : !request.outputs.empty() ? &request.outputs.front()
                                                   : nullptr;
  if (first != nullptr) {
    const Device::Type type = first->device().type;
    auto on_one_device = [type](const TensorList& list) {
      return std::all_of(list.begin(), list.end(),
                         [type](const Tensor& t) { return t.device().type == type; });
    };
    if (!on_one_device(request.inputs) || !on_one_device(request.outputs)) return false;
    if ((type == Device::Type::CUDA ? row->cuda : row->cpu) == Support::No) return false;
  }
  // recv_any_source between the two tests of the request: next to each other, g++ makes them one
  // 8-byte load of kind and root, which the store buffer cannot forward from the separate stores
  // that just built the request, so every op would wait for its older stores (measured:
  // reports/simulator.md).
  if (request.kind == OpKind::Recv && !recv_any_source && request.root == any_source) return false;
  return !uses_reduce_op(request.kind) || (reduce_op_bits_ & reduce_op_bit(request.reduce_op)) != 0;
}

std::string BackendCapabilities::to_markdown() const {
  std::string out = fmt::format("### {}\n\n", backend);
  out += "| op | cpu | cuda | torch cpu | torch cuda | note |\n";
  out += "| --- | --- | --- | --- | --- | --- |\n";
  for (const OpSupport& s : ops) {
    if (s.op == OpKind::NewGroup) continue;
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", op_name(s.op), mark(s.cpu),
                       mark(s.cuda), mark(s.torch_cpu), mark(s.torch_cuda), s.note);
  }
  std::string ops_list;
  for (ReduceOp op : reduce_ops) {
    ops_list += std::string(ops_list.empty() ? "" : ", ") + std::string(reduce_op_name(op));
  }
  out += fmt::format(
      "\nreduce ops: {}. dtypes: all nine (bool, uint8, int8, int32, int64, "
      "float16, bfloat16, float32, float64).{}\ntorch columns: {}.\n",
      ops_list,
      std::string(recv_any_source ? "" : " recv from any_source: ✘.") +
          (matches_tags ? "" : " tags: ignored (two ranks' messages pair in posting order).") +
          (one_gpu_per_rank ? " cuda tensors: on the rank's own GPU, cuda:<local rank>." : ""),
      sources);
  return out;
}

const BackendCapabilities& capabilities(std::string_view backend) {
  if (backend == "nccl") return nccl;
  if (backend == "gloo") return gloo;
  if (backend == "mpi") return mpi;
  throw InvalidArgument(
      fmt::format("unknown backend '{}'; the backends are nccl, gloo and mpi", backend));
}

std::span<const std::string_view> backend_names() { return names; }

Device comm_device() {
  const Context& context = current();
  if (context.initialized && capabilities(context.backend_name).one_gpu_per_rank) {
    return Device::cuda(context.local_rank);
  }
  return Device::cpu();
}

}  // namespace ranks
