#pragma once
// The one argument checker. Every API function validates through here, so every message has the
// same shape: "<op> on group '<name>' (rank r of n) at file.cpp:42: <what is wrong>".

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/context.hpp"
#include "ranks/op.hpp"
#include "ranks/reduce_op.hpp"
#include "ranks/tensor.hpp"
#include "ranks/tensor_list.hpp"

namespace ranks::detail {

std::string where_str(const std::source_location&);  // "file.cpp:42"

struct Call {
  OpKind op;
  const GroupImpl* group;  // null when not distributed
  std::source_location where;
  std::string_view name = {};  // what messages call the op, when not op's own name
                               // ("gather_object" for an object collective's tensor op)
  std::string describe() const;
};

[[noreturn]] void fail(const Call&, const std::string& message);

[[noreturn]] void fail_undefined(const Call&, std::string_view what);
[[noreturn]] void fail_reduce(const Call&, ReduceOp, DType);

// The two checks every all_reduce and reduce makes are inline, their messages out of line.
inline void check_tensor(const Call& call, const Tensor& t, std::string_view what) {
  if (!t.defined()) fail_undefined(call, what);
}
void check_root(const Call&, int root, std::string_view what);  // what: "src" | "dst"
void check_peer(const Call&, int peer, std::string_view what, bool allow_any_source);
void check_tag(const Call&, int tag);
inline void check_reduce(const Call& call, ReduceOp op, DType dtype) {
  if (!reduce_op_supports(op, dtype)) fail_reduce(call, op, dtype);
}
// Under a backend with one GPU per rank (nccl): every cuda tensor is on cuda:<local_rank>.
// Out of line: dispatch calls it only for ops whose tensors are on cuda.
void check_own_gpu(const Call&, const TensorList& inputs, const TensorList& outputs,
                   int local_rank);
// A list of one tensor per group rank, each with like's dtype and element count.
void check_list(const Call&, const std::vector<Tensor>& list, const Tensor& like,
                std::string_view what);
void check_same_layout(const Call&, const Tensor& a, std::string_view a_what, const Tensor& b,
                       std::string_view b_what);

}  // namespace ranks::detail
