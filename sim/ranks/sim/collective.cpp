#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ranks/detail/reduce.hpp"
#include "ranks/errors.hpp"
#include "ranks/sim/comm.hpp"
#include "ranks/sim/prefetch.hpp"

namespace ranks::sim::detail {

namespace {

void copy(Tensor& dst, const Tensor& src) {
  if (src.nbytes() > 0) std::memcpy(dst.data_ptr(), src.data_ptr(), src.nbytes());
}

// Reading rank r's tensor of an op waits on two misses once thousands of ranks' requests no
// longer fit in cache: the request's line that holds the tensor, then the tensor's data. Loading
// the first `2 * stage` ranks ahead and the second (through the first) `stage` ahead overlaps
// them with the ranks in between.
constexpr size_t stage = 8;

template <class Pick>
void prefetch_operand(size_t r, size_t ranks, Pick tensor_of) {
  if (r + 2 * stage < ranks) prefetch_range(&tensor_of(r + 2 * stage), sizeof(Tensor));
  if (r + stage < ranks) prefetch_range(tensor_of(r + stage).data_ptr(), kPrefetchLine);
}

// Folds rank 0's tensor `first` and the bytes of ranks 1.. (bytes_of(r), of the same dtype and
// size) in rank order into a new tensor; prefetch(r) starts loading what rank r will be read
// from a few ranks early.
template <class Bytes, class Prefetch>
Tensor fold(size_t ranks, ReduceOp op, const Tensor& first, Bytes bytes_of, Prefetch prefetch) {
  Tensor acc = first.clone();
  const ranks::detail::Reducer reduce = ranks::detail::reducer_for(acc.dtype(), op);
  if (acc.numel() > 0) {
    for (size_t r = 1; r < ranks; ++r) {
      prefetch(r);
      reduce(acc.data_ptr(), bytes_of(r), acc.numel());
    }
  }
  if (op == ReduceOp::Mean) {
    ranks::detail::divide_by(acc.data_ptr(), acc.numel(), acc.dtype(), static_cast<int64_t>(ranks));
  }
  return acc;
}

// fold() over the tensors picked by `input(r)`.
template <class Pick>
Tensor fold(size_t ranks, ReduceOp op, Pick input) {
  return fold(
      ranks, op, input(0), [&](size_t r) { return input(r).data_ptr(); },
      [&](size_t r) { prefetch_operand(r, ranks, input); });
}

void check_all_to_all(const std::vector<const OpRequest*>& requests) {
  for (size_t i = 0; i < requests.size(); ++i) {
    for (size_t j = 0; j < requests.size(); ++j) {
      const Tensor& sent = requests[i]->inputs[j];
      const Tensor& room = requests[j]->outputs[i];
      if (sent.numel() != room.numel()) {
        throw Mismatch(fmt::format("rank {} sends {} to rank {}, which has room for {}", i,
                                   sent.describe(), j, room.describe()));
      }
    }
  }
}

// Whether an output shares memory with an input, anywhere in the collective: a program may pass
// one list as both (an all_to_all in place, a scatter into one of its own inputs), and real
// backends then deliver what was sent, so inputs must not be read after outputs are written.
bool outputs_overlap_inputs(const std::vector<const OpRequest*>& requests) {
  struct Span {  // as integers: comparing pointers into different objects is unspecified
    uintptr_t begin;
    uintptr_t end;
    bool output;
  };
  std::vector<Span> spans;
  for (const OpRequest* r : requests) {
    for (const auto* list : {&r->inputs, &r->outputs}) {
      for (const Tensor& t : *list) {
        if (t.nbytes() == 0) continue;
        const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
        spans.push_back({begin, begin + t.nbytes(), list == &r->outputs});
      }
    }
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  uintptr_t inputs_end = 0;  // the furthest end of the inputs and outputs seen so far
  uintptr_t outputs_end = 0;
  for (const Span& s : spans) {
    if (s.begin < (s.output ? inputs_end : outputs_end)) return true;
    uintptr_t& own_end = s.output ? outputs_end : inputs_end;
    own_end = std::max(own_end, s.end);
  }
  return false;
}

// The inputs of the requests, copied when outputs overlap them (see outputs_overlap_inputs).
std::vector<std::vector<Tensor>> inputs_to_read(const std::vector<const OpRequest*>& requests) {
  const bool staged = outputs_overlap_inputs(requests);
  std::vector<std::vector<Tensor>> inputs(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    for (const Tensor& t : requests[r]->inputs) inputs[r].push_back(staged ? t.clone() : t);
  }
  return inputs;
}

}  // namespace

void execute_collective(OpKind op, ReduceOp reduce_op, int root,
                        const std::vector<const OpRequest*>& requests,
                        const std::vector<OperandBytes>& operands, bool move_data) {
  const size_t n = requests.size();
  const auto rooted = static_cast<size_t>(root);
  if (op == OpKind::AllToAll) check_all_to_all(requests);
  if (!move_data) return;
  // The requests hold Tensor handles: writing through a const request's tensor is the point.
  auto out = [&](size_t r, size_t i) -> Tensor& {
    return const_cast<Tensor&>(requests[r]->outputs[i]);
  };
  switch (op) {
    case OpKind::Barrier:
    case OpKind::NewGroup:
    case OpKind::Send:
    case OpKind::Recv:
      return;
    case OpKind::AllReduce: {
      // Every rank's one tensor, in place (op.hpp), of one dtype and size (agree() at arrival):
      // the operands' bytes are all this needs of the requests but the first.
      Tensor acc = fold(
          n, reduce_op, requests[0]->inputs[0], [&](size_t r) { return operands[r].input; },
          [&](size_t r) {
            if (r + stage < n) prefetch_range(operands[r + stage].input, kPrefetchLine);
          });
      for (size_t r = 0; r < n; ++r) {
        if (r + stage < n) prefetch_range(operands[r + stage].output, kPrefetchLine);
        if (acc.nbytes() > 0) std::memcpy(operands[r].output, acc.data_ptr(), acc.nbytes());
      }
      return;
    }
    case OpKind::Reduce: {
      Tensor acc =
          fold(n, reduce_op, [&](size_t r) -> const Tensor& { return requests[r]->inputs[0]; });
      copy(out(rooted, 0), acc);
      return;
    }
    case OpKind::Broadcast:
      for (size_t r = 0; r < n; ++r) {
        if (r != rooted) copy(out(r, 0), requests[rooted]->inputs[0]);
      }
      return;
    case OpKind::AllGather:
      for (size_t r = 0; r < n; ++r) {
        for (size_t j = 0; j < n; ++j) copy(out(r, j), requests[j]->inputs[0]);
      }
      return;
    case OpKind::Gather:
      for (size_t j = 0; j < n; ++j) copy(out(rooted, j), requests[j]->inputs[0]);
      return;
    case OpKind::Scatter: {
      const auto inputs = inputs_to_read(requests);
      for (size_t r = 0; r < n; ++r) copy(out(r, 0), inputs[rooted][r]);
      return;
    }
    case OpKind::ReduceScatter:
      for (size_t j = 0; j < n; ++j) {
        Tensor acc =
            fold(n, reduce_op, [&](size_t r) -> const Tensor& { return requests[r]->inputs[j]; });
        copy(out(j, 0), acc);
      }
      return;
    case OpKind::AllToAll: {
      const auto inputs = inputs_to_read(requests);
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) copy(out(j, i), inputs[i][j]);
      }
      return;
    }
  }
}

}  // namespace ranks::sim::detail
