// Building blocks of pto/simd_math.hpp (include that header, not this one): bit casts, lane
// selects, multiply-add, exact rounding helpers, and float <-> double vector halves for the
// functions that compute in double internally.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "pto/simd.hpp"

#if !defined(PTO_SIMD_AVX2) && defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {
namespace math {
namespace detail {

// double / int64 vectors of the same byte size as vf: kW / 2 lanes, a vf is two of them.
using vd = double __attribute__((vector_size(4 * kW)));
using vl = int64_t __attribute__((vector_size(4 * kW)));

// ---- bits and lanes ------------------------------------------------------------------------
inline vi as_i(vf x) { return (vi)x; }
inline vf as_f(vi x) { return (vf)x; }
inline vl as_l(vd x) { return (vl)x; }
inline vd as_d(vl x) { return (vd)x; }
inline vf cf(float c) { return splat(c); }
inline vi ci(int32_t c) { return vi{} + c; }
inline vd cd(double c) { return c - vd{}; }

inline vf sel(vi m, vf a, vf b) { return m ? a : b; }
inline vi sel(vi m, vi a, vi b) { return m ? a : b; }
inline vd sel(vl m, vd a, vd b) { return m ? a : b; }

inline vf vabs(vf x) { return as_f(as_i(x) & 0x7fffffff); }
inline vd vabs(vd x) { return as_d(as_l(x) & INT64_MAX); }
inline vi sign_bit(vf x) { return as_i(x) & INT32_MIN; }
inline vf xor_sign(vf x, vi s) { return as_f(as_i(x) ^ s); }  // s: a sign bit (or 0) per lane
inline vf vcopysign(vf mag, vf s) { return as_f((as_i(mag) & 0x7fffffff) | sign_bit(s)); }
inline vi is_inf(vf x) { return vabs(x) == INFINITY; }
// x limited to [lo, hi]; a NaN x stays NaN (max / min return their second operand on NaN).
inline vf clamp(vf x, float lo, float hi) {
#ifdef PTO_SIMD_AVX2
  return _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), x));
#elif defined(__SSE2__)
  return vf(_mm_min_ps(_mm_set1_ps(hi), _mm_max_ps(_mm_set1_ps(lo), __m128(x))));
#else
  x = sel(x < lo, cf(lo), x);
  return sel(x > hi, cf(hi), x);
#endif
}

inline bool any(vi m) {
#ifdef PTO_SIMD_AVX2
  return _mm256_movemask_ps(__m256(m)) != 0;
#elif defined(__SSE2__)
  return _mm_movemask_ps(__m128(m)) != 0;
#else
  int r = 0;
  for (int j = 0; j < kW; ++j) r |= m[j];
  return r != 0;
#endif
}

// ---- float <-> double halves ---------------------------------------------------------------
struct vd2 {
  vd lo, hi;
};
inline vd2 to_d(vf x) {
#ifdef PTO_SIMD_AVX2
  return {_mm256_cvtps_pd(_mm256_castps256_ps128(x)), _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))};
#elif defined(__SSE2__)
  return {_mm_cvtps_pd(__m128(x)), _mm_cvtps_pd(_mm_movehl_ps(__m128(x), __m128(x)))};
#else
  return {vd{x[0], x[1]}, vd{x[2], x[3]}};
#endif
}
inline vf to_f(vd lo, vd hi) {  // each lane rounded once, to nearest even
#ifdef PTO_SIMD_AVX2
  return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
#elif defined(__SSE2__)
  return vf(_mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi)));
#else
  return vf{float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])};
#endif
}
inline vd clamp(vd x, double lo, double hi) {
#ifdef PTO_SIMD_AVX2
  return _mm256_min_pd(_mm256_set1_pd(hi), _mm256_max_pd(_mm256_set1_pd(lo), x));
#elif defined(__SSE2__)
  return vd(_mm_min_pd(_mm_set1_pd(hi), _mm_max_pd(_mm_set1_pd(lo), __m128d(x))));
#else
  x = sel(x < lo, cd(lo), x);
  return sel(x > hi, cd(hi), x);
#endif
}
// f applied to the double halves of x (and y), result rounded once to float.
template <class F>
inline vf via_double(vf x, F f) {
  const vd2 d = to_d(x);
  return to_f(f(d.lo), f(d.hi));
}
template <class F>
inline vf via_double(vf x, vf y, F f) {
  const vd2 a = to_d(x), b = to_d(y);
  return to_f(f(a.lo, b.lo), f(a.hi, b.hi));
}

// ---- multiply-add --------------------------------------------------------------------------
// mla: a*b + c as fast as the target allows (fused under AVX2, two roundings otherwise): for
// polynomials, whose error budget allows either.
// fma: a*b + c rounded once (or so nearly that no algorithm here can tell: the generic build
// forms the exact product in double and rounds the sum twice), for the error-free steps.
inline vf mla(vf a, vf b, vf c) {
#ifdef PTO_SIMD_AVX2
  return _mm256_fmadd_ps(a, b, c);
#else
  return a * b + c;
#endif
}
inline vd mla(vd a, vd b, vd c) {
#ifdef PTO_SIMD_AVX2
  return _mm256_fmadd_pd(a, b, c);
#else
  return a * b + c;
#endif
}
inline vf fma(vf a, vf b, vf c) {
#ifdef PTO_SIMD_AVX2
  return _mm256_fmadd_ps(a, b, c);
#else
  const vd2 x = to_d(a), y = to_d(b), z = to_d(c);
  return to_f(x.lo * y.lo + z.lo, x.hi * y.hi + z.hi);
#endif
}

// Horner's rule with constant coefficients, highest degree first: horner(x, c_n, ..., c_0).
template <class V, class... C>
inline V horner(V x, double cn, C... rest) {
  using E = std::remove_cvref_t<decltype(x[0])>;
  V r = V{} + E(cn);
  ((r = mla(r, x, V{} + E(rest))), ...);
  return r;
}

inline vf vsqrt(vf x) {
#ifdef PTO_SIMD_AVX2
  return _mm256_sqrt_ps(x);
#elif defined(__SSE2__)
  return vf(_mm_sqrt_ps(__m128(x)));
#else
  for (int j = 0; j < kW; ++j) x[j] = std::sqrt(x[j]);
  return x;
#endif
}
inline vd vsqrt(vd x) {
#ifdef PTO_SIMD_AVX2
  return _mm256_sqrt_pd(x);
#elif defined(__SSE2__)
  return vd(_mm_sqrt_pd(__m128d(x)));
#else
  for (int j = 0; j < kW / 2; ++j) x[j] = std::sqrt(x[j]);
  return x;
#endif
}
// 1 / x to about 12 bits (only for correction terms that are already tiny).
inline vf approx_rcp(vf x) {
#ifdef PTO_SIMD_AVX2
  return _mm256_rcp_ps(x);
#else
  return 1.0f / x;
#endif
}

// ---- rounding to integers ------------------------------------------------------------------
// Nearest integer, ties to even. The generic form (adding and subtracting 1.5 * 2^23) needs
// |x| < 2^22, which every caller guarantees.
inline vf round_even(vf x) {
#ifdef PTO_SIMD_AVX2
  return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  return (x + 0x1.8p23f) - 0x1.8p23f;
#endif
}
inline vd round_even(vd x) {  // generic: |x| < 2^51
#ifdef PTO_SIMD_AVX2
  return _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  return (x + 0x1.8p52) - 0x1.8p52;
#endif
}
inline vi to_int(vf x) { return __builtin_convertvector(x, vi); }  // truncates
// The two double halves, truncated to int32 (values in range), as one int vector.
inline vi to_int(vd lo, vd hi) {
#ifdef PTO_SIMD_AVX2
  return vi(_mm256_set_m128i(_mm256_cvttpd_epi32(hi), _mm256_cvttpd_epi32(lo)));
#elif defined(__SSE2__)
  return vi(_mm_unpacklo_epi64(_mm_cvttpd_epi32(__m128d(lo)), _mm_cvttpd_epi32(__m128d(hi))));
#else
  return vi{int32_t(lo[0]), int32_t(lo[1]), int32_t(hi[0]), int32_t(hi[1])};
#endif
}
inline vf to_float(vi x) { return __builtin_convertvector(x, vf); }

// 2^n for integer n in [-126, 127].
inline vf pow2i(vi n) { return as_f((n + 127) << 23); }
// x * 2^n for n in [-252, 254] without intermediate overflow or double rounding: the first
// factor keeps x * 2^n1 normal, only the second product rounds.
inline vf ldexp2(vf x, vi n) {
  const vi n1 = n >> 1;
  return x * pow2i(n1) * pow2i(n - n1);
}

}  // namespace detail
}  // namespace math
}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
