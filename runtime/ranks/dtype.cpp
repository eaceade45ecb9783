#include "ranks/dtype.hpp"

#include <bit>
#include <cstdint>

namespace ranks {

namespace {

// Rounds a value that is an integer multiple of 2^-shift (shift >= 1) to nearest, ties to even.
uint32_t round_shift_rne(uint32_t value, uint32_t shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((uint32_t{1} << shift) - 1);
  const uint32_t halfway = uint32_t{1} << (shift - 1);
  return kept + ((rest > halfway || (rest == halfway && (kept & 1u) != 0)) ? 1u : 0u);
}

}  // namespace

float16_t::float16_t(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    // Keep the top payload bits and force the quiet bit so truncation can never produce inf.
    bits = static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x03ffu));
    return;
  }
  // 65520 = 65504 + half an ulp is a tie whose even neighbour is 2^16: it and above become inf.
  if (abs >= 0x477ff000u) {
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  const uint32_t exponent = abs >> 23;
  if (exponent < 113) {
    // Result is a binary16 subnormal (or zero): count units of 2^-24. The float's significand
    // (with its implicit bit) times 2^(exponent - 150) is the value, so shift by 126 - exponent.
    const uint32_t shift = 126 - exponent;
    if (shift > 24) {  // below 2^-25, so at most half a unit even after rounding: zero
      bits = sign;
      return;
    }
    const uint32_t significand = (abs & 0x007fffffu) | 0x00800000u;
    // A carry into bit 10 yields the smallest normal, which is the correct encoding.
    bits = static_cast<uint16_t>(sign | round_shift_rne(significand, shift));
    return;
  }
  // Rebias the exponent (127 -> 15) and drop 13 significand bits; a carry out of the significand
  // correctly bumps the exponent, and the overflow cases were handled above.
  bits = static_cast<uint16_t>(sign | round_shift_rne(abs - (uint32_t{112} << 23), 13));
}

float16_t::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x03ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

bfloat16_t::bfloat16_t(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // Truncating a NaN whose payload sits in the low half would give inf: force the quiet bit.
    bits = static_cast<uint16_t>((x >> 16) | 0x0040u);
    return;
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; the carry may
  // legitimately overflow into the exponent (up to inf).
  bits = static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

bfloat16_t::operator float() const {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float32 ||
         dtype == DType::Float64;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool float_a = is_floating(a);
  const bool float_b = is_floating(b);
  if (float_a != float_b) return float_a ? a : b;
  const auto one_of = [&](DType d) { return a == d || b == d; };
  if (float_a) {
    if (one_of(DType::Float64)) return DType::Float64;
    return DType::Float32;  // float32 with anything, or float16 with bfloat16
  }
  if (one_of(DType::Int64)) return DType::Int64;
  return DType::Int32;  // int32 with anything narrower, or uint8 with int8
}

}  // namespace ranks
