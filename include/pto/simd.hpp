// SIMD selection and the vector building blocks of the fast implementations.
//
// The fast layer lives in an inline namespace named after the instruction set it was compiled
// for (pto::avx2 / pto::generic), so translation units built with different -m flags can be
// linked together without ODR clashes. Define PTO_SIMD_AVX2 to force the AVX2 path (e.g. under
// #pragma GCC target), or PTO_SIMD_GENERIC to force the portable one.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "pto/half.hpp"
#include "pto/types.hpp"

#if !defined(PTO_SIMD_AVX2) && !defined(PTO_SIMD_GENERIC) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define PTO_SIMD_AVX2 1
#endif

#if defined(PTO_SIMD_AVX2) && PTO_SIMD_AVX2
#include <immintrin.h>
#define PTO_ISA_NS avx2
#else
#undef PTO_SIMD_AVX2
#define PTO_ISA_NS generic
#endif

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {

// Name of the compiled-in instruction set (for benchmarks and logs).
constexpr const char* isa_name() {
#ifdef PTO_SIMD_AVX2
  return "avx2";
#else
  return "generic";
#endif
}

template <class T>
inline constexpr bool is16_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
// Type the fast kernels compute in: float for every floating type, the type itself otherwise.
template <class T>
using calc_t = std::conditional_t<is16_v<T>, float, T>;

#ifdef PTO_SIMD_AVX2
// 8 x 16-bit float -> 8 x float (exact).
template <class T>
inline __m256 cvt8_to_float(__m128i h) {
  if constexpr (std::is_same_v<T, half>)
    return _mm256_cvtph_ps(h);
  else
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
// 8 x float -> 8 x 16-bit float, round to nearest even, NaN stays NaN.
template <class T>
inline __m128i cvt8_from_float(__m256 f) {
  if constexpr (std::is_same_v<T, half>) {
    return _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else {
    const __m256i x = _mm256_castps_si256(f);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    // Pack the low 16 bits of the 8 lanes (they fit, so unsigned saturation is a no-op), then
    // undo the per-128-bit-half order of packus.
    const __m256i packed = _mm256_packus_epi32(r, r);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
  }
}
#endif

// Widens n 16-bit floats to float (exact).
template <class T>
inline void to_float(const T* src, float* dst, int n) {
  int i = 0;
#ifdef PTO_SIMD_AVX2
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, cvt8_to_float<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = float(src[i]);
}

// Narrows n floats to a 16-bit type, rounding to nearest even (NaN stays NaN).
template <class T>
inline void from_float(const float* src, T* dst, int n) {
  int i = 0;
#ifdef PTO_SIMD_AVX2
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), cvt8_from_float<T>(_mm256_loadu_ps(src + i)));
#endif
  for (; i < n; ++i) dst[i] = T(src[i]);
}

// Per-thread scratch of at least n elements of T (contents unspecified), kept between calls so
// small tiles do not allocate; Slot tells apart buffers used at the same time. Not a vector:
// vector<bool> has no data().
template <class T, int Slot = 0>
inline T* scratch(size_t n) {
  thread_local std::unique_ptr<T[]> buf;
  thread_local size_t cap = 0;
  if (n > cap) {
    buf.reset(new T[n]);
    cap = n;
  }
  return buf.get();
}

// ---- native float vectors (GCC vector extensions): 8 lanes (AVX) or 4 (SSE2) ------------------

#ifdef PTO_SIMD_AVX2
inline constexpr int kW = 8;
#else
inline constexpr int kW = 4;
#endif
using vf = float __attribute__((vector_size(4 * kW)));
using vi = int32_t __attribute__((vector_size(4 * kW)));

// Broadcasts a scalar operand. s - (+0) is s for every s, -0 and NaN included (vf{} + s would
// turn -0 into +0).
inline vf splat(float s) { return s - vf{}; }

// Loads kW elements of T widened to float.
template <class T>
inline vf vload(const T* p) {
  vf v;
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(&v, p, sizeof v);
#ifdef PTO_SIMD_AVX2
  } else if constexpr (is16_v<T>) {
    v = vf(cvt8_to_float<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#endif
  } else {
    for (int j = 0; j < kW; ++j) v[j] = float(p[j]);
  }
  return v;
}

// Stores kW floats narrowed to T (round to nearest even).
template <class T>
inline void vstore(T* p, vf v) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(p, &v, sizeof v);
  } else {
#ifdef PTO_SIMD_AVX2
    if constexpr (is16_v<T>) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), cvt8_from_float<T>(__m256(v)));
      return;
    }
#endif
    for (int j = 0; j < kW; ++j) p[j] = T(v[j]);
  }
}

// memcpy for non-overlapping tile rows. glibc switches to `rep movsb` above a few KiB, which
// runs at ~5 GB/s on some virtual machines (20x slower than vector moves), so large copies use
// vector moves.
inline void copy_bytes(void* dst, const void* src, size_t n) {
#ifdef PTO_SIMD_AVX2
  if (n >= 2048) {
    auto* d = static_cast<char*>(dst);
    auto* s = static_cast<const char*>(src);
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
      const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), a);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
    }
    std::memcpy(d + i, s + i, n - i);
    return;
  }
#endif
  std::memmove(dst, src, n);
}

// ---- exp ---------------------------------------------------------------------------------------
// exp(x) = 2^k * 2^(j/8) * e^r with n = round(x * 8 / ln2) = 8k + j and r = x - n ln2/8
// (|r| <= ln2/16; n ln2/8 in two parts, the first exact times n). 2^(j/8) is a table of hi + lo
// pairs read with one lane permute each, and the result is hi + (hi * expm1(r) + lo): only that
// last addition rounds at the result's magnitude, so about 98.6 % of results are correctly
// rounded (max 0.59 ulp; torch's MKL exp is close to that, a plain polynomial gives 74 %) at the
// cost of the former Cephes polynomial. 2^k is applied in two steps so that results in the
// subnormal range and up to FLT_MAX are right without special cases.
namespace exp_detail {
// 2^(j/8) = kTabHi[j] + kTabLo[j] to about 2^-48.
// clang-format off
alignas(32) inline constexpr float kTabHi[8] = {0x1p+0f, 0x1.172b84p+0f, 0x1.306fe0p+0f, 0x1.4bfdaep+0f,
                                                0x1.6a09e6p+0f, 0x1.8ace54p+0f, 0x1.ae89fap+0f, 0x1.d5818ep+0f};
alignas(32) inline constexpr float kTabLo[8] = {0.0f, -0x1.c15742p-27f, 0x1.4636e2p-25f, -0x1.593abcp-25f,
                                                0x1.9fcef4p-26f, 0x1.15506ep-27f, -0x1.a94b14p-26f, -0x1.822dbcp-27f};
// clang-format on
// 8 / ln2; ln2 / 8 = kLn2d8Hi + kLn2d8Lo, kLn2d8Hi of 13 bits: n * kLn2d8Hi is exact (|n| <= 1200).
constexpr float kInvLn2x8 = 0x1.715476p+3f, kLn2d8Hi = 0x1.62ep-4f, kLn2d8Lo = 0x1.0bfbe8p-18f;
// expm1(r) = r + r^2 (1/2 + r (1/6 + r (1/24 + r / 120))) (truncation below 2^-36 on |r| <= ln2/16).
constexpr float kQ2 = 0.5f, kQ3 = 0x1.555556p-3f, kQ4 = 0x1.555556p-5f, kQ5 = 0x1.111112p-7f;
// Cody-Waite split of ln2 (9-bit high part), for expm1 and the hyperbolic functions.
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kHi = 89.0f, kLo = -104.0f;  // beyond these the result is inf / 0
}  // namespace exp_detail

#ifdef PTO_SIMD_AVX2
// exp of U independent vectors in registers, statement by statement: exp is one long
// dependency chain per vector, and interleaving U = 4 of them keeps the FMA pipes busy
// (about 1.4x the throughput of U = 1 on Zen 3). Every exp of the library and of generated
// kernels goes through here, so all give the same bits.
template <int U>
inline void exp_vec(__m256 (&v)[U]) {
  using namespace exp_detail;
  const __m256 thi = _mm256_load_ps(kTabHi), tlo = _mm256_load_ps(kTabLo);
  __m256 x[U], n[U], r[U], q[U];
  // max/min return their second operand when either is NaN: NaN flows through into r.
  for (int u = 0; u < U; ++u) x[u] = _mm256_min_ps(_mm256_set1_ps(kHi), _mm256_max_ps(_mm256_set1_ps(kLo), v[u]));
  for (int u = 0; u < U; ++u)
    n[u] =
        _mm256_round_ps(_mm256_mul_ps(x[u], _mm256_set1_ps(kInvLn2x8)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  for (int u = 0; u < U; ++u) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(kLn2d8Hi), x[u]);  // exact
  for (int u = 0; u < U; ++u) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(kLn2d8Lo), r[u]);
  for (int u = 0; u < U; ++u) q[u] = _mm256_fmadd_ps(_mm256_set1_ps(kQ5), r[u], _mm256_set1_ps(kQ4));
  for (int u = 0; u < U; ++u) q[u] = _mm256_fmadd_ps(q[u], r[u], _mm256_set1_ps(kQ3));
  for (int u = 0; u < U; ++u) q[u] = _mm256_fmadd_ps(q[u], r[u], _mm256_set1_ps(kQ2));
  for (int u = 0; u < U; ++u) q[u] = _mm256_fmadd_ps(q[u], _mm256_mul_ps(r[u], r[u]), r[u]);
  for (int u = 0; u < U; ++u) {
    const __m256i ni = _mm256_cvtps_epi32(n[u]);  // the permutes read its low 3 bits: j
    const __m256 hi = _mm256_permutevar8x32_ps(thi, ni);
    const __m256 s = _mm256_add_ps(hi, _mm256_fmadd_ps(hi, q[u], _mm256_permutevar8x32_ps(tlo, ni)));
    // 2^k = 2^k1 * 2^k2 with k1 = k >> 1 (k in [-150, 128], both halves normal).
    const __m256i k = _mm256_srai_epi32(ni, 3);
    const __m256i k1 = _mm256_srai_epi32(k, 1);
    const __m256i k2 = _mm256_sub_epi32(k, k1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    v[u] = _mm256_mul_ps(_mm256_mul_ps(s, s1), s2);
  }
}

#if defined(__AVX512F__)
// exp_vec on 16 lanes: the same steps in the same order (the 8-entry tables read through a
// 16-entry permute of two copies), so every lane gives exp_vec's bits.
template <int U>
inline void exp_vec16(__m512 (&v)[U]) {
  using namespace exp_detail;
  const __m512 thi = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_load_ps(kTabHi))));
  const __m512 tlo = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_load_ps(kTabLo))));
  __m512 x[U], n[U], r[U], q[U];
  for (int u = 0; u < U; ++u) x[u] = _mm512_min_ps(_mm512_set1_ps(kHi), _mm512_max_ps(_mm512_set1_ps(kLo), v[u]));
  for (int u = 0; u < U; ++u)
    n[u] = _mm512_roundscale_ps(_mm512_mul_ps(x[u], _mm512_set1_ps(kInvLn2x8)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  for (int u = 0; u < U; ++u) r[u] = _mm512_fnmadd_ps(n[u], _mm512_set1_ps(kLn2d8Hi), x[u]);
  for (int u = 0; u < U; ++u) r[u] = _mm512_fnmadd_ps(n[u], _mm512_set1_ps(kLn2d8Lo), r[u]);
  for (int u = 0; u < U; ++u) q[u] = _mm512_fmadd_ps(_mm512_set1_ps(kQ5), r[u], _mm512_set1_ps(kQ4));
  for (int u = 0; u < U; ++u) q[u] = _mm512_fmadd_ps(q[u], r[u], _mm512_set1_ps(kQ3));
  for (int u = 0; u < U; ++u) q[u] = _mm512_fmadd_ps(q[u], r[u], _mm512_set1_ps(kQ2));
  for (int u = 0; u < U; ++u) q[u] = _mm512_fmadd_ps(q[u], _mm512_mul_ps(r[u], r[u]), r[u]);
  for (int u = 0; u < U; ++u) {
    const __m512i ni = _mm512_cvtps_epi32(n[u]);
    const __m512 hi = _mm512_permutexvar_ps(ni, thi);
    const __m512 s = _mm512_add_ps(hi, _mm512_fmadd_ps(hi, q[u], _mm512_permutexvar_ps(ni, tlo)));
    const __m512i k = _mm512_srai_epi32(ni, 3);
    const __m512i k1 = _mm512_srai_epi32(k, 1);
    const __m512i k2 = _mm512_sub_epi32(k, k1);
    const __m512i bias = _mm512_set1_epi32(127);
    const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k1, bias), 23));
    const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k2, bias), 23));
    v[u] = _mm512_mul_ps(_mm512_mul_ps(s, s1), s2);
  }
}
#endif

template <int U>
inline void exp_block(const float* in, float* out) {
  __m256 v[U];
  for (int u = 0; u < U; ++u) v[u] = _mm256_loadu_ps(in + 8 * u);
  exp_vec<U>(v);
  for (int u = 0; u < U; ++u) _mm256_storeu_ps(out + 8 * u, v[u]);
}
#endif

// y[i] = exp(x[i]); x and y may be the same array.
inline void exp_array(const float* x, float* y, int n) {
  int i = 0;
#ifdef PTO_SIMD_AVX2
  for (; i + 32 <= n; i += 32) exp_block<4>(x + i, y + i);
  for (; i + 8 <= n; i += 8) exp_block<1>(x + i, y + i);
  if (i < n) {  // tail through the same vector code, so results do not depend on position
    alignas(32) float t[8] = {};
    std::memcpy(t, x + i, sizeof(float) * (n - i));
    exp_block<1>(t, t);
    std::memcpy(y + i, t, sizeof(float) * (n - i));
  }
#else
  for (; i < n; ++i) y[i] = std::exp(x[i]);
#endif
}

}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
