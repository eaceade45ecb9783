// Conversions are checked against references built from ldexp/nearbyint, which share no code
// with the bit manipulation in dtype.cpp.

#include "ranks/dtype.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

namespace ranks {
namespace {

double decode_half(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent == 0x1f) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double decode_bf16(uint16_t bits) {
  const int exponent = (bits >> 7) & 0xff;
  const int mantissa = bits & 0x7f;
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent == 0xff) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);
  return sign * std::ldexp(128 + mantissa, exponent - 134);
}

// Round-to-nearest-even to a binary format with p significand bits, minimum normal exponent emin
// and largest finite value max_finite (done in double, which holds any float exactly).
double round_to_format(double x, int p, int emin, double max_finite) {
  if (std::isnan(x) || std::isinf(x)) return x;
  const int e = x == 0 ? emin : std::max(std::ilogb(x), emin);
  const double ulp = std::ldexp(1.0, e - (p - 1));
  const double q = std::nearbyint(x / ulp) * ulp;
  if (std::fabs(q) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return q;
}
double round_to_half(double x) { return round_to_format(x, 11, -14, 65504.0); }
double round_to_bf16(double x) { return round_to_format(x, 8, -126, std::ldexp(255.0, 127 - 7)); }

// Same value (NaN matching NaN) and, for zeros, the same sign.
void expect_same(double expected, double actual, uint32_t input_bits) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << "input bits 0x" << std::hex << input_bits;
    return;
  }
  EXPECT_EQ(expected, actual) << "input bits 0x" << std::hex << input_bits;
  EXPECT_EQ(std::signbit(expected), std::signbit(actual))
      << "input bits 0x" << std::hex << input_bits;
}

uint16_t half_bits(float f) { return float16_t(f).bits; }
uint16_t bf16_bits(float f) { return bfloat16_t(f).bits; }
float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(Float16, ToFloatIsExactForEveryBitPattern) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = static_cast<float>(float16_t::from_bits(static_cast<uint16_t>(b)));
    expect_same(decode_half(static_cast<uint16_t>(b)), f, b);
  }
}

TEST(Float16, EveryNonNanValueRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    if (std::isnan(decode_half(static_cast<uint16_t>(b)))) continue;
    const float f = static_cast<float>(decode_half(static_cast<uint16_t>(b)));
    EXPECT_EQ(half_bits(f), b) << "value " << f;
  }
}

TEST(Float16, FromFloatMatchesReferenceRounding) {
  // About 4.5 million floats spread over every exponent, sign and NaN payload.
  for (uint64_t u = 0; u <= 0xffffffffu; u += 961) {
    const uint32_t bits = static_cast<uint32_t>(u);
    const float f = from_bits(bits);
    expect_same(round_to_half(f), decode_half(half_bits(f)), bits);
  }
}

TEST(Float16, TiesRoundToEvenBetweenEveryPairOfNeighbours) {
  for (uint16_t lo = 0; lo < 0x7bff; ++lo) {
    const auto hi = static_cast<uint16_t>(lo + 1);
    // The midpoint needs 12 significand bits, so float holds it exactly.
    const auto mid = static_cast<float>((decode_half(lo) + decode_half(hi)) / 2);
    const uint16_t even = (lo % 2 == 0) ? lo : hi;
    ASSERT_EQ(half_bits(mid), even) << "midpoint " << mid;
    ASSERT_EQ(half_bits(-mid), even | 0x8000) << "midpoint " << -mid;
    ASSERT_EQ(half_bits(std::nextafter(mid, 0.0f)), lo) << "just below " << mid;
    ASSERT_EQ(half_bits(std::nextafter(mid, 1e9f)), hi) << "just above " << mid;
  }
}

TEST(Float16, SpecialValues) {
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(1.0f), 0x3c00);
  EXPECT_EQ(half_bits(-2.0f), 0xc000);
  EXPECT_EQ(half_bits(0.1f), 0x2e66);
  EXPECT_EQ(half_bits(65504.0f), 0x7bff);
  // 65520 is the tie between 65504 (odd) and 65536 (even, unrepresentable): inf.
  EXPECT_EQ(half_bits(65519.996f), 0x7bff);
  EXPECT_EQ(half_bits(65520.0f), 0x7c00);
  EXPECT_EQ(half_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(half_bits(1e10f), 0x7c00);
  EXPECT_EQ(half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(Float16, Subnormals) {
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie with zero: even is zero
  EXPECT_EQ(half_bits(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(half_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(half_bits(std::ldexp(3.0f, -25)), 0x0002);     // tie between 1 and 2 units: 2
  EXPECT_EQ(half_bits(std::ldexp(5.0f, -25)), 0x0002);     // tie between 2 and 3 units: 2
  EXPECT_EQ(half_bits(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(half_bits(std::ldexp(2047.0f, -25)), 0x0400);  // tie rounds up into the normals
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(static_cast<float>(float16_t::from_bits(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_EQ(static_cast<float>(float16_t::from_bits(0x83ff)), -std::ldexp(1023.0f, -24));
}

TEST(Float16, NanStaysNan) {
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa00000u, 0xff800001u}) {
    const uint16_t h = half_bits(from_bits(bits));
    EXPECT_EQ(h & 0x7c00, 0x7c00) << std::hex << bits;
    EXPECT_NE(h & 0x03ff, 0) << std::hex << bits;  // a NaN, never inf
    EXPECT_EQ((h & 0x8000) != 0, (bits & 0x80000000u) != 0) << std::hex << bits;
  }
  EXPECT_TRUE(std::isnan(static_cast<float>(float16_t::from_bits(0x7e00))));
  EXPECT_TRUE(std::isnan(static_cast<float>(float16_t::from_bits(0xfc01))));
}

TEST(BFloat16, ToFloatIsExactForEveryBitPattern) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = static_cast<float>(bfloat16_t::from_bits(static_cast<uint16_t>(b)));
    expect_same(decode_bf16(static_cast<uint16_t>(b)), f, b);
  }
}

TEST(BFloat16, FromFloatMatchesReferenceRounding) {
  for (uint64_t u = 0; u <= 0xffffffffu; u += 961) {
    const uint32_t bits = static_cast<uint32_t>(u);
    const float f = from_bits(bits);
    expect_same(round_to_bf16(f), decode_bf16(bf16_bits(f)), bits);
  }
}

TEST(BFloat16, TiesRoundToEven) {
  EXPECT_EQ(bf16_bits(from_bits(0x3f808000u)), 0x3f80);  // 1 + 2^-8: tie, 0x3f80 is even
  EXPECT_EQ(bf16_bits(from_bits(0x3f818000u)), 0x3f82);  // tie, 0x3f82 is even
  EXPECT_EQ(bf16_bits(from_bits(0x3f808001u)), 0x3f81);  // just above the tie
  EXPECT_EQ(bf16_bits(from_bits(0x3f817fffu)), 0x3f81);  // just below the tie
  EXPECT_EQ(bf16_bits(from_bits(0xbf808000u)), 0xbf80);
  EXPECT_EQ(bf16_bits(from_bits(0x00008000u)), 0x0000);  // subnormal tie to zero
  EXPECT_EQ(bf16_bits(from_bits(0x00018000u)), 0x0002);
  for (uint32_t hi = 0; hi < 0x7f7f; hi += 7) {
    const uint32_t tie = (hi << 16) | 0x8000u;
    EXPECT_EQ(bf16_bits(from_bits(tie)), (hi % 2 == 0) ? hi : hi + 1) << std::hex << tie;
  }
}

TEST(BFloat16, SpecialValues) {
  EXPECT_EQ(bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits(-3.0f), 0xc040);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the top
  EXPECT_EQ(bf16_bits(from_bits(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
}

TEST(BFloat16, NanStaysNan) {
  // Payloads only in the low half would truncate to inf without care.
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7f80ffffu, 0xff800001u}) {
    const uint16_t h = bf16_bits(from_bits(bits));
    EXPECT_EQ(h & 0x7f80, 0x7f80) << std::hex << bits;
    EXPECT_NE(h & 0x007f, 0) << std::hex << bits;
    EXPECT_EQ((h & 0x8000) != 0, (bits & 0x80000000u) != 0) << std::hex << bits;
  }
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16_t::from_bits(0x7fc1))));
}

TEST(DType, SizesNamesAndKinds) {
  struct Row {
    DType dtype;
    size_t size;
    const char* name;
    bool floating;
  };
  const Row rows[] = {
      {DType::Bool, 1, "bool", false},        {DType::UInt8, 1, "uint8", false},
      {DType::Int8, 1, "int8", false},        {DType::Int32, 4, "int32", false},
      {DType::Int64, 8, "int64", false},      {DType::Float16, 2, "float16", true},
      {DType::BFloat16, 2, "bfloat16", true}, {DType::Float32, 4, "float32", true},
      {DType::Float64, 8, "float64", true},
  };
  ASSERT_EQ(std::size(rows), std::size(all_dtypes));
  for (size_t i = 0; i < std::size(rows); ++i) {
    EXPECT_EQ(all_dtypes[i], rows[i].dtype);
    EXPECT_EQ(dtype_size(rows[i].dtype), rows[i].size) << rows[i].name;
    EXPECT_EQ(dtype_name(rows[i].dtype), rows[i].name);
    EXPECT_EQ(is_floating(rows[i].dtype), rows[i].floating) << rows[i].name;
  }
}

TEST(DType, DTypeOfMatchesStorageTypes) {
  static_assert(dtype_of_v<const float16_t> == DType::Float16);
  static_assert(dtype_of_v<bfloat16_t> == DType::BFloat16);
  static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2);
  for (DType dtype : all_dtypes) {
    EXPECT_EQ(visit_dtype(dtype, [](auto tag) { return dtype_of_v<decltype(tag)>; }), dtype);
    EXPECT_EQ(visit_dtype(dtype, [](auto tag) { return sizeof(tag); }), dtype_size(dtype));
  }
}

}  // namespace
}  // namespace ranks
