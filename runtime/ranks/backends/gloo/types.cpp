#include "ranks/backends/gloo/types.hpp"

#include <cstring>

#include "ranks/detail/reduce.hpp"

namespace ranks::backends::gloo::detail {

ReduceFunction reduce_function(DType dtype, ReduceOp op) {
  return [dtype, op](void* out, const void* a, const void* b, size_t n) {
    const auto count = static_cast<int64_t>(n);
    // Every op is commutative (sum, product, min, max and the bitwise ones; min/max return NaN
    // when either side is NaN), so which operand already sits in out does not matter.
    if (out == a) {
      ranks::detail::reduce_into(out, b, count, dtype, op);
    } else if (out == b) {
      ranks::detail::reduce_into(out, a, count, dtype, op);
    } else {
      std::memcpy(out, a, n * dtype_size(dtype));
      ranks::detail::reduce_into(out, b, count, dtype, op);
    }
  };
}

void finish_mean(Tensor& t, ReduceOp op, int group_size) {
  if (op != ReduceOp::Mean) return;
  ranks::detail::divide_by(t.data_ptr(), t.numel(), t.dtype(), group_size);
}

}  // namespace ranks::backends::gloo::detail
