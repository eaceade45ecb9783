#include "ranks/detail/reduce.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <type_traits>

#include "ranks/errors.hpp"

namespace ranks::detail {

namespace {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

// Fixed-size blocks with no loop-carried dependency let g++ vectorise at -O2, whose cheap cost
// model refuses loops that need an alias check or a scalar epilogue. ivdep holds because acc and
// src are either the same buffer or disjoint.
template <class T, class F>
void apply(void* acc, const void* src, int64_t count, F f) {
  constexpr int64_t kBlock = 64 / sizeof(T);
  T* a = static_cast<T*>(acc);
  const T* s = static_cast<const T*>(src);
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
#pragma GCC ivdep
    for (int64_t j = 0; j < kBlock; ++j) a[i + j] = f(a[i + j], s[i + j]);
  }
  for (; i < count; ++i) a[i] = f(a[i], s[i]);
}

// Picks b when it is below a or NaN, so NaN in either operand wins.
template <class T>
T nan_min(T a, T b) {
  return (b < a || b != b) ? b : a;
}
template <class T>
T nan_max(T a, T b) {
  return (b > a || b != b) ? b : a;
}

template <class T, class F>
void kernel(void* acc, const void* src, int64_t count) {
  apply<T>(acc, src, count, F{});
}

// Bool elements are read as bytes: a byte other than 0 or 1 (from a borrowed buffer) would be
// undefined behaviour as bool, and the result is always normalised to 0 or 1.
struct AnyTrue {
  uint8_t operator()(uint8_t a, uint8_t b) const { return (a | b) != 0; }
};
struct BothTrue {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a != 0 && b != 0; }
};
struct OneTrue {
  uint8_t operator()(uint8_t a, uint8_t b) const { return (a != 0) != (b != 0); }
};

Reducer bool_reducer(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
    case ReduceOp::Max:
    case ReduceOp::BOr:
      return kernel<uint8_t, AnyTrue>;
    case ReduceOp::Product:
    case ReduceOp::Min:
    case ReduceOp::BAnd:
      return kernel<uint8_t, BothTrue>;
    case ReduceOp::BXor:
      return kernel<uint8_t, OneTrue>;
  }
  return nullptr;
}

// Signed overflow is undefined; unsigned arithmetic wraps, and converting back is modular since
// C++20. 8-bit operands promote to int, whose range holds any 8-bit product.
template <class T>
struct WrappingSum {
  using U = std::make_unsigned_t<T>;
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  }
};
template <class T>
struct WrappingProduct {
  using U = std::make_unsigned_t<T>;
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  }
};
template <class T>
struct Min {
  T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T>
struct Max {
  T operator()(T a, T b) const { return b > a ? b : a; }
};
template <class T>
struct BitAnd {
  T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
template <class T>
struct BitOr {
  T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
template <class T>
struct BitXor {
  T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};

template <class T>
Reducer integer_reducer(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return kernel<T, WrappingSum<T>>;
    case ReduceOp::Product:
      return kernel<T, WrappingProduct<T>>;
    case ReduceOp::Min:
      return kernel<T, Min<T>>;
    case ReduceOp::Max:
      return kernel<T, Max<T>>;
    case ReduceOp::BAnd:
      return kernel<T, BitAnd<T>>;
    case ReduceOp::BOr:
      return kernel<T, BitOr<T>>;
    case ReduceOp::BXor:
      return kernel<T, BitXor<T>>;
  }
  return nullptr;
}

// T is float or double, or a 16-bit float computed through float: float's 24 bits are at least
// 2p + 2 for binary16 (p = 11) and bfloat16 (p = 8), so rounding the float result again gives
// the correctly rounded 16-bit result for +, * and /.
template <class T>
using Computed = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
struct Sum {
  T operator()(T a, T b) const { return T(Computed<T>(a) + Computed<T>(b)); }
};
template <class T>
struct Product {
  T operator()(T a, T b) const { return T(Computed<T>(a) * Computed<T>(b)); }
};
template <class T>
struct NanMin {
  T operator()(T a, T b) const { return T(nan_min(Computed<T>(a), Computed<T>(b))); }
};
template <class T>
struct NanMax {
  T operator()(T a, T b) const { return T(nan_max(Computed<T>(a), Computed<T>(b))); }
};

template <class T>
Reducer floating_reducer(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return kernel<T, Sum<T>>;
    case ReduceOp::Product:
      return kernel<T, Product<T>>;
    case ReduceOp::Min:
      return kernel<T, NanMin<T>>;
    case ReduceOp::Max:
      return kernel<T, NanMax<T>>;
    case ReduceOp::BAnd:
    case ReduceOp::BOr:
    case ReduceOp::BXor:
      break;  // rejected by reducer_for before dispatch
  }
  return nullptr;
}

void check_count(int64_t count, const char* what) {
  if (count < 0) {
    throw InvalidArgument(
        fmt::format("{}: element count {} is negative: it must be >= 0", what, count));
  }
}

}  // namespace

Reducer reducer_for(DType dtype, ReduceOp op) {
  if (!reduce_op_supports(op, dtype)) {
    throw InvalidArgument(why_reduce_op_unsupported(op, dtype));
  }
  return visit_dtype(dtype, [op](auto tag) -> Reducer {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return bool_reducer(op);
    } else if constexpr (std::is_integral_v<T>) {
      return integer_reducer<T>(op);
    } else {
      return floating_reducer<T>(op);
    }
  });
}

void reduce_into(void* acc, const void* src, int64_t count, DType dtype, ReduceOp op) {
  check_count(count, "reduce_into()");
  const Reducer reduce = reducer_for(dtype, op);
  if (count > 0) reduce(acc, src, count);
}

void divide_by(void* acc, int64_t count, DType dtype, int64_t divisor) {
  check_count(count, "divide_by()");
  if (divisor <= 0) {
    throw InvalidArgument(
        fmt::format("divide_by(): divisor {} is not positive: it must be >= 1", divisor));
  }
  if (count == 0) return;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // A bool mean is true when any rank was true (MMEngine's float cast of a nonzero mean).
    } else if constexpr (std::is_integral_v<T>) {
      // The quotient of a T by a positive divisor always fits back in T.
      apply<T>(acc, acc, count, [divisor](T a, T) { return static_cast<T>(a / divisor); });
    } else if constexpr (is_half_v<T>) {
      const auto d = static_cast<float>(divisor);
      apply<T>(acc, acc, count, [d](T a, T) { return T(static_cast<float>(a) / d); });
    } else {
      const auto d = static_cast<T>(divisor);
      apply<T>(acc, acc, count, [d](T a, T) { return a / d; });
    }
  });
}

}  // namespace ranks::detail
