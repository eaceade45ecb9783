#include "ranks/detail/check.hpp"

#include <fmt/format.h>

#include <string_view>

#include "ranks/context.hpp"
#include "ranks/detail/rejected_op.hpp"
#include "ranks/errors.hpp"

namespace ranks::detail {

std::string where_str(const std::source_location& where) {
  std::string_view file = where.file_name();
  if (auto slash = file.find_last_of('/'); slash != std::string_view::npos) {
    file = file.substr(slash + 1);
  }
  return fmt::format("{}:{}", file, where.line());
}

std::string Call::describe() const {
  const std::string_view what = name.empty() ? op_name(op) : name;
  if (group == nullptr) return fmt::format("{} at {}", what, where_str(where));
  return fmt::format("{} on group '{}' (rank {} of {}) at {}", what, group->spec.name,
                     group->spec.rank, group->size(), where_str(where));
}

void fail(const Call& call, const std::string& message) {
  const std::string text = fmt::format("{}: {}", call.describe(), message);
  if (call.group == nullptr) throw InvalidArgument(text);
  const bool p2p = is_point_to_point(call.op);
  throw Rejection<InvalidArgument>(
      text, RejectedOp{call.op, call.name, call.group->spec.name,
                       static_cast<int64_t>(p2p ? call.group->next_p2p_seq
                                                : call.group->next_collective_seq),
                       call.where});
}

void fail_undefined(const Call& call, std::string_view what) {
  fail(call, fmt::format("{} is an undefined tensor", what));
}

void check_own_gpu(const Call& call, const TensorList& inputs, const TensorList& outputs,
                   int local_rank) {
  for (const TensorList* list : {&inputs, &outputs}) {
    for (const Tensor& t : *list) {
      if (t.device().type == Device::Type::CUDA && t.device().index != local_rank) {
        fail(call, fmt::format("tensor {}, but this rank's {} device is cuda:{} (its local rank: "
                               "one GPU per rank); move it with .to(ranks::comm_device())",
                               t.describe(), call.group ? call.group->backend_name : "", local_rank));
      }
    }
  }
}

void check_root(const Call& call, int root, std::string_view what) {
  int size = call.group ? call.group->size() : 1;
  if (root < 0 || root >= size) {
    fail(call, fmt::format("{} {} is out of range [0, {}) (ranks are ranks within the group)", what,
                           root, size));
  }
}

void check_peer(const Call& call, int peer, std::string_view what, bool allow_any_source) {
  int size = call.group ? call.group->size() : 1;
  if (allow_any_source && peer == -1) return;
  if (peer < 0 || peer >= size) {
    fail(call, fmt::format("{} {} is out of range [0, {}){}", what, peer, size,
                           allow_any_source ? " (or any_source)" : ""));
  }
  if (call.group && peer == call.group->spec.rank) {
    fail(call, fmt::format("{} {} is this rank itself", what, peer));
  }
}

void check_tag(const Call& call, int tag) {
  if (tag < 0) fail(call, fmt::format("tag {} is negative", tag));
}

void fail_reduce(const Call& call, ReduceOp op, DType dtype) {
  fail(call, why_reduce_op_unsupported(op, dtype));
}

void check_list(const Call& call, const std::vector<Tensor>& list, const Tensor& like,
                std::string_view what) {
  int size = call.group ? call.group->size() : 1;
  if (static_cast<int>(list.size()) != size) {
    fail(call, fmt::format("{} has {} tensors; it needs one per group rank ({})", what, list.size(),
                           size));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    auto item = fmt::format("{}[{}]", what, i);
    check_tensor(call, list[i], item);
    check_same_layout(call, list[i], item, like, "the input");
  }
}

void check_same_layout(const Call& call, const Tensor& a, std::string_view a_what, const Tensor& b,
                       std::string_view b_what) {
  if (a.dtype() != b.dtype() || a.numel() != b.numel()) {
    fail(call, fmt::format("{} is {} but {} is {}", a_what, a.describe(), b_what, b.describe()));
  }
}

}  // namespace ranks::detail
