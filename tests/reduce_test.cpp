// Expected values come from a reference computed here in int128 / long double with explicit
// wrapping and rounding, sharing nothing with reduce.cpp but the IEEE hardware itself.

#include "ranks/detail/reduce.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/reduce_op.hpp"

namespace ranks {
namespace {

using detail::divide_by;
using detail::reduce_into;

static_assert(std::endian::native == std::endian::little, "the byte packing below assumes it");
// long double's 64 bits are >= 2p + 2 for binary16, bfloat16 and binary32, so rounding a long
// double result once more gives the correctly rounded result for them.
static_assert(std::numeric_limits<long double>::digits >= 64, "needs x87 extended precision");

__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;

constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product, ReduceOp::Min,
                             ReduceOp::Max, ReduceOp::BAnd, ReduceOp::BOr,     ReduceOp::BXor};

int bits_of(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 8;
    case DType::Float16:
    case DType::BFloat16:
      return 16;
    case DType::Int32:
    case DType::Float32:
      return 32;
    case DType::Int64:
    case DType::Float64:
      return 64;
  }
  return 0;
}

std::vector<unsigned char> pack(const std::vector<uint64_t>& elements, DType dtype) {
  const size_t size = static_cast<size_t>(bits_of(dtype) / 8);
  std::vector<unsigned char> out(elements.size() * size);
  for (size_t i = 0; i < elements.size(); ++i) std::memcpy(&out[i * size], &elements[i], size);
  return out;
}

uint64_t element(const std::vector<unsigned char>& bytes, size_t i, DType dtype) {
  const size_t size = static_cast<size_t>(bits_of(dtype) / 8);
  uint64_t bits = 0;
  std::memcpy(&bits, &bytes[i * size], size);
  return bits;
}

// --- integers ---

bool is_signed_int(DType dtype) {
  return dtype == DType::Int8 || dtype == DType::Int32 || dtype == DType::Int64;
}

int128 to_int(uint64_t bits, DType dtype) {
  const int w = bits_of(dtype);
  const uint128 u = w == 64 ? bits : (bits & ((uint64_t{1} << w) - 1));
  if (is_signed_int(dtype) && (u >> (w - 1)) != 0) return static_cast<int128>(u) - (int128{1} << w);
  return static_cast<int128>(u);
}

// v modulo 2^w, as the dtype reads it: two's complement wrap done by hand.
int128 wrap(int128 v, DType dtype) {
  const int w = bits_of(dtype);
  const int128 modulus = int128{1} << w;
  int128 m = v % modulus;
  if (m < 0) m += modulus;
  if (is_signed_int(dtype) && m >= modulus / 2) m -= modulus;
  return m;
}

int128 reference_int(ReduceOp op, int128 a, int128 b, DType dtype) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return wrap(a + b, dtype);
    case ReduceOp::Product:
      return wrap(a * b, dtype);
    case ReduceOp::Min:
      return a < b ? a : b;
    case ReduceOp::Max:
      return a > b ? a : b;
    case ReduceOp::BAnd:
      return wrap(a & b, dtype);
    case ReduceOp::BOr:
      return wrap(a | b, dtype);
    case ReduceOp::BXor:
      return wrap(a ^ b, dtype);
  }
  return 0;
}

// --- floating point ---

long double decode_float(uint64_t bits, DType dtype) {
  const long double nan = std::numeric_limits<long double>::quiet_NaN();
  const long double inf = std::numeric_limits<long double>::infinity();
  if (dtype == DType::Float32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
  if (dtype == DType::Float64) return std::bit_cast<double>(bits);
  const int mantissa_bits = dtype == DType::Float16 ? 10 : 7;
  const int exponent_bits = 15 - mantissa_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const long double sign = (bits & 0x8000) != 0 ? -1.0L : 1.0L;
  const int exponent = static_cast<int>((bits >> mantissa_bits) & ((1u << exponent_bits) - 1));
  const auto mantissa = static_cast<long double>(bits & ((1u << mantissa_bits) - 1));
  if (exponent == (1 << exponent_bits) - 1) return mantissa == 0 ? sign * inf : nan;
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - bias - mantissa_bits);
  return sign *
         std::ldexp(mantissa + std::ldexp(1.0L, mantissa_bits), exponent - bias - mantissa_bits);
}

// Round to nearest even into a format with p significand bits, minimum normal exponent emin and
// largest finite value max_finite.
long double round_to_format(long double x, int p, int emin, long double max_finite) {
  if (std::isnan(x) || std::isinf(x)) return x;
  const int e = x == 0 ? emin : std::max(std::ilogb(x), emin);
  const long double ulp = std::ldexp(1.0L, e - (p - 1));
  const long double q = std::nearbyint(x / ulp) * ulp;
  if (std::fabs(q) > max_finite)
    return std::copysign(std::numeric_limits<long double>::infinity(), x);
  return q;
}

long double round_to(long double x, DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return round_to_format(x, 11, -14, 65504.0L);
    case DType::BFloat16:
      return round_to_format(x, 8, -126, std::ldexp(255.0L, 120));
    case DType::Float32:
      return static_cast<float>(x);
    case DType::Float64:
      return static_cast<double>(x);
    default:
      return x;
  }
}

long double reference_float(ReduceOp op, long double a, long double b, DType dtype) {
  const long double nan = std::numeric_limits<long double>::quiet_NaN();
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return round_to(a + b, dtype);
    case ReduceOp::Product:
      return round_to(a * b, dtype);
    case ReduceOp::Min:
      return std::isnan(a) || std::isnan(b) ? nan : std::fmin(a, b);
    case ReduceOp::Max:
      return std::isnan(a) || std::isnan(b) ? nan : std::fmax(a, b);
    default:
      return nan;
  }
}

// --- inputs ---

std::vector<uint64_t> specials(DType dtype) {
  auto f32 = [](float f) -> uint64_t { return std::bit_cast<uint32_t>(f); };
  auto f64 = [](double d) -> uint64_t { return std::bit_cast<uint64_t>(d); };
  auto i = [dtype](int64_t v) -> uint64_t {
    const int w = bits_of(dtype);
    return w == 64 ? static_cast<uint64_t>(v) : static_cast<uint64_t>(v) & ((uint64_t{1} << w) - 1);
  };
  using F = std::numeric_limits<float>;
  using D = std::numeric_limits<double>;
  switch (dtype) {
    case DType::Bool:
      return {0, 1};
    case DType::UInt8:
      return {0, 1, 2, 16, 17, 127, 128, 200, 254, 255};
    case DType::Int8:
      return {i(0), i(1), i(-1), i(2), i(-2), i(16), i(127), i(-128), i(126), i(-127)};
    case DType::Int32:
      return {i(0),
              i(1),
              i(-1),
              i(2),
              i(65536),
              i(-65537),
              i(INT32_MAX),
              i(INT32_MIN),
              i(INT32_MAX - 1),
              i(INT32_MIN + 1)};
    case DType::Int64:
      return {i(0),
              i(1),
              i(-1),
              i(2),
              i(3037000500),
              i(-4294967296),
              i(INT64_MAX),
              i(INT64_MIN),
              i(INT64_MAX - 1),
              i(INT64_MIN + 1)};
    case DType::Float16:
      return {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00,
              0x7bff, 0xfbff, 0x0001, 0x8001, 0x0400, 0x3555, 0x5640};
    case DType::BFloat16:
      return {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0,
              0x7f7f, 0xff7f, 0x0001, 0x0080, 0x3eab, 0x42c8, 0xffc1};
    case DType::Float32:
      return {f32(0.0f),          f32(-0.0f),           f32(1.0f),           f32(-1.0f),
              f32(F::infinity()), f32(-F::infinity()),  f32(F::quiet_NaN()), f32(F::max()),
              f32(-F::max()),     f32(F::denorm_min()), f32(F::min()),       f32(0.1f),
              f32(3.0f),          f32(16777216.0f)};
    case DType::Float64:
      return {f64(0.0),
              f64(-0.0),
              f64(1.0),
              f64(-1.0),
              f64(D::infinity()),
              f64(-D::infinity()),
              f64(D::quiet_NaN()),
              f64(D::max()),
              f64(-D::max()),
              f64(D::denorm_min()),
              f64(D::min()),
              f64(0.5),
              f64(3.0)};
  }
  return {};
}

uint64_t random_element(DType dtype, std::mt19937_64& rng) {
  const uint64_t r = rng();
  switch (dtype) {
    case DType::Bool:
      return r & 1;
    case DType::Float64: {
      // 32 significant bits and a narrow exponent range keep sums and products exact in long
      // double, whose single rounding to double is then the reference.
      const auto mantissa = static_cast<long double>((r >> 32) | 0x80000000u);
      const int exponent = static_cast<int>(r % 21) - 10 - 31;
      const long double v = std::ldexp(mantissa, exponent) * ((r & 0x100) != 0 ? -1 : 1);
      return std::bit_cast<uint64_t>(static_cast<double>(v));
    }
    default: {
      const int w = bits_of(dtype);
      return w == 64 ? r : r & ((uint64_t{1} << w) - 1);
    }
  }
}

// Every pair of special values, then random pairs.
void make_inputs(DType dtype, std::vector<uint64_t>& a, std::vector<uint64_t>& b) {
  const std::vector<uint64_t> s = specials(dtype);
  for (uint64_t x : s) {
    for (uint64_t y : s) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  std::mt19937_64 rng(static_cast<uint64_t>(dtype) * 7919 + 1);
  for (int k = 0; k < 1000; ++k) {
    a.push_back(random_element(dtype, rng));
    b.push_back(random_element(dtype, rng));
  }
}

std::string hex(uint64_t bits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(bits));
  return buf;
}

class ReduceMatrix : public ::testing::TestWithParam<std::tuple<DType, ReduceOp>> {};

TEST_P(ReduceMatrix, MatchesReference) {
  const auto [dtype, op] = GetParam();
  std::vector<uint64_t> a;
  std::vector<uint64_t> b;
  make_inputs(dtype, a, b);
  std::vector<unsigned char> acc = pack(a, dtype);
  const std::vector<unsigned char> src = pack(b, dtype);
  const auto count = static_cast<int64_t>(a.size());

  const bool floating = dtype == DType::Float16 || dtype == DType::BFloat16 ||
                        dtype == DType::Float32 || dtype == DType::Float64;
  const bool bitwise = op == ReduceOp::BAnd || op == ReduceOp::BOr || op == ReduceOp::BXor;
  if ((floating && bitwise) || (dtype == DType::Bool && op == ReduceOp::Mean)) {
    EXPECT_THROW(reduce_into(acc.data(), src.data(), count, dtype, op), InvalidArgument);
    EXPECT_EQ(acc, pack(a, dtype)) << "a rejected reduction must not touch acc";
    return;
  }
  reduce_into(acc.data(), src.data(), count, dtype, op);

  int failures = 0;
  for (size_t i = 0; i < a.size() && failures < 10; ++i) {
    const uint64_t out = element(acc, i, dtype);
    const std::string where = "a=" + hex(a[i]) + " b=" + hex(b[i]) + " out=" + hex(out);
    bool ok = true;
    if (dtype == DType::Bool) {
      const bool x = a[i] != 0;
      const bool y = b[i] != 0;
      bool expected = false;
      switch (op) {
        case ReduceOp::Sum:
        case ReduceOp::Mean:
        case ReduceOp::Max:
        case ReduceOp::BOr:
          expected = x || y;
          break;
        case ReduceOp::Product:
        case ReduceOp::Min:
        case ReduceOp::BAnd:
          expected = x && y;
          break;
        case ReduceOp::BXor:
          expected = x != y;
          break;
      }
      ok = out == (expected ? 1u : 0u);
    } else if (!floating) {
      const int128 expected = reference_int(op, to_int(a[i], dtype), to_int(b[i], dtype), dtype);
      ok = to_int(out, dtype) == expected;
    } else {
      const long double expected =
          reference_float(op, decode_float(a[i], dtype), decode_float(b[i], dtype), dtype);
      const long double actual = decode_float(out, dtype);
      if (std::isnan(expected)) {
        ok = std::isnan(actual);
      } else {
        ok = actual == expected;
        // Sum and product also fix the sign of a zero result.
        if (op != ReduceOp::Min && op != ReduceOp::Max) {
          ok = ok && std::signbit(actual) == std::signbit(expected);
        }
      }
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << where;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<DType, ReduceOp>>& info) {
  return std::string(dtype_name(std::get<0>(info.param))) + "_" +
         std::string(reduce_op_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllDTypesAllOps, ReduceMatrix,
                         ::testing::Combine(::testing::ValuesIn(all_dtypes),
                                            ::testing::ValuesIn(kOps)),
                         case_name);

TEST(Reduce, NarrowIntegersWrapOnOverflow) {
  int8_t s8[] = {127, -128, 16, -128, 100};
  const int8_t s8_src[] = {1, -1, 16, -1, 100};
  reduce_into(s8, s8_src, 2, DType::Int8, ReduceOp::Sum);
  EXPECT_EQ(s8[0], -128);
  EXPECT_EQ(s8[1], 127);
  reduce_into(s8 + 2, s8_src + 2, 3, DType::Int8, ReduceOp::Product);
  EXPECT_EQ(s8[2], 0);     // 256
  EXPECT_EQ(s8[3], -128);  // 128
  EXPECT_EQ(s8[4], 16);    // 10000 = 39 * 256 + 16

  uint8_t u8[] = {255, 200, 16, 255};
  const uint8_t u8_src[] = {1, 100, 17, 255};
  reduce_into(u8, u8_src, 2, DType::UInt8, ReduceOp::Sum);
  EXPECT_EQ(u8[0], 0);
  EXPECT_EQ(u8[1], 44);
  reduce_into(u8 + 2, u8_src + 2, 2, DType::UInt8, ReduceOp::Product);
  EXPECT_EQ(u8[2], 16);  // 272
  EXPECT_EQ(u8[3], 1);   // 65025 = 254 * 256 + 1

  int32_t s32[] = {INT32_MAX, 65536};
  const int32_t s32_src[] = {1, 65536};
  reduce_into(s32, s32_src, 1, DType::Int32, ReduceOp::Sum);
  reduce_into(s32 + 1, s32_src + 1, 1, DType::Int32, ReduceOp::Product);
  EXPECT_EQ(s32[0], INT32_MIN);
  EXPECT_EQ(s32[1], 0);

  int64_t s64[] = {INT64_MAX, INT64_MIN};
  const int64_t s64_src[] = {1, -1};
  reduce_into(s64, s64_src, 1, DType::Int64, ReduceOp::Sum);
  reduce_into(s64 + 1, s64_src + 1, 1, DType::Int64, ReduceOp::Product);
  EXPECT_EQ(s64[0], INT64_MIN);
  EXPECT_EQ(s64[1], INT64_MIN);
}

template <class T>
void expect_nan_propagates(DType dtype) {
  const T nan = T(std::numeric_limits<float>::quiet_NaN());
  const T one = T(1.0f);
  for (ReduceOp op : {ReduceOp::Min, ReduceOp::Max}) {
    T acc[] = {nan, one, nan};
    const T src[] = {one, nan, nan};
    reduce_into(acc, src, 3, dtype, op);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(std::isnan(static_cast<float>(acc[i])))
          << dtype_name(dtype) << " " << reduce_op_name(op) << " element " << i;
    }
  }
}

TEST(Reduce, MinAndMaxPropagateNan) {
  expect_nan_propagates<float>(DType::Float32);
  expect_nan_propagates<double>(DType::Float64);
  expect_nan_propagates<float16_t>(DType::Float16);
  expect_nan_propagates<bfloat16_t>(DType::BFloat16);
}

TEST(Reduce, BitwiseOnFloatIsAnError) {
  float acc[] = {1.0f};
  const float src[] = {2.0f};
  try {
    reduce_into(acc, src, 1, DType::Float32, ReduceOp::BXor);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bxor"), std::string::npos) << message;
    EXPECT_NE(message.find("float32"), std::string::npos) << message;
  }
  EXPECT_EQ(acc[0], 1.0f);
  EXPECT_THROW(reduce_into(nullptr, nullptr, 0, DType::BFloat16, ReduceOp::BAnd), InvalidArgument);
}

TEST(Reducer, FoldsLikeTheExpectedValuesAndRejectsBitwiseOnFloats) {
  // The kernel a simulated collective picks once and applies to every rank's input.
  const detail::Reducer max = detail::reducer_for(DType::Int64, ReduceOp::Max);
  int64_t acc[] = {3, -9, 0};
  const int64_t rank1[] = {-4, -2, 0};
  const int64_t rank2[] = {7, -8, -1};
  max(acc, rank1, 3);
  max(acc, rank2, 3);
  EXPECT_EQ(std::vector<int64_t>(acc, acc + 3), (std::vector<int64_t>{7, -2, 0}));
  EXPECT_THROW(detail::reducer_for(DType::Float16, ReduceOp::BOr), InvalidArgument);
  EXPECT_NE(detail::reducer_for(DType::Bool, ReduceOp::BXor), nullptr);
}

TEST(Reduce, SameBufferAndEmptyAndNegativeCounts) {
  std::vector<int32_t> v(100);
  for (int i = 0; i < 100; ++i) v[static_cast<size_t>(i)] = i - 50;
  reduce_into(v.data(), v.data(), 100, DType::Int32, ReduceOp::Sum);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], 2 * (i - 50));
  reduce_into(nullptr, nullptr, 0, DType::Float64, ReduceOp::Sum);  // nothing to touch
  EXPECT_THROW(reduce_into(v.data(), v.data(), -1, DType::Int32, ReduceOp::Sum), InvalidArgument);
}

TEST(DivideBy, IntegersTruncateTowardZero) {
  int8_t s8[] = {-7, 7, -1, -128, 127, -2};
  divide_by(s8, 6, DType::Int8, 2);
  EXPECT_EQ(std::vector<int8_t>(s8, s8 + 6), (std::vector<int8_t>{-3, 3, 0, -64, 63, -1}));

  int32_t s32[] = {-7, -8, 7, -1, INT32_MIN};
  divide_by(s32, 5, DType::Int32, 4);
  EXPECT_EQ(std::vector<int32_t>(s32, s32 + 5),
            (std::vector<int32_t>{-1, -2, 1, 0, INT32_MIN / 4}));

  int64_t s64[] = {INT64_MIN, -9, 10, INT64_MAX};
  divide_by(s64, 4, DType::Int64, 3);
  EXPECT_EQ(std::vector<int64_t>(s64, s64 + 4),
            (std::vector<int64_t>{-3074457345618258602, -3, 3, 3074457345618258602}));

  uint8_t u8[] = {255, 7, 0};
  divide_by(u8, 3, DType::UInt8, 2);
  EXPECT_EQ(std::vector<uint8_t>(u8, u8 + 3), (std::vector<uint8_t>{127, 3, 0}));

  // Random values: q * d + r == a with |r| < d and r carrying a's sign (truncation).
  std::mt19937_64 rng(42);
  std::vector<int64_t> values(300);
  for (auto& x : values) x = static_cast<int64_t>(rng());
  for (int64_t d : {1, 2, 3, 7, 1000}) {
    std::vector<int64_t> q = values;
    divide_by(q.data(), static_cast<int64_t>(q.size()), DType::Int64, d);
    for (size_t i = 0; i < q.size(); ++i) {
      const int128 r = static_cast<int128>(values[i]) - static_cast<int128>(q[i]) * d;
      EXPECT_TRUE(r > -d && r < d && (r == 0 || (r < 0) == (values[i] < 0)))
          << values[i] << " / " << d << " gave " << q[i];
    }
  }
}

TEST(DivideBy, BoolStaysAsIs) {
  uint8_t flags[] = {0, 1, 1, 0};
  divide_by(flags, 4, DType::Bool, 3);
  EXPECT_EQ(std::vector<uint8_t>(flags, flags + 4), (std::vector<uint8_t>{0, 1, 1, 0}));
}

TEST(DivideBy, FloatsDivideWithOneRounding) {
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (int64_t d : {1, 2, 3, 8, 10}) {
      std::vector<uint64_t> a;
      std::vector<uint64_t> unused;
      make_inputs(dtype, a, unused);
      std::vector<unsigned char> acc = pack(a, dtype);
      divide_by(acc.data(), static_cast<int64_t>(a.size()), dtype, d);
      int failures = 0;
      for (size_t i = 0; i < a.size() && failures < 10; ++i) {
        const long double x = decode_float(a[i], dtype);
        const long double actual = decode_float(element(acc, i, dtype), dtype);
        const long double quotient = x / static_cast<long double>(d);
        bool ok = false;
        if (std::isnan(x)) {
          ok = std::isnan(actual);
        } else if (dtype == DType::Float64 && (d == 3 || d == 10)) {
          // long double is too narrow to make a/d's double rounding innocuous: check that the
          // result is within half an ulp of the quotient instead.
          const double r = static_cast<double>(actual);
          const long double half_ulp =
              (std::nextafter(std::fabs(r), std::numeric_limits<double>::infinity()) -
               std::fabs(r)) /
              2.0L;
          ok = std::isinf(quotient) ? actual == quotient : std::fabs(actual - quotient) <= half_ulp;
        } else {
          ok =
              actual == round_to(quotient, dtype) && std::signbit(actual) == std::signbit(quotient);
        }
        if (!ok) {
          ++failures;
          ADD_FAILURE() << dtype_name(dtype) << " " << hex(a[i]) << " / " << d << " gave "
                        << hex(element(acc, i, dtype));
        }
      }
    }
  }
}

TEST(DivideBy, RejectsBadArguments) {
  float x[] = {1.0f};
  EXPECT_THROW(divide_by(x, 1, DType::Float32, 0), InvalidArgument);
  EXPECT_THROW(divide_by(x, 1, DType::Float32, -2), InvalidArgument);
  EXPECT_THROW(divide_by(x, -1, DType::Float32, 2), InvalidArgument);
  divide_by(nullptr, 0, DType::Int64, 5);
  EXPECT_EQ(x[0], 1.0f);
}

TEST(ReduceOpNames, ParseIsCaseInsensitive) {
  const std::pair<const char*, ReduceOp> cases[] = {
      {"sum", ReduceOp::Sum},   {"SUM", ReduceOp::Sum},         {"Mean", ReduceOp::Mean},
      {"mean", ReduceOp::Mean}, {"pRoDuCt", ReduceOp::Product}, {"min", ReduceOp::Min},
      {"MAX", ReduceOp::Max},   {"BAND", ReduceOp::BAnd},       {"bOr", ReduceOp::BOr},
      {"bxor", ReduceOp::BXor}, {"BXor", ReduceOp::BXor},       {"product", ReduceOp::Product},
  };
  for (const auto& [name, op] : cases) EXPECT_EQ(parse_reduce_op(name), op) << name;
}

TEST(ReduceOpNames, UnknownNamesAreRejectedWithTheValidList) {
  for (const char* bad : {"avg", "", "sum ", "prod", "and", "sUm2", "b0r"}) {
    try {
      (void)parse_reduce_op(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("\"" + std::string(bad) + "\""), std::string::npos) << message;
      for (const char* valid : {"sum", "mean", "product", "min", "max", "band", "bor", "bxor"}) {
        EXPECT_NE(message.find(valid), std::string::npos) << message;
      }
    }
  }
}

TEST(ReduceOpNames, NamesBitwiseAndSupport) {
  const char* names[] = {"sum", "mean", "product", "min", "max", "band", "bor", "bxor"};
  for (size_t i = 0; i < std::size(kOps); ++i) {
    EXPECT_EQ(reduce_op_name(kOps[i]), names[i]);
    EXPECT_EQ(parse_reduce_op(names[i]), kOps[i]);
    const bool bitwise = i >= 5;
    EXPECT_EQ(is_bitwise(kOps[i]), bitwise) << names[i];
    for (DType dtype : all_dtypes) {
      const bool floating = dtype == DType::Float16 || dtype == DType::BFloat16 ||
                            dtype == DType::Float32 || dtype == DType::Float64;
      const bool mean_of_bools = kOps[i] == ReduceOp::Mean && dtype == DType::Bool;
      EXPECT_EQ(reduce_op_supports(kOps[i], dtype), !(bitwise && floating) && !mean_of_bools)
          << names[i] << " " << dtype_name(dtype);
    }
  }
}

}  // namespace
}  // namespace ranks
