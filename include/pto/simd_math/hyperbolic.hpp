// Hyperbolic functions of pto/simd_math.hpp (include that header, not this one): sinh, cosh,
// tanh, asinh, acosh, atanh. tanh is in float; the others in double on the two halves, rounded
// once: expm1 / log in double leave no cancellation or overflow to worry about.
#pragma once

#include "pto/simd_math/exp_log.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {
namespace math {

// sinh|x| = (em + em / (em + 1)) / 2 with em = expm1|x| (no cancellation for small x, and no
// overflow in double for |x| <= 100, beyond which the float result is inf anyway).
inline vf sinh(vf x) {
  using namespace detail;
  const vf r = via_double(vabs(x), [&](vd v) {
    const vd em = expm1_d(clamp(v, 0.0, 100.0));
    return 0.5 * (em + em / (em + 1.0));
  });
  return xor_sign(r, sign_bit(x));
}

// cosh x = (e + 1 / e) / 2, e = e^|x|.
inline vf cosh(vf x) {
  using namespace detail;
  return via_double(vabs(x), [&](vd v) {
    const vd e = expm1_d(clamp(v, 0.0, 100.0)) + 1.0;
    return 0.5 * (e + 1.0 / e);
  });
}

// tanh in float. |x| < 1: |x| + |x| z P(z), z = x^2, minimax P of degree 6 (relative error
// 2^-27.7). Above: 1 - 2 / (e^(2|x|) + 1) with e^(2|x|) = 2^n (1 + expm1(r)) (Cody-Waite), where
// 2 / (e + 1) < 0.24 keeps its rounding errors to a fraction of the result's ulp; |x| >= 9.1
// rounds to 1.
inline vf tanh(vf x) {
  using namespace detail;
  using exp_detail::kLn2Hi, exp_detail::kLn2Lo;
  const vf a = vabs(x);
  const vf z = a * a;
  const vf p = horner(z, -0.0003584520018193871f, 0.0023013646714389324f, -0.007946106605231762f,
                      0.021486656740307808f, -0.05387980118393898f, 0.13332344591617584f, -0.33333295583724976f);
  const vf small = mla(a * z, p, a);
  const vf b = 2.0f * clamp(a, 0.0f, 9.125f);
  const vf n = round_even(b * 1.44269504088896341f);
  const vf r = (b - n * kLn2Hi) - n * kLn2Lo;  // kLn2Hi has 9 bits: exact
  const vf e = (expm1_poly(r) + 1.0f) * pow2i(to_int(n));
  const vf big = 1.0f - 2.0f / (e + 1.0f);
  return xor_sign(sel(a < 1.0f, small, big), sign_bit(x));
}

// asinh|x| = log(|x| + sqrt(x^2 + 1)); for |x| < 2^-12 the result rounds to x (and double's
// log of 1 + tiny would lose the bits).
inline vf asinh(vf x) {
  using namespace detail;
  const vf a = vabs(x);
  const vf r = via_double(a, [&](vd v) { return log_d(v + vsqrt(mla(v, v, cd(1.0)))); });
  return sel((a < 0x1p-12f) | (a == INFINITY) | (x != x), x, xor_sign(r, sign_bit(x)));
}

// acosh x = log(x + sqrt(x^2 - 1)) for x >= 1 (x^2 - 1 is exact in double near 1, so the
// argument of log is 1 + at least 2^-11 there); NaN below 1.
inline vf acosh(vf x) {
  using namespace detail;
  const vf r = via_double(x, [&](vd v) { return log_d(v + vsqrt(mla(v, v, cd(-1.0)))); });
  return sel(x < 1.0f, cf(NAN), sel((x == INFINITY) | (x != x), x, r));
}

// atanh|x| = log((1 + |x|) / (1 - |x|)) / 2 (1 +- |x| exact in double); |x| < 2^-12 rounds to x;
// +-1 gives +-inf, |x| > 1 NaN.
inline vf atanh(vf x) {
  using namespace detail;
  const vf a = vabs(x);
  const vf r = via_double(sel(a < 1.0f, a, cf(0.5f)), [&](vd v) { return 0.5 * log_d((1.0 + v) / (1.0 - v)); });
  vf res = sel(a == 1.0f, cf(INFINITY), sel(a > 1.0f, cf(NAN), r));
  res = xor_sign(res, sign_bit(x));
  return sel((a < 0x1p-12f) | (x != x), x, res);
}

}  // namespace math
}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
