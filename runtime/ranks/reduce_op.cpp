#include "ranks/reduce_op.hpp"

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include "ranks/errors.hpp"

namespace ranks {

namespace {

constexpr std::array<std::pair<std::string_view, ReduceOp>, 8> kReduceOps = {{
    {"sum", ReduceOp::Sum},
    {"mean", ReduceOp::Mean},
    {"product", ReduceOp::Product},
    {"min", ReduceOp::Min},
    {"max", ReduceOp::Max},
    {"band", ReduceOp::BAnd},
    {"bor", ReduceOp::BOr},
    {"bxor", ReduceOp::BXor},
}};

// ASCII-only on purpose: std::tolower depends on the C locale.
bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

}  // namespace

ReduceOp parse_reduce_op(std::string_view name) {
  for (const auto& [op_name, op] : kReduceOps) {
    if (equals_ignoring_case(name, op_name)) return op;
  }
  throw InvalidArgument(fmt::format(
      "unknown reduce op \"{}\": valid ops are sum, mean, product, min, max, band, bor, bxor "
      "(case-insensitive)",
      name));
}

std::string_view reduce_op_name(ReduceOp op) {
  for (const auto& [op_name, candidate] : kReduceOps) {
    if (candidate == op) return op_name;
  }
  return "unknown";
}

bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::BAnd || op == ReduceOp::BOr || op == ReduceOp::BXor;
}

bool reduce_op_supports(ReduceOp op, DType dtype) {
  if (op == ReduceOp::Mean) return dtype != DType::Bool;
  return !(is_bitwise(op) && is_floating(dtype));
}

std::string why_reduce_op_unsupported(ReduceOp op, DType dtype) {
  if (op == ReduceOp::Mean) {
    return "reduce op 'mean' is not defined for bool tensors (torch refuses AVG on bool too): "
           "use max or sum for any, min or product for all";
  }
  return fmt::format(
      "reduce op '{}' is bitwise and the tensor is {}; bitwise ops need an integer or bool tensor",
      reduce_op_name(op), dtype_name(dtype));
}

}  // namespace ranks
