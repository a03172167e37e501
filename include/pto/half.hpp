// 16-bit floating-point storage types: IEEE binary16 (half) and bfloat16.
// Arithmetic happens in float; every conversion back rounds exactly once.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "pto/round.hpp"

namespace pto {
namespace detail {

// float -> binary16, round to nearest even; the hot path, so done with integer bit tricks.
constexpr uint16_t float_to_half_rne(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00;    // NaN -> quiet NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00;   // >= 65520 (incl. inf) rounds to inf
  if (ax >= 0x38800000u) {                        // normal half: rebias, round on bit 13
    const uint32_t odd = (ax >> 13) & 1;
    return sign | uint16_t((ax - (112u << 23) + 0xfffu + odd) >> 13);
  }
  // Subnormal half: value = mant * 2^(exp - 150); in units of 2^-24 that is mant >> (126 - exp).
  const int exp = int(ax >> 23);
  const int shift = 126 - exp;
  if (shift > 24) return sign;  // below 2^-25: rounds to zero
  const uint32_t mant = (ax & 0x7fffffu) | (exp ? 0x800000u : 0);
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  return sign | uint16_t(q + (rem > halfway || (rem == halfway && (q & 1))));
}

constexpr float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t e = (h >> 10) & 0x1f;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e == 0) {  // subnormal or zero: exactly m * 2^-24
    const float v = float(m) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

constexpr uint16_t float_to_bf16_rne(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // keep NaN a NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1)) >> 16);  // carries into exponent / inf
}

// Round to nearest, ties away from zero (RoundMode::ROUND): adding half an ulp to the magnitude
// bits and truncating (the sign bit is untouched: the magnitude stays below 0x7f808000).
constexpr uint16_t float_to_bf16_round(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // keep NaN a NaN
  return uint16_t((x + 0x8000u) >> 16);
}

constexpr float bf16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// Any arithmetic value -> 16-bit pattern with the given mode, rounding once.
template <int EBITS, int MBITS, class U>
constexpr uint16_t to_f16_bits(U v, RoundMode mode) {
  if constexpr (std::is_floating_point_v<U>) {
    return uint16_t(double_to_format<EBITS, MBITS>(double(v), mode));  // float/double exact
  } else if constexpr (std::is_unsigned_v<U> && sizeof(U) == 8) {
    return uint16_t(round_to_format<EBITS, MBITS>(false, uint64_t(v), 0, mode));
  } else {
    return uint16_t(int64_to_format<EBITS, MBITS>(int64_t(v), mode));
  }
}

}  // namespace detail

// IEEE 754 binary16. Trivial type (like float): default construction leaves it uninitialized.
struct half {
  uint16_t bits;

  half() = default;
  constexpr explicit half(float f) : bits(detail::float_to_half_rne(f)) {}
  template <class U>
    requires(std::is_arithmetic_v<U> && !std::is_same_v<U, float>)
  constexpr explicit half(U v) : bits(detail::to_f16_bits<5, 10>(v, RoundMode::RINT)) {}

  static constexpr half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
  // Conversion with an explicit rounding mode (used by TCVT).
  template <class U>
  static constexpr half convert(U v, RoundMode mode) {
    return from_bits(detail::to_f16_bits<5, 10>(v, mode));
  }
  constexpr operator float() const { return detail::half_to_float(bits); }
};

// bfloat16: the upper half of an IEEE binary32.
struct bfloat16 {
  uint16_t bits;

  bfloat16() = default;
  constexpr explicit bfloat16(float f) : bits(detail::float_to_bf16_rne(f)) {}
  template <class U>
    requires(std::is_arithmetic_v<U> && !std::is_same_v<U, float>)
  constexpr explicit bfloat16(U v) : bits(detail::to_f16_bits<8, 7>(v, RoundMode::RINT)) {}

  static constexpr bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  template <class U>
  static constexpr bfloat16 convert(U v, RoundMode mode) {
    if constexpr (std::is_floating_point_v<U>) {
      // NaN payload is kept (like the RNE path); other values go through the exact core.
      if (v != v) return bfloat16(float(v));
    }
    return from_bits(detail::to_f16_bits<8, 7>(v, mode));
  }
  constexpr operator float() const { return detail::bf16_to_float(bits); }
};

static_assert(std::is_trivial_v<half> && sizeof(half) == 2);
static_assert(std::is_trivial_v<bfloat16> && sizeof(bfloat16) == 2);

}  // namespace pto
