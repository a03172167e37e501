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

#include "pto/half.hpp"
#include "pto/types.hpp"

#if !defined(PTO_SIMD_AVX2) && !defined(PTO_SIMD_GENERIC) && defined(__AVX2__) && \
    defined(__FMA__) && defined(__F16C__)
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

// Widens n 16-bit floats to float (exact).
template <class T>
inline void to_float(const T* src, float* dst, int n) {
  int i = 0;
#ifdef PTO_SIMD_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m256 f;
    if constexpr (std::is_same_v<T, half>) f = _mm256_cvtph_ps(h);
    else f = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    _mm256_storeu_ps(dst + i, f);
  }
#endif
  for (; i < n; ++i) dst[i] = float(src[i]);
}

// Narrows n floats to a 16-bit type, rounding to nearest even (NaN stays NaN).
template <class T>
inline void from_float(const float* src, T* dst, int n) {
  int i = 0;
#ifdef PTO_SIMD_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(src + i);
    __m128i h;
    if constexpr (std::is_same_v<T, half>) {
      h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
      const __m256i x = _mm256_castps_si256(f);
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
      const __m256i rounded = _mm256_srli_epi32(
          _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
      const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
      const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
      const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
      // Pack the low 16 bits of the 8 lanes (values fit in 16 bits, so unsigned saturation is
      // a no-op), then fix the lane order that packus does per 128-bit half.
      const __m256i packed = _mm256_packus_epi32(r, r);
      h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = T(src[i]);
}

// ---- exp ---------------------------------------------------------------------------------------
// exp(x) = 2^n * e^r with n = round(x / ln2), r = x - n ln2 (Cody-Waite split), e^r by the
// Cephes degree-7 polynomial; max error about 1 ulp. 2^n is applied in two steps so that results
// in the subnormal range and up to FLT_MAX are right without special cases.
namespace exp_detail {
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
constexpr float kHi = 89.0f, kLo = -104.0f;  // beyond these the result is inf / 0
}  // namespace exp_detail

#ifdef PTO_SIMD_AVX2
inline __m256 exp8(__m256 x) {
  using namespace exp_detail;
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLo)), _mm256_set1_ps(kHi));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n = 2^n1 * 2^n2 with n1 = n >> 1 (n in [-150, 129], both halves normal).
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN in, NaN out
}
#endif

// y[i] = exp(x[i]); x and y may be the same array.
inline void exp_array(const float* x, float* y, int n) {
  int i = 0;
#ifdef PTO_SIMD_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
  if (i < n) {  // tail through the same vector code, so results do not depend on position
    alignas(32) float t[8] = {};
    std::memcpy(t, x + i, sizeof(float) * (n - i));
    _mm256_store_ps(t, exp8(_mm256_load_ps(t)));
    std::memcpy(y + i, t, sizeof(float) * (n - i));
  }
#else
  for (; i < n; ++i) y[i] = std::exp(x[i]);
#endif
}

}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
