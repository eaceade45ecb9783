#include "ranks/collectives.hpp"

#include <fmt/format.h>

#include "ranks/detail/dispatch.hpp"
#include "ranks/detail/gather_into.hpp"
#include "ranks/init.hpp"

namespace ranks {

using detail::Call;
using detail::GroupImpl;

namespace {

struct Prepared {
  GroupImpl* group;  // null: not distributed
  Call call;
  int size() const { return group ? group->size() : 1; }
  int rank() const { return group ? group->spec.rank : 0; }
};

Prepared prepare(OpKind op, const Group& group, const where_t& where) {
  GroupImpl* g = detail::resolve(group, op, where);
  return {g, Call{op, g, where}};
}

// What an op carries one way: nothing, one tensor or the caller's list. The request is built in
// place, with no temporary lists to move and destroy (every op's hot path).
struct Carries {
  const Tensor* one = nullptr;
  const std::vector<Tensor>* many = nullptr;
  Carries() = default;
  Carries(const Tensor& tensor) : one(&tensor) {}            // NOLINT: implicit on purpose
  Carries(const std::vector<Tensor>& list) : many(&list) {}  // NOLINT: implicit on purpose
  bool none() const { return one == nullptr && many == nullptr; }
  // Inline for one tensor (most ops, a copy of two pointers and their counts); a list goes
  // through the out-of-line copy.
  [[gnu::always_inline]] void into(TensorList& list) const {
    if (one != nullptr) {
      list.push_back(*one);
    } else if (many != nullptr) {
      copy_list(list);
    }
  }
  [[gnu::noinline]] void copy_list(TensorList& list) const {
    list.assign(many->begin(), many->end());
  }
};

// The op's request, built in the backend's draft (Backend::draft): written once, where the op
// keeps it.
[[gnu::always_inline]] inline OpRequest& request(GroupImpl& group, OpKind kind, Carries inputs = {},
                                                 Carries outputs = {}) {
  OpRequest& r = group.backend->draft();
  r.kind = kind;
  if (!inputs.none()) inputs.into(r.inputs);
  if (!outputs.none()) outputs.into(r.outputs);
  return r;
}

// Whether the caller waits for the op at once: the blocking API does, *_async does not. The two
// share one body per op, which passes this on to the backend (OpRequest::blocking).
enum class Waits { Later, AtOnce };

Work submit(GroupImpl& group, OpRequest&& r, const where_t& where, Waits waits) {
  r.blocking = waits == Waits::AtOnce;
  return detail::dispatch(group, std::move(r), where);
}

// Fills an empty output list with tensors like `like`, the rows of one block (a backend gathers
// into them in place, with no staging buffer), or checks the one the caller gave.
void prepare_outputs(const Prepared& p, std::vector<Tensor>& out, const Tensor& like,
                     std::string_view what) {
  if (out.empty()) {
    out = detail::rows_like(like, static_cast<size_t>(p.size()), like.device());
  } else {
    detail::check_list(p.call, out, like, what);
  }
}

}  // namespace

namespace {
Work barrier_op(const Group& group, where_t where, Waits waits) {
  auto p = prepare(OpKind::Barrier, group, where);
  if (!p.group) return Work{};
  return submit(*p.group, std::move(request(*p.group, OpKind::Barrier)), where, waits);
}
}  // namespace

Work barrier_async(const Group& group, where_t where) {
  return barrier_op(group, where, Waits::Later);
}

void barrier(const Group& group, where_t where) { barrier_op(group, where, Waits::AtOnce).wait(); }

namespace {
Work all_reduce_op(Tensor& tensor, ReduceOp op, const Group& group, where_t where, Waits waits) {
  auto p = prepare(OpKind::AllReduce, group, where);
  detail::check_tensor(p.call, tensor, "the tensor");
  detail::check_reduce(p.call, op, tensor.dtype());
  if (p.size() == 1) return Work{};
  auto& r = request(*p.group, OpKind::AllReduce, tensor, tensor);
  r.reduce_op = op;
  return submit(*p.group, std::move(r), where, waits);
}
}  // namespace

Work all_reduce_async(Tensor& tensor, ReduceOp op, const Group& group, where_t where) {
  return all_reduce_op(tensor, op, group, where, Waits::Later);
}

Work all_reduce_async(Tensor& tensor, std::string_view op, const Group& group, where_t where) {
  return all_reduce_op(tensor, parse_reduce_op(op), group, where, Waits::Later);
}

void all_reduce(Tensor& tensor, ReduceOp op, const Group& group, where_t where) {
  all_reduce_op(tensor, op, group, where, Waits::AtOnce).wait();
}

void all_reduce(Tensor& tensor, std::string_view op, const Group& group, where_t where) {
  all_reduce_op(tensor, parse_reduce_op(op), group, where, Waits::AtOnce).wait();
}

namespace {
Work all_gather_op(std::vector<Tensor>& out, const Tensor& in, const Group& group, where_t where,
                   Waits waits) {
  auto p = prepare(OpKind::AllGather, group, where);
  detail::check_tensor(p.call, in, "the input");
  if (p.size() == 1 && out.empty()) {
    out = {in};  // MMEngine: world size 1 returns [data] itself
    return Work{};
  }
  prepare_outputs(p, out, in, "the output list");
  if (p.size() == 1) {
    out[0].copy_(in);
    return Work{};
  }
  return submit(*p.group, std::move(request(*p.group, OpKind::AllGather, in, out)), where, waits);
}
}  // namespace

Work all_gather_async(std::vector<Tensor>& out, const Tensor& in, const Group& group,
                      where_t where) {
  return all_gather_op(out, in, group, where, Waits::Later);
}

std::vector<Tensor> all_gather(const Tensor& in, const Group& group, where_t where) {
  std::vector<Tensor> out;
  all_gather_op(out, in, group, where, Waits::AtOnce).wait();
  return out;
}

namespace {
Work gather_op(std::vector<Tensor>& out, const Tensor& in, int dst, const Group& group,
               where_t where, Waits waits) {
  auto p = prepare(OpKind::Gather, group, where);
  detail::check_tensor(p.call, in, "the input");
  detail::check_root(p.call, dst, "dst");
  if (p.size() == 1 && out.empty()) {
    out = {in};
    return Work{};
  }
  if (p.rank() == dst) {
    prepare_outputs(p, out, in, "the output list");
  } else if (!out.empty()) {
    detail::fail(p.call, fmt::format("only dst {} receives; this rank was given an output list of "
                                     "{} tensors",
                                     dst, out.size()));
  }
  if (p.size() == 1) {
    out[0].copy_(in);
    return Work{};
  }
  auto& r = request(*p.group, OpKind::Gather, in, out);
  r.root = dst;
  return submit(*p.group, std::move(r), where, waits);
}
}  // namespace

Work gather_async(std::vector<Tensor>& out, const Tensor& in, int dst, const Group& group,
                  where_t where) {
  return gather_op(out, in, dst, group, where, Waits::Later);
}

std::vector<Tensor> gather(const Tensor& in, int dst, const Group& group, where_t where) {
  std::vector<Tensor> out;
  gather_op(out, in, dst, group, where, Waits::AtOnce).wait();
  return out;
}

void detail::all_gather_into(std::vector<Tensor>& out, const Tensor& in, const Group& group,
                             where_t where) {
  all_gather_op(out, in, group, where, Waits::AtOnce).wait();
}

void detail::gather_into(std::vector<Tensor>& out, const Tensor& in, int dst, const Group& group,
                         where_t where) {
  gather_op(out, in, dst, group, where, Waits::AtOnce).wait();
}

namespace {
Work broadcast_op(Tensor& tensor, int src, const Group& group, where_t where, Waits waits) {
  auto p = prepare(OpKind::Broadcast, group, where);
  detail::check_tensor(p.call, tensor, "the tensor");
  detail::check_root(p.call, src, "src");
  if (p.size() == 1) return Work{};
  auto& r = request(*p.group, OpKind::Broadcast, tensor, tensor);
  r.root = src;
  return submit(*p.group, std::move(r), where, waits);
}
}  // namespace

Work broadcast_async(Tensor& tensor, int src, const Group& group, where_t where) {
  return broadcast_op(tensor, src, group, where, Waits::Later);
}

void broadcast(Tensor& tensor, int src, const Group& group, where_t where) {
  broadcast_op(tensor, src, group, where, Waits::AtOnce).wait();
}

namespace {
Work reduce_op(Tensor& tensor, int dst, ReduceOp op, const Group& group, where_t where,
               Waits waits) {
  auto p = prepare(OpKind::Reduce, group, where);
  detail::check_tensor(p.call, tensor, "the tensor");
  detail::check_root(p.call, dst, "dst");
  detail::check_reduce(p.call, op, tensor.dtype());
  if (p.size() == 1) return Work{};
  auto& r = request(*p.group, OpKind::Reduce, tensor, tensor);
  r.root = dst;
  r.reduce_op = op;
  return submit(*p.group, std::move(r), where, waits);
}
}  // namespace

Work reduce_async(Tensor& tensor, int dst, ReduceOp op, const Group& group, where_t where) {
  return reduce_op(tensor, dst, op, group, where, Waits::Later);
}

void reduce(Tensor& tensor, int dst, ReduceOp op, const Group& group, where_t where) {
  reduce_op(tensor, dst, op, group, where, Waits::AtOnce).wait();
}

namespace {
Work scatter_op(Tensor& out, const std::vector<Tensor>& in, int src, const Group& group,
                where_t where, Waits waits) {
  auto p = prepare(OpKind::Scatter, group, where);
  detail::check_tensor(p.call, out, "the output");
  detail::check_root(p.call, src, "src");
  if (p.rank() == src) {
    detail::check_list(p.call, in, out, "the input list");
  } else if (!in.empty()) {
    detail::fail(p.call, fmt::format("only src {} sends; this rank was given an input list of {} "
                                     "tensors",
                                     src, in.size()));
  }
  if (p.size() == 1) {
    out.copy_(in[0]);
    return Work{};
  }
  auto& r = request(*p.group, OpKind::Scatter, in, out);
  r.root = src;
  return submit(*p.group, std::move(r), where, waits);
}
}  // namespace

Work scatter_async(Tensor& out, const std::vector<Tensor>& in, int src, const Group& group,
                   where_t where) {
  return scatter_op(out, in, src, group, where, Waits::Later);
}

void scatter(Tensor& out, const std::vector<Tensor>& in, int src, const Group& group,
             where_t where) {
  scatter_op(out, in, src, group, where, Waits::AtOnce).wait();
}

namespace {
Work reduce_scatter_op(Tensor& out, const std::vector<Tensor>& in, ReduceOp op, const Group& group,
                       where_t where, Waits waits) {
  auto p = prepare(OpKind::ReduceScatter, group, where);
  detail::check_tensor(p.call, out, "the output");
  detail::check_list(p.call, in, out, "the input list");
  detail::check_reduce(p.call, op, out.dtype());
  if (p.size() == 1) {
    out.copy_(in[0]);
    return Work{};
  }
  auto& r = request(*p.group, OpKind::ReduceScatter, in, out);
  r.reduce_op = op;
  return submit(*p.group, std::move(r), where, waits);
}
}  // namespace

Work reduce_scatter_async(Tensor& out, const std::vector<Tensor>& in, ReduceOp op,
                          const Group& group, where_t where) {
  return reduce_scatter_op(out, in, op, group, where, Waits::Later);
}

void reduce_scatter(Tensor& out, const std::vector<Tensor>& in, ReduceOp op, const Group& group,
                    where_t where) {
  reduce_scatter_op(out, in, op, group, where, Waits::AtOnce).wait();
}

namespace {
Work all_to_all_op(std::vector<Tensor>& out, const std::vector<Tensor>& in, const Group& group,
                   where_t where, Waits waits) {
  auto p = prepare(OpKind::AllToAll, group, where);
  if (static_cast<int>(in.size()) != p.size()) {
    detail::fail(p.call, fmt::format("the input list has {} tensors; it needs one per group rank "
                                     "({})",
                                     in.size(), p.size()));
  }
  for (size_t i = 0; i < in.size(); ++i) {
    detail::check_tensor(p.call, in[i], fmt::format("the input list[{}]", i));
    if (in[i].dtype() != in[0].dtype()) {
      detail::fail(p.call, fmt::format("the input list mixes {} and {}", in[0].describe(), in[i].describe()));
    }
  }
  if (out.empty()) {
    for (const Tensor& t : in) out.push_back(detail::empty_like(t, t.device()));
  } else if (out.size() != in.size()) {
    detail::fail(p.call, fmt::format("the output list has {} tensors; it needs one per group rank "
                                     "({})",
                                     out.size(), p.size()));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    detail::check_tensor(p.call, out[i], fmt::format("the output list[{}]", i));
    if (out[i].dtype() != in[0].dtype()) {
      detail::fail(p.call, fmt::format("the output list[{}] is {} but the inputs are {}", i,
                                       out[i].describe(), dtype_name(in[0].dtype())));
    }
  }
  if (p.size() == 1) {
    detail::check_same_layout(p.call, out[0], "the output list[0]", in[0], "the input list[0]");
    out[0].copy_(in[0]);
    return Work{};
  }
  return submit(*p.group, std::move(request(*p.group, OpKind::AllToAll, in, out)), where, waits);
}
}  // namespace

Work all_to_all_async(std::vector<Tensor>& out, const std::vector<Tensor>& in, const Group& group,
                      where_t where) {
  return all_to_all_op(out, in, group, where, Waits::Later);
}

void all_to_all(std::vector<Tensor>& out, const std::vector<Tensor>& in, const Group& group,
                where_t where) {
  all_to_all_op(out, in, group, where, Waits::AtOnce).wait();
}

namespace {
Prepared prepare_p2p(OpKind op, const Tensor& tensor, int peer, int tag, const Group& group,
                     const where_t& where) {
  auto p = prepare(op, group, where);
  if (!p.group) {
    detail::fail(p.call, "the process group is not initialised, so there is no peer to talk to");
  }
  detail::check_tensor(p.call, tensor, "the tensor");
  detail::check_peer(p.call, peer, op == OpKind::Send ? "dst" : "src", op == OpKind::Recv);
  detail::check_tag(p.call, tag);
  return p;
}

Work send_op(const Tensor& tensor, int dst, const Group& group, int tag, const where_t& where,
             Waits waits) {
  auto p = prepare_p2p(OpKind::Send, tensor, dst, tag, group, where);
  auto& r = request(*p.group, OpKind::Send, tensor);
  r.root = dst;
  r.tag = tag;
  return submit(*p.group, std::move(r), where, waits);
}

Work recv_op(Tensor& tensor, int src, const Group& group, int tag, const where_t& where,
             Waits waits) {
  auto p = prepare_p2p(OpKind::Recv, tensor, src, tag, group, where);
  auto& r = request(*p.group, OpKind::Recv, {}, tensor);
  r.root = src;
  r.tag = tag;
  return submit(*p.group, std::move(r), where, waits);
}
}  // namespace

Work isend(const Tensor& tensor, int dst, const Group& group, int tag, where_t where) {
  return send_op(tensor, dst, group, tag, where, Waits::Later);
}

Work irecv(Tensor& tensor, int src, const Group& group, int tag, where_t where) {
  return recv_op(tensor, src, group, tag, where, Waits::Later);
}

void send(const Tensor& tensor, int dst, const Group& group, int tag, where_t where) {
  send_op(tensor, dst, group, tag, where, Waits::AtOnce).wait();
}

int recv(Tensor& tensor, int src, const Group& group, int tag, where_t where) {
  Work work = recv_op(tensor, src, group, tag, where, Waits::AtOnce);
  work.wait();
  return work.source_rank();
}

}  // namespace ranks
