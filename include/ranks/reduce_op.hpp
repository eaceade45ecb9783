#pragma once
// Reduction operators, with MMEngine's lower-case names.

#include <string>
#include <string_view>

#include "ranks/dtype.hpp"

namespace ranks {

enum class ReduceOp : uint8_t { Sum, Mean, Product, Min, Max, BAnd, BOr, BXor };

// MMEngine names, case-insensitive: sum, mean, product, min, max, band, bor, bxor.
// Anything else raises InvalidArgument listing the valid names.
ReduceOp parse_reduce_op(std::string_view name);
std::string_view reduce_op_name(ReduceOp);  // "sum", "mean", ...
bool is_bitwise(ReduceOp);                  // BAnd, BOr, BXor
// Whether op is defined for dtype: bitwise ops on floating tensors are not, nor mean on bool
// (torch refuses AVG on bool; any "mean" of truth values would be a silent OR or AND).
bool reduce_op_supports(ReduceOp, DType);
// Why not, for messages: "reduce op 'band' is bitwise and the tensor is float32; ...".
std::string why_reduce_op_unsupported(ReduceOp, DType);

}  // namespace ranks
