#include "values.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace ranks::bench {

double input_value(int rank, int64_t index, ReduceOp op) {
  // At most two 2s per index whatever the world size: a product is 1, 2 or 4 in every dtype.
  if (op == ReduceOp::Product) return rank < 14 && (rank + index) % 7 == 0 ? 2 : 1;
  return static_cast<double>((rank * 7 + index * 3) % 4);
}

namespace {
// An exact integer as a `bits`-wide integer stores it: modulo 2^bits, as the reductions of every
// backend wrap (int8 sums of 0-3 wrap from ~86 ranks on).
double wrapped(double exact, int bits, bool is_signed) {
  const double span = std::ldexp(1.0, bits);
  double v = std::fmod(exact, span);
  if (v < 0) v += span;
  if (is_signed && v >= span / 2) v -= span;
  return v;
}
}  // namespace

double reduced_value(int n, int64_t index, ReduceOp op, DType dtype) {
  if (op == ReduceOp::Mean && !is_floating(dtype) && dtype != DType::Bool) {
    // Integer mean: the sum as the dtype holds it, divided, truncated toward zero.
    return std::trunc(reduced_value(n, index, ReduceOp::Sum, dtype) / n);
  }
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
  if (op == ReduceOp::Mean) return acc / n;
  switch (dtype) {
    case DType::UInt8:
      return wrapped(acc, 8, false);
    case DType::Int8:
      return wrapped(acc, 8, true);
    case DType::Int32:
      return wrapped(acc, 32, true);
    default:  // int64 and the floats hold these small sums exactly
      return acc;
  }
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
