// Rounding modes and the exact rounding core shared by every narrowing conversion.
#pragma once

#include <bit>
#include <cstdint>

namespace pto {

// RINT = round to nearest, ties to even (IEEE default); ROUND = nearest, ties away from zero.
enum class RoundMode { RINT, ROUND, FLOOR, CEIL, TRUNC };

namespace detail {

// Rounds the exact value (-1)^neg * m * 2^e to a binary floating-point format with EBITS exponent
// and MBITS fraction bits and returns its bit pattern (sign at bit EBITS + MBITS). One routine for
// every source (float, double, int64) so that each conversion rounds exactly once.
template <int EBITS, int MBITS>
constexpr uint64_t round_to_format(bool neg, uint64_t m, int e, RoundMode mode) {
  constexpr int kBias = (1 << (EBITS - 1)) - 1;
  constexpr uint64_t kInf = ((uint64_t{1} << EBITS) - 1) << MBITS;
  const uint64_t sign = uint64_t{neg} << (EBITS + MBITS);
  if (m == 0) return sign;
  const int exp = 63 - std::countl_zero(m) + e;            // exponent of the leading bit
  const int ulp = (exp < 1 - kBias ? 1 - kBias : exp) - MBITS;  // exponent of one ulp there
  const int shift = ulp - e;                                // low bits of m below one ulp
  uint64_t q = 0;
  int cmp = -1;  // remainder compared with half an ulp: -1 below, 0 tie, +1 above
  bool inexact = true;
  if (shift <= 0) {
    q = m << -shift;
    inexact = false;
  } else if (shift < 64) {
    q = m >> shift;
    const uint64_t rem = m & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    cmp = rem < half ? -1 : (rem == half ? 0 : 1);
    inexact = rem != 0;
  } else if (shift == 64) {
    cmp = m < (uint64_t{1} << 63) ? -1 : (m == (uint64_t{1} << 63) ? 0 : 1);
  }
  bool up = false;
  switch (mode) {
    case RoundMode::RINT: up = cmp > 0 || (cmp == 0 && (q & 1)); break;
    case RoundMode::ROUND: up = cmp >= 0; break;
    case RoundMode::FLOOR: up = neg && inexact; break;
    case RoundMode::CEIL: up = !neg && inexact; break;
    case RoundMode::TRUNC: break;
  }
  q += up;
  // In the subnormal range q is the whole pattern (q == 2^MBITS is the smallest normal); in the
  // normal range a carry out of the fraction correctly bumps the exponent field.
  uint64_t bits = exp < 1 - kBias
                      ? q
                      : (uint64_t(exp + kBias) << MBITS) + (q - (uint64_t{1} << MBITS));
  if (bits >= kInf) {  // overflow: directed modes stop at the largest finite value
    const bool to_inf = mode == RoundMode::RINT || mode == RoundMode::ROUND ||
                        (mode == RoundMode::FLOOR && neg) || (mode == RoundMode::CEIL && !neg);
    bits = to_inf ? kInf : kInf - 1;
  }
  return sign | bits;
}

// Rounds a double (any value, incl. inf/NaN) to the format; NaN becomes the quiet NaN.
template <int EBITS, int MBITS>
constexpr uint64_t double_to_format(double v, RoundMode mode) {
  constexpr uint64_t kInf = ((uint64_t{1} << EBITS) - 1) << MBITS;
  const uint64_t x = std::bit_cast<uint64_t>(v);
  const bool neg = x >> 63;
  const uint64_t sign = uint64_t{neg} << (EBITS + MBITS);
  const int ef = int((x >> 52) & 0x7ff);
  const uint64_t frac = x & ((uint64_t{1} << 52) - 1);
  if (ef == 0x7ff) return sign | kInf | (frac ? uint64_t{1} << (MBITS - 1) : 0);
  if (ef == 0) return round_to_format<EBITS, MBITS>(neg, frac, -1074, mode);
  return round_to_format<EBITS, MBITS>(neg, frac | (uint64_t{1} << 52), ef - 1075, mode);
}

// Rounds an int64 (exactly, no intermediate double) to the format.
template <int EBITS, int MBITS>
constexpr uint64_t int64_to_format(int64_t v, RoundMode mode) {
  const bool neg = v < 0;
  const uint64_t mag = neg ? uint64_t{0} - uint64_t(v) : uint64_t(v);
  return round_to_format<EBITS, MBITS>(neg, mag, 0, mode);
}

}  // namespace detail
}  // namespace pto
