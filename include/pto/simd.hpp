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
// exp(x) = 2^n * e^r with n = round(x / ln2), r = x - n ln2 (Cody-Waite split), e^r by the
// Cephes degree-7 polynomial; max error about 1 ulp. 2^n is applied in two steps so that results
// in the subnormal range and up to FLT_MAX are right without special cases.
namespace exp_detail {
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f, kP3 = 4.1665795894e-2f,
                kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
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
  __m256 x[U], n[U], r[U], p[U];
  // max/min return their second operand when either is NaN: NaN flows through into p.
  for (int u = 0; u < U; ++u) x[u] = _mm256_min_ps(_mm256_set1_ps(kHi), _mm256_max_ps(_mm256_set1_ps(kLo), v[u]));
  for (int u = 0; u < U; ++u)
    n[u] = _mm256_round_ps(_mm256_mul_ps(x[u], _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  for (int u = 0; u < U; ++u) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(kLn2Hi), x[u]);
  for (int u = 0; u < U; ++u) r[u] = _mm256_fnmadd_ps(n[u], _mm256_set1_ps(kLn2Lo), r[u]);
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(_mm256_set1_ps(kP0), r[u], _mm256_set1_ps(kP1));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kP2));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kP3));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kP4));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(kP5));
  for (int u = 0; u < U; ++u)
    p[u] = _mm256_fmadd_ps(p[u], _mm256_mul_ps(r[u], r[u]), _mm256_add_ps(r[u], _mm256_set1_ps(1.0f)));
  // 2^n = 2^n1 * 2^n2 with n1 = n >> 1 (n in [-150, 129], both halves normal).
  for (int u = 0; u < U; ++u) {
    const __m256i ni = _mm256_cvtps_epi32(n[u]);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    v[u] = _mm256_mul_ps(_mm256_mul_ps(p[u], s1), s2);
  }
}

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
