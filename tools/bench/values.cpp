#include "values.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace ranks::bench {

double input_value(int rank, int64_t index, ReduceOp op) {
  if (op == ReduceOp::Product) return (rank + index) % 7 == 0 ? 2 : 1;
  return static_cast<double>((rank * 7 + index * 3) % 4);
}

double reduced_value(int n, int64_t index, ReduceOp op) {
  double acc = input_value(0, index, op);
  for (int r = 1; r < n; ++r) {
    const double v = input_value(r, index, op);
    switch (op) {
      case ReduceOp::Product:
        acc *= v;
        break;
      case ReduceOp::Min:
        acc = std::min(acc, v);
        break;
      case ReduceOp::Max:
        acc = std::max(acc, v);
        break;
      case ReduceOp::BAnd:
        acc = static_cast<double>(static_cast<int64_t>(acc) & static_cast<int64_t>(v));
        break;
      case ReduceOp::BOr:
        acc = static_cast<double>(static_cast<int64_t>(acc) | static_cast<int64_t>(v));
        break;
      case ReduceOp::BXor:
        acc = static_cast<double>(static_cast<int64_t>(acc) ^ static_cast<int64_t>(v));
        break;
      default:  // sum, mean
        acc += v;
    }
  }
  return op == ReduceOp::Mean ? acc / n : acc;
}

void fill(Tensor& t, int rank, int64_t first, ReduceOp op) {
  visit_dtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* data = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = input_value(rank, first + i, op);
      if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
        data[i] = T(static_cast<float>(v));
      } else {
        data[i] = static_cast<T>(v);
      }
    }
  });
}

double get_element(const Tensor& t, int64_t i) {
  double value = 0;
  visit_dtype(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
      value = static_cast<float>(t.data<T>()[i]);
    } else {
      value = static_cast<double>(t.data<T>()[i]);
    }
  });
  return value;
}

// The dtype's rounding of `expected` (plus slack for a mean computed as sum, then divide).
double tolerance(DType dtype, double expected) {
  const double magnitude = std::max(1.0, std::abs(expected));
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16:
      return magnitude * 1e-2;
    case DType::Float32:
      return magnitude * 1e-6;
    case DType::Float64:
      return magnitude * 1e-12;
    default:
      return 0;
  }
}

}  // namespace ranks::bench
