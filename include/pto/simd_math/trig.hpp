// Trigonometric functions of pto/simd_math.hpp (include that header, not this one):
// sin, cos, tan, asin, acos, atan, atan2, all in float.
#pragma once

#include <cstring>

#include "pto/simd_math/common.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {
namespace math {

namespace detail {
// pi/2, pi, pi/4 as float hi + lo.
constexpr float kPio2Hi = 1.5707963705062866f, kPio2Lo = -4.371138828673793e-08f;
constexpr float kPiHi = 3.1415927410125732f, kPiLo = -8.742277657347586e-08f;
constexpr float kPio4Hi = 0.7853981852531433f, kPio4Lo = -2.1855694143368964e-08f;

// ---- sin, cos, tan: argument reduction ---------------------------------------------------------
// x = q pi/2 + (hi + lo) with |hi + lo| <= pi/4 (a hair more when x * 2/pi rounds across a half)
// and |lo| <= ulp(hi) / 2, in one of three ways by size:
//  - |x| <= kTrigFastMax (2^17), the common path: three-part Cody-Waite in float with
//    pi/2 = C1 + C2 + C3 (+ 1e-23). n * C1 is exact in the fma and x - n C1 is exactly
//    representable (|x - n C1| < 1, a multiple of 2^-23); n * C2 is split exactly by fma and the
//    subtraction is a two-sum, so the only losses are the tiny n * C3 term and the 1e-23 tail: an
//    absolute error below 2^-55, against |r| >= 2^-27.8 for every float x in range.
//  - |x| <= kTrigMidMax (2^28): the same in double with 24-bit P1, P2 (exact products and
//    differences) and a double P3: absolute error about 2^-70. Taken by the whole vector when
//    any lane needs it, so it costs nothing on the common path but the one any-lane test.
//  - beyond, and +-inf: the scalar double function per lane (exact reduction of any double).
constexpr float kTrigFastMax = 0x1p17f, kTrigMidMax = 0x1p28f;
struct Reduced {
  vf hi, lo;
  vi q;
};
inline Reduced reduce_pio2(vf x) {
  constexpr float C1 = 1.5707963705062866f, C2 = -4.371138828673793e-08f, C3 = -1.7151245100058819e-15f;
  const vf n = round_even(x * 0.6366197466850281f) + 0.0f;  // + 0: never -0
  const vf r1 = fma(-n, cf(C1), x);
  const vf p = n * C2;
  const vf pl = fma(n, cf(C2), -p);  // n C2 = p + pl exactly
  const vf h = r1 - p;               // two-sum r1 - p = h + e
  const vf bb = h - r1;
  const vf e = (r1 - (h - bb)) - (p + bb);
  const vf lo = e - mla(n, cf(C3), pl);
  const vf hi = h + lo;  // renormalize so that |lo| <= ulp(hi) / 2
  return {hi, lo - (hi - h), to_int(n)};
}
inline Reduced reduce_pio2_mid(vf x) {
  constexpr double P1 = 0x1.921fb4p+0, P2 = 0x1.4442dp-24, P3 = 0x1.8469898cc5170p-48;
  const vd2 d = to_d(x);
  vd n[2], r[2];
  for (int h = 0; h < 2; ++h) {
    const vd v = h ? d.hi : d.lo;
    n[h] = round_even(v * 0.6366197723675814);
    r[h] = ((v - n[h] * P1) - n[h] * P2) - n[h] * P3;
  }
  const vf hi = to_f(r[0], r[1]);
  const vd2 hd = to_d(hi);
  return {hi, to_f(r[0] - hd.lo, r[1] - hd.hi), to_int(n[0], n[1])};
}
// sin(hi + lo) and cos(hi + lo) for |hi + lo| <= pi/4 + tiny: minimax polynomials in z = hi^2
// (relative error 2^-28 for sin, 2^-33 for cos) plus the first-order terms of lo. cos keeps
// 1 - z/2 in two pieces (and z's own rounding error) so that its rounding is not counted twice.
inline vf sin_poly(vf hi, vf lo, vf z) {
  const vf s = horner(z, -0.00019515282474458218f, 0.00833216030150652f, -0.16666655242443085f);
  return hi + mla(hi * z, s, lo - 0.5f * z * lo);
}
inline vf cos_poly(vf hi, vf lo, vf z) {
  const vf zl = fma(hi, hi, -z);  // hi^2 = z + zl exactly
  const vf c = horner(z, 2.44331567955669e-05f, -0.0013887316454201937f, 0.04166664555668831f);
  const vf hz = 0.5f * z;
  const vf w = 1.0f - hz;
  return w + ((((1.0f - w) - hz) - 0.5f * zl) + mla(z * z, c, -(hi * lo)));
}
// tan(hi + lo) = t1 + tl from a minimax odd polynomial (relative error 2^-29.6) and lo's
// first-order term (1 + t^2) lo; odd quadrants take -1 / t, the reciprocal corrected by its
// exact fma residual so that t's low part counts.
inline vf tan_or_cot(vf hi, vf lo, vf z, vi odd) {
  const vf tp = horner(z, 0.004376302473247051f, 8.94703043741174e-05f, 0.010835873894393444f,
                       0.02128216065466404f, 0.05405992269515991f, 0.13332663476467133f, 0.33333349227905273f);
  const vf u = hi * z * tp;
  const vf t1 = hi + u;
  const vf tl = mla(lo, mla(t1, t1, cf(1.0f)), u - (t1 - hi));
  const vf y = 1.0f / t1;
  const vf e = fma(-y, t1, cf(1.0f));  // 1 - y t1, exact
  const vf cot = -mla(y, e - y * tl, y);
  return sel(odd, cot, t1 + tl);
}

enum class Trig { Sin, Cos, Tan };
// F of x from its reduction: the quadrant picks the polynomial and the sign (cos(x) is
// sin(x + pi/2), quadrant q + 1). sin and tan of |x| < 2^-12 round to x (which also keeps -0
// and subnormals exact).
template <Trig F>
inline vf trig_eval(vf x, const Reduced& r) {
  const vf z = r.hi * r.hi;
  const vi odd = (r.q & 1) != 0;
  if constexpr (F == Trig::Tan) {
    return sel(vabs(x) < 0x1p-12f, x, tan_or_cot(r.hi, r.lo, z, odd));
  } else {
    const vf s = sin_poly(r.hi, r.lo, z), c = cos_poly(r.hi, r.lo, z);
    if constexpr (F == Trig::Sin)
      return sel(vabs(x) < 0x1p-12f, x, xor_sign(sel(odd, c, s), (r.q & 2) << 30));
    else
      return xor_sign(sel(odd, s, c), ((r.q + 1) & 2) << 30);
  }
}
// The rare vectors with a lane beyond kTrigFastMax (or +-inf).
template <Trig F>
[[gnu::noinline, gnu::cold]] inline vf trig_big(vf x) {
  const vi mid = vabs(x) <= kTrigMidMax;
  vf res = trig_eval<F>(x, reduce_pio2_mid(sel(mid, x, cf(0.0f))));
  if (any(~mid)) {  // beyond 2^28, +-inf and NaN
    float xs[kW], rs[kW];
    std::memcpy(xs, &x, sizeof x);
    std::memcpy(rs, &res, sizeof res);
    for (int j = 0; j < kW; ++j) {
      if (std::fabs(xs[j]) <= kTrigMidMax) continue;
      const double v = xs[j];
      rs[j] = float(F == Trig::Sin ? std::sin(v) : F == Trig::Cos ? std::cos(v) : std::tan(v));
    }
    std::memcpy(&res, rs, sizeof res);
  }
  return res;
}
template <Trig F>
inline vf trig(vf x) {
  if (__builtin_expect(any(vabs(x) > kTrigFastMax), 0)) return trig_big<F>(x);
  return trig_eval<F>(x, reduce_pio2(x));
}
}  // namespace detail

inline vf sin(vf x) { return detail::trig<detail::Trig::Sin>(x); }
inline vf cos(vf x) { return detail::trig<detail::Trig::Cos>(x); }
inline vf tan(vf x) { return detail::trig<detail::Trig::Tan>(x); }

// ---- asin, acos ------------------------------------------------------------------------------
namespace detail {
// asin(a) = a + a z P(z), z = a^2 <= 1/4: minimax P of degree 5 (relative error 2^-31.8).
inline vf asin_p(vf z) {
  return horner(z, 0.037516482174396515f, 0.014438583515584469f, 0.03180772438645363f, 0.04451695457100868f,
                0.07500503957271576f, 0.16666659712791443f);
}
// For |x| > 1/2: asin|x| = pi/2 - 2 asin(s), s = sqrt(z), z = (1 - |x|) / 2 (exact). Returns
// asin(s) - s as w, with the rounding error of the square root (exact fma residual) folded in,
// so that asin(s) = s + w to well below an ulp.
inline vf asin_big_w(vf s, vf z) {
  const vf sl = fma(-s, s, z) * (0.5f / s);  // sqrt(z) - s to first order; s = 0 gives NaN, masked by callers
  return mla(s * z, asin_p(z), sl);
}
}  // namespace detail

inline vf asin(vf x) {
  using namespace detail;
  const vf a = vabs(x);
  const vf z1 = a * a;
  const vf r1 = mla(a * z1, asin_p(z1), a);
  const vf z = (1.0f - a) * 0.5f;  // exact for a >= 1/2; |x| > 1 gives a negative z and a NaN sqrt
  const vf s = vsqrt(z);
  const vf w = sel(s == 0.0f, cf(0.0f), asin_big_w(s, z));
  // pi/2 - 2 (s + w): pi/2_hi - 2s by fast-two-sum, the small terms after.
  const vf t = kPio2Hi - 2.0f * s;
  const vf te = (kPio2Hi - t) - 2.0f * s;
  const vf r2 = t + (te + (kPio2Lo - 2.0f * w));
  return xor_sign(sel(a <= 0.5f, r1, r2), sign_bit(x));
}

// acos(x) = pi/2 - asin(x) for |x| <= 1/2; 2 asin(s) for x > 1/2; pi - 2 asin(s) for x < -1/2.
inline vf acos(vf x) {
  using namespace detail;
  const vf a = vabs(x);
  // |x| <= 1/2: pi/2_hi - x by fast-two-sum, then the rest.
  const vf z1 = x * x;
  const vf w1 = x * z1 * asin_p(z1);
  const vf t1 = kPio2Hi - x;
  const vf r1 = t1 + ((((kPio2Hi - t1) - x) + kPio2Lo) - w1);
  const vf z = (1.0f - a) * 0.5f;
  const vf s = vsqrt(z);
  const vf w = sel(s == 0.0f, cf(0.0f), asin_big_w(s, z));
  const vf rp = 2.0f * s + 2.0f * w;  // x > 1/2 (x = 1 gives +0)
  const vf t = kPiHi - 2.0f * s;      // x < -1/2
  const vf rn = t + ((((kPiHi - t) - 2.0f * s) + kPiLo) - 2.0f * w);
  return sel(a <= 0.5f, r1, sel(x > 0.0f, rp, rn));
}

// ---- atan, atan2 -----------------------------------------------------------------------------
namespace detail {
// atan(t + tl) - t for 0 <= t <= 1 and |tl| <~ 2^-24 t: minimax t z A(z), z = t^2, of degree 9
// (relative error 2^-31), plus tl / (1 + z) with 1 / (1 + z) to 1% (enough for a term that small).
inline vf atan_w(vf t, vf tl) {
  const vf z = t * t;
  const vf p = horner(z, 0.001113789970986545f, -0.0073179625906050205f, 0.022539880126714706f,
                      -0.044689957052469254f, 0.0674159824848175f, -0.08811091631650925f, 0.11058223992586136f,
                      -0.14279833436012268f, 0.1999967098236084f, -0.333333283662796f);
  const vf inv1pz = mla(z, mla(z, cf(0.4f), cf(-0.9f)), cf(1.0f));
  return mla(t * z, p, tl * inv1pz);
}
}  // namespace detail

// atan|x| = atan(t) for |x| <= 1, pi/2 - atan(t) with t = 1/|x| (its rounding error recovered
// from the exact fma residual) otherwise; the sign of x restored at the end.
inline vf atan(vf x) {
  using namespace detail;
  const vf a = sel(vabs(x) > 0x1p30f, cf(0x1p30f), vabs(x));  // atan(2^30) rounds to pi/2 already
  const vi inv = a > 1.0f;
  const vf rcp = 1.0f / a;
  const vf t = sel(inv, rcp, a);
  const vf tl = sel(inv, fma(-rcp, a, cf(1.0f)) * rcp, cf(0.0f));
  const vi one = a == 1.0f;  // atan(1) = pi/4 rounded correctly
  const vf w = sel(one, cf(kPio4Lo), atan_w(t, tl));
  const vf h = kPio2Hi - t;  // fast-two-sum
  const vf big = h + ((((kPio2Hi - h) - t) + kPio2Lo) - w);
  return xor_sign(sel(inv, big, sel(one, cf(kPio4Hi), t) + w), sign_bit(x));
}

// atan2(y, x): t = min(|x|, |y|) / max(|x|, |y|) (rounding error recovered as in atan), then
// off + sgn atan(t) with (off, sgn) = (0, +), (pi/2, -), (pi, -), (pi/2, +) for |y| <= |x| or not,
// x with or without its sign bit; the sign of y at the end. Both zero (t = 0) and both infinite
// (t = 1) give the C99 results; tiny or huge pairs are scaled by a power of two first so that
// the residual stays exact.
inline vf atan2(vf y, vf x) {
  using namespace detail;
  const vf ax = vabs(x), ay = vabs(y);
  const vi swap = ay > ax;
  vf num = sel(swap, ax, ay), den = sel(swap, ay, ax);
  const vi both_inf = (ax == INFINITY) & (ay == INFINITY);
  num = sel(both_inf, cf(1.0f), num);
  den = sel(both_inf | (den == 0.0f), cf(1.0f), den);
  const vf sc = sel(den > 0x1p100f, cf(0x1p-60f), sel(den < 0x1p-100f, cf(0x1p60f), cf(1.0f)));
  num = num * sc;
  den = den * sc;
  const vi eq = num == den;  // |y| = |x|: atan(1) = pi/4 exactly rounded
  const vf t0 = num / den;
  const vf tl = fma(-t0, den, num) * approx_rcp(den);
  vf w = sel(eq, cf(kPio4Lo), atan_w(t0, sel(tl == tl, tl, cf(0.0f))));  // x = inf: 0 * inf in the residual
  const vf t = sel(eq, cf(kPio4Hi), t0);
  const vi neg_x = sign_bit(x) != 0;
  const vi minus = swap ^ neg_x;  // sgn = -1
  const vf off_hi = sel(swap, cf(kPio2Hi), sel(neg_x, cf(kPiHi), cf(0.0f)));
  const vf off_lo = sel(swap, cf(kPio2Lo), sel(neg_x, cf(kPiLo), cf(0.0f)));
  const vi sgn = minus & INT32_MIN;
  const vf st = xor_sign(t, sgn);
  w = xor_sign(w, sgn);
  const vf h = off_hi + st;  // fast-two-sum (|off_hi| >= |t| whenever off_hi != 0)
  const vf res = h + ((((off_hi - h) + st) + off_lo) + w);
  return xor_sign(res, sign_bit(y));
}

}  // namespace math
}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
