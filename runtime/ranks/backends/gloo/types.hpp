#pragma once
// How our dtypes and reduce ops reach gloo.

#include <cstddef>
#include <cstdint>
#include <functional>

#include "ranks/dtype.hpp"
#include "ranks/reduce_op.hpp"
#include "ranks/tensor.hpp"

namespace ranks::backends::gloo::detail {

// gloo's algorithms use their element type only for sizeof (segment sizes and offsets); all
// arithmetic happens in the reduce function below, which knows the real dtype. So one unsigned
// word per element size is enough, and gloo's templates are instantiated four times, not nine.
template <class F>
decltype(auto) visit_word(DType dtype, F&& f) {
  switch (dtype_size(dtype)) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

// gloo's reduction function: out[i] = a[i] op b[i] for n elements, where out may be a or b.
// Built on ranks::detail::reduce_into, so every dtype (float16, bfloat16 and bool included) and
// every op computes exactly as in the simulator. Mean reduces like sum; see finish_mean.
using ReduceFunction = std::function<void(void*, const void*, const void*, size_t)>;
ReduceFunction reduce_function(DType dtype, ReduceOp op);

// The second half of mean: divides t by the group size (a no-op for every other op).
void finish_mean(Tensor& t, ReduceOp op, int group_size);

}  // namespace ranks::backends::gloo::detail
