// Every op of the gloo capability table, each through gloo's own algorithm. Tensor conventions
// are those of ranks/op.hpp; the semantics are the simulator's (sim/ranks/sim/collective.cpp):
// broadcast never writes the src, reduce writes only the root, recv reports the sender.

#include "ranks/collectives.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/scatter.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "ranks/backends/gloo/types.hpp"
#include "ranks/backends/gloo/work.hpp"
#include "ranks/detail/adjacent.hpp"
#include "ranks/detail/group_agreement.hpp"
#include "ranks/detail/reduce.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::gloo::detail {

namespace {

// gloo's collectives use slot prefixes 0x01-0x08; point-to-point tags live above them, and the
// exchanges of two-member groups (tagged with the op's sequence number) above those.
constexpr uint8_t kPointToPointSlotPrefix = 0x20;
constexpr uint8_t kPairExchangeSlotPrefix = 0x21;

struct Op {
  Communicator& comm;
  const std::shared_ptr<::gloo::Context>& context;
  OpRequest& request;
  uint32_t tag;  // ops on one communicator run in order, so the sequence number is unique
  std::chrono::milliseconds timeout;

  int rank() const { return context->rank; }
  int size() const { return context->size; }
  bool is_root() const { return context->rank == request.root; }

  // The op's gloo options, with its tag and timeout. They hold gloo's unbound buffers, so they
  // are kept until the group's next op has run (Communicator::keep_until_next).
  template <class Options>
  std::shared_ptr<Options> options() const {
    auto made = std::make_shared<Options>(context);
    made->setTag(tag);
    made->setTimeout(timeout);
    return made;
  }
  // After the gloo call returned.
  void keep(std::shared_ptr<void> options) const { comm.keep_until_next(std::move(options)); }
};

template <class W>
W* words(Tensor& t) {
  return static_cast<W*>(t.data_ptr());
}

size_t count(const Tensor& t) { return static_cast<size_t>(t.numel()); }

void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

// The capability table stages cuda tensors of broadcast, all_reduce and all_gather through host
// memory
// (Debian's gloo has no cuda); in a build without cuda such a tensor is host memory already, and
// the staging is one copy each way.
Tensor on_host(const Tensor& t) { return t.device().is_cuda() ? t.to(Device::cpu()) : t; }

// A receive buffer gloo fills entirely: left uninitialized, since zeroing it first (as a
// std::vector would) costs a pass over memory as large as the whole gathered result.
std::unique_ptr<uint8_t[]> receive_buffer(size_t bytes) {
  return std::make_unique_for_overwrite<uint8_t[]>(bytes);
}

// A two-member group's exchange: this rank sends send_bytes from `from` and receives the peer's
// recv_bytes into `into`, each direction on its own connection (Communicator::reverse_lane). An
// empty side is skipped: both ranks know the sizes, so they skip alike.
void exchange_with_peer(const Op& op, const void* from, size_t send_bytes, void* into,
                        size_t recv_bytes) {
  const int peer = 1 - op.rank();
  const auto& lane_out = op.rank() == 0 ? op.context : op.comm.reverse_lane();
  const auto& lane_in = op.rank() == 0 ? op.comm.reverse_lane() : op.context;
  struct Buffers {
    std::unique_ptr<::gloo::transport::UnboundBuffer> send, recv;
  };
  auto buffers = std::make_shared<Buffers>();
  const uint64_t slot = ::gloo::Slot::build(kPairExchangeSlotPrefix, op.tag);
  // The receive first, so that its notice is on its way before this rank starts writing.
  if (recv_bytes > 0) {
    buffers->recv = lane_in->createUnboundBuffer(into, recv_bytes);
    buffers->recv->recv(peer, slot, 0, recv_bytes);
  }
  if (send_bytes > 0) {
    // gloo only reads a buffer it sends from, but takes it non-const.
    buffers->send = lane_out->createUnboundBuffer(const_cast<void*>(from), send_bytes);
    buffers->send->send(peer, slot, 0, send_bytes);
  }
  if ((buffers->recv && !buffers->recv->waitRecv(op.timeout)) ||
      (buffers->send && !buffers->send->waitSend(op.timeout))) {
    throw ::gloo::IoException("the exchange with the peer was aborted");
  }
  op.keep(buffers);
}

// A two-member group all-reduces piece by piece, each piece one exchange and a local reduction:
// one round trip per piece where gloo's ring takes two, and, since the two directions use their
// own connections, no device thread spinning on a locked one. Pieces bound the scratch memory.
constexpr size_t kPairPieceBytes = size_t{4} << 20;

void pair_all_reduce(const Op& op, Tensor& host);
void ring_all_reduce(const Op& op, Tensor& host);

void barrier(const Op& op) {
  auto options = op.options<::gloo::BarrierOptions>();
  ::gloo::barrier(*options);
  op.keep(options);
}

void all_reduce(const Op& op) {
  Tensor& tensor = op.request.outputs.front();
  if (tensor.numel() == 0) return;
  Tensor host = on_host(tensor);
  if (op.comm.reverse_lane() != nullptr) {
    pair_all_reduce(op, host);
  } else {
    ring_all_reduce(op, host);
  }
  finish_mean(host, op.request.reduce_op, op.size());
  if (tensor.device().is_cuda()) tensor.copy_(host);
}

void pair_all_reduce(const Op& op, Tensor& host) {
  const size_t element = dtype_size(host.dtype());
  const size_t total = host.nbytes();
  const size_t piece = std::min(total, kPairPieceBytes / element * element);
  uint8_t* theirs = op.comm.scratch(piece);
  auto* mine = static_cast<uint8_t*>(host.data_ptr());
  for (size_t offset = 0; offset < total; offset += piece) {
    const size_t bytes = std::min(piece, total - offset);
    exchange_with_peer(op, mine + offset, bytes, theirs, bytes);
    // Every reduce op is commutative, so both ranks compute the same bits.
    ranks::detail::reduce_into(mine + offset, theirs, static_cast<int64_t>(bytes / element),
                               host.dtype(), op.request.reduce_op);
  }
}

void ring_all_reduce(const Op& op, Tensor& host) {
  visit_word(host.dtype(), [&](auto word) {
    using W = decltype(word);
    auto options = op.options<::gloo::AllreduceOptions>();
    options->setOutput(words<W>(host), count(host));  // in place: the output is the input
    options->setReduceFunction(reduce_function(host.dtype(), op.request.reduce_op));
    ::gloo::allreduce(*options);
    op.keep(options);
  });
}

void broadcast(const Op& op) {
  Tensor& tensor = op.request.outputs.front();
  if (tensor.numel() == 0) return;
  Tensor host = on_host(tensor);
  visit_word(host.dtype(), [&](auto word) {
    using W = decltype(word);
    auto options = op.options<::gloo::BroadcastOptions>();
    options->setOutput(words<W>(host), count(host));  // the root sends from it, never writes it
    options->setRoot(op.request.root);
    ::gloo::broadcast(*options);
    op.keep(options);
  });
  if (tensor.device().is_cuda() && !op.is_root()) tensor.copy_(host);
}

void reduce(const Op& op) {
  Tensor& tensor = op.request.outputs.front();
  if (tensor.numel() == 0) return;
  // gloo's ring leaves partial sums in every rank's output: non-roots get scratch instead, so
  // that only the root's tensor changes.
  Tensor scratch = op.is_root() ? tensor : Tensor::empty(tensor.shape(), tensor.dtype());
  visit_word(tensor.dtype(), [&](auto word) {
    using W = decltype(word);
    auto options = op.options<::gloo::ReduceOptions>();
    if (!op.is_root()) options->setInput(words<W>(tensor), count(tensor));
    options->setOutput(words<W>(scratch), count(tensor));
    options->setRoot(op.request.root);
    options->setReduceFunction(reduce_function(tensor.dtype(), op.request.reduce_op));
    ::gloo::reduce(*options);
    op.keep(options);
  });
  if (op.is_root()) finish_mean(tensor, op.request.reduce_op, op.size());
}

// gloo gathers into one buffer: the outputs themselves when they lie back to back, else staging
// that scatter_out copies from.
struct Receive {
  std::unique_ptr<uint8_t[]> staging;
  uint8_t* at = nullptr;
};

Receive receive_into(TensorList& outputs, const Tensor& in, size_t bytes) {
  Receive r;
  r.at = ranks::detail::adjacent_outputs(outputs, in);
  if (r.at == nullptr) {
    r.staging = receive_buffer(bytes);
    r.at = r.staging.get();
  }
  return r;
}

// The outputs are separate tensors and gloo gathered into one buffer: copy out of it.
void scatter_out(const Receive& r, TensorList& outputs) {
  if (r.staging == nullptr) return;  // received in place
  const uint8_t* staging = r.staging.get();
  size_t offset = 0;
  for (Tensor& out : outputs) {
    copy_bytes(out.data_ptr(), staging + offset, out.nbytes());
    offset += out.nbytes();
  }
}

// Whether two host tensors share a byte.
bool overlap(const Tensor& a, const Tensor& b) {
  // As integers: comparing pointers into different objects is unspecified.
  const auto a_begin = reinterpret_cast<uintptr_t>(a.data_ptr());
  const auto b_begin = reinterpret_cast<uintptr_t>(b.data_ptr());
  return a.nbytes() > 0 && b.nbytes() > 0 && a_begin < b_begin + b.nbytes() &&
         b_begin < a_begin + a.nbytes();
}

void all_gather_on_host(const Op& op, const Tensor& in);

void all_gather(const Op& op) {
  Tensor& in = op.request.inputs.front();
  if (in.numel() == 0) return;
  if (in.device().is_cuda()) {
    all_gather_on_host(op, in);
    return;
  }
  Receive received =
      receive_into(op.request.outputs, in, in.nbytes() * static_cast<size_t>(op.size()));
  if (op.comm.reverse_lane() != nullptr) {
    const size_t bytes = in.nbytes();
    const auto me = static_cast<size_t>(op.rank());
    copy_bytes(received.at + me * bytes, in.data_ptr(), bytes);
    exchange_with_peer(op, in.data_ptr(), bytes, received.at + (1 - me) * bytes, bytes);
    scatter_out(received, op.request.outputs);
    return;
  }
  visit_word(in.dtype(), [&](auto word) {
    using W = decltype(word);
    auto options = op.options<::gloo::AllgatherOptions>();
    options->setInput(words<W>(in), count(in));
    options->setOutput(reinterpret_cast<W*>(received.at), count(in) * op.size());
    ::gloo::allgather(*options);
    op.keep(options);
  });
  scatter_out(received, op.request.outputs);
}

// cuda tensors: gathered into host memory, then each piece copied to its cuda output.
void all_gather_on_host(const Op& op, const Tensor& in) {
  TensorList host_outputs;
  for (const Tensor& out : op.request.outputs) {
    host_outputs.push_back(Tensor::empty(out.shape(), out.dtype(), Device::cpu()));
  }
  OpRequest staged = op.request;
  staged.inputs = TensorList{on_host(in)};
  staged.outputs = host_outputs;
  all_gather(Op{op.comm, op.context, staged, op.tag, op.timeout});
  for (size_t i = 0; i < host_outputs.size(); ++i) op.request.outputs[i].copy_(host_outputs[i]);
}

void gather(const Op& op) {
  Tensor& in = op.request.inputs.front();
  if (in.numel() == 0) return;
  Receive received;  // only the root receives
  if (op.is_root()) {
    received = receive_into(op.request.outputs, in, in.nbytes() * static_cast<size_t>(op.size()));
  }
  visit_word(in.dtype(), [&](auto word) {
    using W = decltype(word);
    auto options = op.options<::gloo::GatherOptions>();
    options->setInput(words<W>(in), count(in));
    if (op.is_root()) {
      options->setOutput(reinterpret_cast<W*>(received.at), count(in) * op.size());
    }
    options->setRoot(op.request.root);
    ::gloo::gather(*options);
    op.keep(options);
  });
  if (op.is_root()) scatter_out(received, op.request.outputs);
}

void scatter(const Op& op) {
  Tensor& out = op.request.outputs.front();
  if (out.numel() == 0) return;
  visit_word(out.dtype(), [&](auto word) {
    using W = decltype(word);
    auto options = op.options<::gloo::ScatterOptions>();
    // gloo sends each piece from where it is, and meanwhile copies the root's own piece into
    // the output: a piece that shares the output's memory (a root scattering into one of its
    // inputs) is sent from a copy, or its receiver could get the root's piece instead.
    std::vector<Tensor> copies;
    if (op.is_root()) {
      std::vector<W*> pieces;
      const auto root = static_cast<size_t>(op.request.root);
      for (size_t j = 0; j < op.request.inputs.size(); ++j) {
        Tensor& in = op.request.inputs[j];
        if (j != root && overlap(out, in)) {  // the root's own piece is copied into the output
          copies.push_back(in.clone());
          pieces.push_back(words<W>(copies.back()));
        } else {
          pieces.push_back(words<W>(in));
        }
      }
      options->setInputs(pieces, count(out));
    }
    options->setOutput(words<W>(out), count(out));
    options->setRoot(op.request.root);
    ::gloo::scatter(*options);
    op.keep(options);
  });
}

// gloo's older algorithms (reduce_scatter's among them) take a plain function pointer per
// element word, with no room for a dtype or a reduce op: one instance per (dtype, op), each
// computing through reduce_into as every other gloo op does. Mean reduces like sum.
template <class W, DType dtype, ReduceOp op>
void reduce_words(W* acc, const W* src, size_t n) {
  ranks::detail::reduce_into(acc, src, static_cast<int64_t>(n), dtype,
                             op == ReduceOp::Mean ? ReduceOp::Sum : op);
}

constexpr size_t kReduceOps = 8;  // ReduceOp's enumerators, Sum to BXor

template <class W, size_t... I>
std::array<::gloo::ReductionFunction<W>, sizeof...(I)> word_reductions(std::index_sequence<I...>) {
  return {::gloo::ReductionFunction<W>(
      ::gloo::CUSTOM, &reduce_words<W, static_cast<DType>(I / kReduceOps),
                                    static_cast<ReduceOp>(I % kReduceOps)>)...};
}

template <class W>
const ::gloo::ReductionFunction<W>* word_reduction(DType dtype, ReduceOp op) {
  static const auto table = word_reductions<W>(
      std::make_index_sequence<std::size(all_dtypes) * kReduceOps>{});
  return &table[static_cast<size_t>(dtype) * kReduceOps + static_cast<size_t>(op)];
}

// gloo's halving-doubling reduce_scatter, in place on the inputs laid end to end: this rank's
// reduced piece is then at the front.
void reduce_scatter(const Op& op) {
  Tensor& out = op.request.outputs.front();
  if (out.numel() == 0) return;
  const size_t bytes = out.nbytes();
  const auto pieces = static_cast<size_t>(op.size());
  std::unique_ptr<uint8_t[]> all = receive_buffer(bytes * pieces);
  for (size_t j = 0; j < pieces; ++j) {
    Tensor in = on_host(op.request.inputs[j]);
    copy_bytes(all.get() + j * bytes, in.data_ptr(), bytes);
  }
  visit_word(out.dtype(), [&](auto word) {
    using W = decltype(word);
    const auto per_rank = static_cast<int>(count(out));
    ::gloo::ReduceScatterHalvingDoubling<W> algorithm(
        op.context, {reinterpret_cast<W*>(all.get())}, per_rank * op.size(),
        std::vector<int>(pieces, per_rank), word_reduction<W>(out.dtype(), op.request.reduce_op));
    algorithm.run();
  });
  Tensor reduced = Tensor::from_blob(all.get(), out.shape(), out.dtype(), Device::cpu());
  finish_mean(reduced, op.request.reduce_op, op.size());
  out.copy_(reduced);
}

// alltoallv: pieces may differ in size (each rank knows what it sends and what it expects).
void all_to_all(const Op& op) {
  TensorList& inputs = op.request.inputs;
  TensorList& outputs = op.request.outputs;
  const auto me = static_cast<size_t>(op.rank());
  if (inputs[me].numel() != outputs[me].numel()) {
    throw InvalidArgument(fmt::format("{}: this rank sends itself {} but has room for {}",
                                      op.comm.describe(op.request), inputs[me].describe(),
                                      outputs[me].describe()));
  }
  if (op.comm.reverse_lane() != nullptr) {
    bool aliased = false;
    for (const Tensor& out : outputs) {
      for (const Tensor& in : inputs) aliased = aliased || overlap(out, in);
    }
    if (!aliased) {  // else the staged path below, which reads every input before writing
      const size_t peer = 1 - me;
      copy_bytes(outputs[me].data_ptr(), inputs[me].data_ptr(), inputs[me].nbytes());
      exchange_with_peer(op, inputs[peer].data_ptr(), inputs[peer].nbytes(),
                         outputs[peer].data_ptr(), outputs[peer].nbytes());
      return;
    }
  }
  std::vector<int64_t> sends;
  std::vector<int64_t> receives;
  std::vector<uint8_t> in_staging;
  for (const Tensor& in : inputs) {
    sends.push_back(in.numel());
    const auto* bytes = static_cast<const uint8_t*>(in.data_ptr());
    in_staging.insert(in_staging.end(), bytes, bytes + in.nbytes());
  }
  size_t out_bytes = 0;
  for (const Tensor& out : outputs) {
    receives.push_back(out.numel());
    out_bytes += out.nbytes();
  }
  Receive received;
  received.staging = receive_buffer(out_bytes);
  received.at = received.staging.get();
  visit_word(inputs.front().dtype(), [&](auto word) {
    using W = decltype(word);
    auto options = op.options<::gloo::AlltoallvOptions>();
    options->setInput(reinterpret_cast<W*>(in_staging.data()), sends);
    options->setOutput(reinterpret_cast<W*>(received.at), receives);
    ::gloo::alltoallv(*options);
    op.keep(options);
  });
  scatter_out(received, outputs);
}

// new_group's agreement on the world: every rank must be creating the same group (the hash of
// its name in request.extra), or the new group's first collective would hang or mix data.
void agree_on_new_group(const Op& op) {
  uint64_t mine = op.request.extra;
  std::vector<uint64_t> all(static_cast<size_t>(op.size()));
  auto options = op.options<::gloo::AllgatherOptions>();
  options->setInput(&mine, 1);
  options->setOutput(all.data(), all.size());
  ::gloo::allgather(*options);
  op.keep(options);
  ranks::detail::check_group_agreement(op.comm.describe(op.request), all.data(), all.size(), mine,
                                       op.comm.spec().global_ranks());
}

}  // namespace

void run_collective(Communicator& comm, OpRequest& request, std::chrono::milliseconds timeout) {
  // Two tags per seq: RANKS_DEBUG=detail's fingerprint exchange shares its collective's seq.
  const auto tag = static_cast<uint32_t>(request.seq * 2 + (request.fingerprint_check ? 0 : 1));
  const Op op{comm, comm.context(), request, tag, timeout};
  switch (request.kind) {
    case OpKind::Barrier:
      return barrier(op);
    case OpKind::AllReduce:
      return all_reduce(op);
    case OpKind::Broadcast:
      return broadcast(op);
    case OpKind::Reduce:
      return reduce(op);
    case OpKind::AllGather:
      return all_gather(op);
    case OpKind::Gather:
      return gather(op);
    case OpKind::Scatter:
      return scatter(op);
    case OpKind::AllToAll:
      return all_to_all(op);
    case OpKind::NewGroup:
      return agree_on_new_group(op);
    case OpKind::ReduceScatter:
      return reduce_scatter(op);
    case OpKind::Send:
    case OpKind::Recv:
      break;
  }
  // Dispatch lets nothing through that gloo's row of the capability table refuses.
  throw BackendError(fmt::format("{}: not a collective of the gloo backend (the capability table "
                                 "and the gloo backend disagree)",
                                 comm.describe(request)));
}

void post_point_to_point(Communicator& comm, const OpRequest& request,
                         ::gloo::transport::UnboundBuffer& buffer) {
  const uint64_t slot =
      ::gloo::Slot::build(kPointToPointSlotPrefix, static_cast<uint32_t>(request.tag));
  // Sizes are always given: gloo's default ("the rest of the buffer") rejects empty tensors.
  if (request.kind == OpKind::Send) {
    buffer.send(request.root, slot, 0, buffer.size);
  } else if (request.root == any_source) {
    std::vector<int> others;
    for (int r = 0; r < comm.size(); ++r) {
      if (r != comm.rank()) others.push_back(r);
    }
    buffer.recv(others, slot, 0, buffer.size);
  } else {
    buffer.recv(request.root, slot, 0, buffer.size);
  }
}

}  // namespace ranks::backends::gloo::detail
