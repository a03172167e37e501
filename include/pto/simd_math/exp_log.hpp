// Exponentials and logarithms of pto/simd_math.hpp (include that header, not this one):
// exp, exp2, expm1, log, log2, log10, log1p in float, plus the double kernels (exp, expm1,
// log, log2 of double vectors) that the double-based functions build on.
#pragma once

#include "pto/simd_math/common.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {
namespace math {

// ---- exp ---------------------------------------------------------------------------------------
// Under AVX2 exactly simd::exp_vec (one algorithm for every exp of the project); the generic build
// runs the same steps with separate multiplies and adds.
inline vf exp(vf x) {
#ifdef PTO_SIMD_AVX2
  __m256 v[1] = {x};
  exp_vec<1>(v);
  return v[0];
#else
  using namespace detail;
  using namespace exp_detail;
  x = clamp(x, kLo, kHi);
  const vf n = round_even(x * kInvLn2x8);
  vf r = x - n * kLn2d8Hi;  // exact: kLn2d8Hi has 13 bits
  r = r - n * kLn2d8Lo;
  const vf q = horner(r, kQ5, kQ4, kQ3, kQ2) * (r * r) + r;
  const vi ni = to_int(n);
  vf hi, lo;
  for (int i = 0; i < kW; ++i) {
    hi[i] = kTabHi[ni[i] & 7];
    lo[i] = kTabLo[ni[i] & 7];
  }
  return ldexp2(hi + (hi * q + lo), ni >> 3);
#endif
}

// ---- exp2 --------------------------------------------------------------------------------------
// 2^x = 2^n * 2^r with n = rint(x) and r = x - n exact in [-1/2, 1/2]; 2^r = 1 + r q(r) with a
// degree-5 minimax q (relative error 2^-29). Integers x give exact powers of two; results in the
// subnormal range round once (ldexp2).
inline vf exp2(vf x) {
  using namespace detail;
  x = clamp(x, -151.0f, 129.0f);  // beyond: 0 / inf (NaN passes)
  const vf n = round_even(x);
  const vf r = x - n;
  const vf q = horner(r, 0.00015353361959569156f, 0.0013398873852565885f, 0.00961843691766262f, 0.055503323674201965f,
                      0.24022647738456726f, 0.6931471824645996f);
  return ldexp2(mla(r, q, cf(1.0f)), to_int(n));
}

// ---- expm1 -------------------------------------------------------------------------------------
namespace detail {
// expm1(r) = r + r^2 Q(r) on |r| <= 1/2, minimax Q of degree 6 (relative error 2^-33).
inline vf expm1_poly(vf r) {
  const vf q = horner(r, 2.4790830138954334e-05f, 0.0001997358340304345f, 0.001388930482789874f, 0.008333141915500164f,
                      0.0416666604578495f, 0.1666666716337204f, 0.5f);
  return mla(r * r, q, r);
}
}  // namespace detail

// |x| < 1/2: the polynomial alone. Otherwise x = n ln2 + r (Cody-Waite, |r| <= ln2/2) and
// expm1(x) = 2^n (expm1(r) + 1 - 2^-n), where 1 - 2^-n is exact for -24 <= n <= 24 so only the
// final sum rounds (for larger n the 2^-n goes into expm1(r) first). Not reducing below 1/2 keeps
// expm1(r) + 1/2 away from cancellation at n = 1.
inline vf expm1(vf x) {
  using namespace detail;
  using exp_detail::kLn2Hi, exp_detail::kLn2Lo;
  const vf c = clamp(x, -17.5f, 89.0f);  // below -17.33 the result rounds to -1; above 88.73 it is inf
  const vi small = vabs(c) < 0.5f;
  const vf n = sel(small, cf(0.0f), round_even(c * 1.44269504088896341f));
  const vf r = (c - n * kLn2Hi) - n * kLn2Lo;  // kLn2Hi has 9 bits: n * kLn2Hi and the difference exact
  const vf p = expm1_poly(r);
  const vi ni = to_int(n);
  const vf m = pow2i(-sel(ni < 60, ni, ci(60)));  // 2^-n
  const vf s = sel(ni <= 24, p + (1.0f - m), (p - m) + 1.0f);
  vf res = sel(ni == 0, p, ldexp2(s, ni));
  return sel(vabs(x) < 0x1p-25f, x, res);  // tiny x (also -0 and subnormals): expm1(x) rounds to x
}

// ---- log, log2, log10, log1p -------------------------------------------------------------------
namespace detail {
// x = 2^k (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), for finite x > 0 (subnormals too), and
// log(1 + f) = f - hfsq + t with hfsq = f^2 / 2, t = s (hfsq + R(s^2)), s = f / (2 + f):
// since f - hfsq (1 - s) = 2s exactly, R(z) = 2 atanh(s) / s - 2 is even in s. R is a degree-3
// minimax (absolute error 2^-29, relative to log(1 + f) far smaller). The split keeps the big
// terms f and hfsq exact so that log2 / log10 can scale them in pieces.
struct LogParts {
  vf f, k, hfsq, t;
};
inline LogParts log_parts(vf x) {
  const vi sub = x < 0x1p-126f;
  x = sel(sub, x * 0x1p25f, x);
  vi ix = as_i(x) + (0x3f800000 - 0x3f3504f3);  // exponent of x / sqrt(2), rounded up
  const vf k = to_float((ix >> 23) - 127) - as_f(sub & as_i(cf(25.0f)));
  ix = (ix & 0x007fffff) + 0x3f3504f3;
  const vf f = as_f(ix) - 1.0f;
  const vf s = f / (2.0f + f);
  const vf z = s * s;
  const vf R = z * horner(z, 0.29871729016304016f, 0.3997754156589508f, 0.6666677594184875f);
  const vf hfsq = 0.5f * f * f;
  return {f, k, hfsq, s * (hfsq + R)};
}
// Results for x outside (0, inf): log(0) = -inf, log(negative) = NaN, log(inf) = inf, NaN.
inline vf log_special(vf x, vf r) {
  const vf special = sel(x == 0.0f, cf(-INFINITY), sel(x < 0.0f, cf(NAN), x));
  return sel((x > 0.0f) & (x < INFINITY), r, special);
}
// log(1 + f) = hi + lo with hi holding the leading 12 bits, so hi * (12-bit constant) is exact.
inline void log_hilo(const LogParts& p, vf& hi, vf& lo) {
  hi = as_f(as_i(p.f - p.hfsq) & int32_t(0xfffff000));
  lo = ((p.f - hi) - p.hfsq) + p.t;
}
constexpr float kLn2Hi16 = 0.693145751953125f, kLn2Lo16 = 1.428606765330187e-06f;  // k * hi exact
}  // namespace detail

inline vf log(vf x) {
  using namespace detail;
  const LogParts p = log_parts(x);
  const vf r = p.k * kLn2Hi16 + (p.f - (p.hfsq - (p.t + p.k * kLn2Lo16)));
  return log_special(x, r);
}

inline vf log2(vf x) {
  using namespace detail;
  constexpr float kInvLn2Hi = 1.44287109375f, kInvLn2Lo = -0.00017605285393074155f;  // hi: 12 bits
  const LogParts p = log_parts(x);
  vf hi, lo;
  log_hilo(p, hi, lo);
  const vf r = (((lo + hi) * kInvLn2Lo + lo * kInvLn2Hi) + hi * kInvLn2Hi) + p.k;
  return log_special(x, r);
}

inline vf log10(vf x) {
  using namespace detail;
  constexpr float kInvLn10Hi = 0.434326171875f, kInvLn10Lo = -3.168997136526741e-05f;  // hi: 12 bits
  constexpr float kLog10_2Hi = 0.301025390625f, kLog10_2Lo = 4.605039066518657e-06f;   // hi: 12 bits
  const LogParts p = log_parts(x);
  vf hi, lo;
  log_hilo(p, hi, lo);
  const vf r = (((p.k * kLog10_2Lo + (lo + hi) * kInvLn10Lo) + lo * kInvLn10Hi) + hi * kInvLn10Hi) + p.k * kLog10_2Hi;
  return log_special(x, r);
}

// log1p(x) = log(u) + c / u where u = fl(1 + x) and c = 1 + x - u exactly (two-sum), so the
// rounding of 1 + x costs nothing.
inline vf log1p(vf x) {
  using namespace detail;
  const vf u = 1.0f + x;
  const vf bv = u - 1.0f;
  const vf c = (1.0f - (u - bv)) + (x - bv);
  const LogParts p = log_parts(u);
  const vf cu = c / u;  // below 2^-24 relative to u, but not to the result when x is small
  const vf r = p.k * kLn2Hi16 + (p.f - (p.hfsq - (p.t + (p.k * kLn2Lo16 + cu))));
  return sel(vabs(x) < 0x1p-24f, x, log_special(u, r));  // tiny x: log1p(x) rounds to x
}

// ---- double kernels ----------------------------------------------------------------------------
// For the functions that compute in double and round once at the end: these only need about
// 2^-32 relative accuracy (1/256 of float's half ulp), and take no special inputs.
namespace detail {
constexpr double kShift52 = 0x1.8p52;  // adding it rounds to an integer, held in the low bits
constexpr double kLn2HiD = 0x1.62e42fee00000p-1, kLn2LoD = 0x1.a39ef35793c76p-33;  // n * hi exact
// 2^n for k = n + kShift52 (n integer in [-1022, 1023]).
inline vd pow2_shifted(vd k) { return as_d((as_l(k) << 52) + (int64_t(1023) << 52)); }
// e^r - 1 on |r| <= ln2/2: r + r^2 Q(r), Q minimax of degree 5 (relative error 2^-32).
inline vd expm1_poly_d(vd r) {
  const vd q = horner(r, 0.00019845877196127141, 0.0013940617027037145, 0.0083333893459904051, 0.041666361035082964,
                      0.16666666370644582, 0.5000000044137485);
  return mla(r * r, q, r);
}
// e^t - 1 for 0 <= t <= 700 (or NaN): 2^n (e^r - 1) + (2^n - 1), n = rint(t / ln2).
inline vd expm1_d(vd t) {
  const vd k = t * 1.4426950408889634 + kShift52;
  const vd n = k - kShift52;
  const vd r = (t - n * kLn2HiD) - n * kLn2LoD;
  const vd s = pow2_shifted(k);
  return mla(s, expm1_poly_d(r), s - 1.0);
}
// e^t for |t| <= 700 (or NaN).
inline vd exp_d(vd t) {
  const vd k = t * 1.4426950408889634 + kShift52;
  const vd n = k - kShift52;
  const vd r = (t - n * kLn2HiD) - n * kLn2LoD;
  return (expm1_poly_d(r) + 1.0) * pow2_shifted(k);
}
// 2^t for |t| <= 1000 (or NaN): 2^n (1 + r q(r)), n = rint(t), r = t - n exact; q of degree 6
// (relative error 2^-34).
inline vd exp2_d(vd t) {
  const vd k = t + kShift52;
  const vd r = t - (k - kShift52);
  const vd q = horner(r, 0.000015196157367063003, 0.00015466756322858999, 0.0013333935052025845, 0.0096180381320397407,
                      0.055504103659957525, 0.24022651066561319, 0.69314718070453075);
  return mla(r, q, cd(1.0)) * pow2_shifted(k);
}
// x = 2^k m with m in [sqrt(1/2), sqrt(2)), for finite normal x > 0; returns s = (m - 1) / (m + 1)
// and k, from which log(m) = 2 atanh(s) is a short odd series.
inline vd log_reduce_d(vd x, vd& k) {
  constexpr int64_t kSqrtHalf = 0x3fe6a09e667f3bcd;
  vl ix = as_l(x) + (0x3ff0000000000000 - kSqrtHalf);
  k = as_d((ix >> 52) | as_l(cd(0x1p52))) - (0x1p52 + 1023.0);
  ix = (ix & 0x000fffffffffffff) + kSqrtHalf;
  const vd f = as_d(ix) - 1.0;
  return f / (2.0 + f);
}
// log(x), relative error 2^-37.
inline vd log_d(vd x) {
  vd k;
  const vd s = log_reduce_d(x, k);
  const vd z = s * s;
  const vd l = horner(z, 0.23582152665120281, 0.28537308475241764, 0.4000033519184076, 0.66666665645452669);
  return mla(k, cd(0.6931471805599453), mla(s * z, l, s + s));
}
// log2(x), relative error 2^-37.7.
inline vd log2_d(vd x) {
  vd k;
  const vd s = log_reduce_d(x, k);
  const vd l = horner(s * s, 0.34073839660153347, 0.41167221524428376, 0.5770835945260815, 0.96179667328372488,
                      2.8853900817901415);
  return mla(s, l, k);
}
}  // namespace detail

}  // namespace math
}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
