// pow, hypot and cbrt of pto/simd_math.hpp (include that header, not this one). All three work
// in double on the two halves of the vector and round once: y * log2(x) needs more bits than a
// float has, and in double x^2 + y^2 neither overflows nor underflows.
#pragma once

#include "pto/simd_math/exp_log.hpp"
#include "pto/simd_math/rounding.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {
namespace math {

// x^y = 2^(y log2|x|) in double (log2 to 2^-37.7 relative, so the product is good to 2^-30 even
// where it reaches +-150), then the C99 / numpy special cases: pow(x, +-0) = 1 and pow(1, y) = 1
// even for NaN; a negative base needs an integer y (odd y gives the sign, also for -0 and -inf)
// and is NaN for other finite y; |x| = 1 with y = +-inf is 1; a zero or infinite base gives 0 or
// inf by whether |x| > 1 and y > 0 agree. Overflow and underflow (to subnormals or 0) are those
// of the final double -> float rounding.
inline vf pow(vf x, vf y) {
  using namespace detail;
  const vf ax = vabs(x);
  vf r = via_double(ax, y, [&](vd u, vd v) { return exp2_d(clamp(v * log2_d(u), -1000.0, 1000.0)); });
  const vi zero_inf = (ax == 0.0f) | (ax == INFINITY);  // log2_d is not valid there, nor for NaN
  r = sel(zero_inf, sel(y != y, y, as_f(((ax == INFINITY) ^ (y < 0.0f)) & as_i(cf(INFINITY)))), r);
  r = sel((ax == 1.0f) & (vabs(y) == INFINITY), cf(1.0f), sel(x != x, x, r));
  const vi yint = rint(y) == y;  // true for +-inf, false for NaN
  const vi yodd = yint & (vabs(y) < 0x1p24f) & ((to_int(y) & 1) != 0);
  r = xor_sign(r, sign_bit(x) & yodd);
  r = sel((x < 0.0f) & (x != -INFINITY) & ~yint, cf(NAN), r);
  return sel((y == 0.0f) | (x == 1.0f), cf(1.0f), r);
}

// sqrt(x^2 + y^2) in double: exact squares, one rounding in the sum and the square root, one to
// float. hypot(+-inf, NaN) = +inf as C99 says.
inline vf hypot(vf x, vf y) {
  using namespace detail;
  const vf r = via_double(x, y, [&](vd u, vd v) { return vsqrt(mla(u, u, v * v)); });
  return sel(is_inf(x) | is_inf(y), cf(INFINITY), r);
}

// Cube root: w ~ |x|^(-1/3) from the exponent bits (w = K - bits/3, 3.4% error), three Newton
// steps w += w (1 - |x| w^3) / 3 (no division; error 2^-31 after the third; the last two in double
// where |x| w^3 cannot overflow), then cbrt|x| = |x| w^2. Zeros, infinities and NaN pass unchanged.
inline vf cbrt(vf x) {
  using namespace detail;
  const vf a = vabs(x);
  const vi sub = a < 0x1p-126f;
  const vf as = sel(sub, a * 0x1p24f, a);  // subnormals: the bit trick needs a normal number
  const vi third = to_int(to_float(as_i(as)) * (1.0f / 3.0f));
  vf w = as_f(0x54a232a0 - third);
  w = w + w * (1.0f - (w * w) * (w * as)) * (1.0f / 3.0f);  // first step in float: 2^-9
  w = sel(sub, w * 0x1p8f, w);                              // (2^24)^(1/3) = 2^8
  const vd2 ad = to_d(a), wd = to_d(w);
  auto finish = [&](vd v, vd u) {  // v = |x|, u ~ v^(-1/3)
    u = mla(u * (1.0 - v * (u * u * u)), cd(1.0 / 3.0), u);
    u = mla(u * (1.0 - v * (u * u * u)), cd(1.0 / 3.0), u);
    return v * (u * u);
  };
  const vf r = to_f(finish(ad.lo, wd.lo), finish(ad.hi, wd.hi));
  return sel((a == 0.0f) | (a == INFINITY) | (x != x), x, vcopysign(r, x));
}

}  // namespace math
}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
