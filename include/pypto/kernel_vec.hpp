// The vector that generated fused loops compute on (codegen/fused_loops.cpp, row_fusion.cpp):
// 16 floats where the kernel is built with AVX-512, else 8 (AVX2 + FMA). The emitters write
// these names only, so one generated loop serves both widths. Every operation is the same
// IEEE operation lane by lane at either width (exp: pto::simd::exp_vec's steps), so an
// elementwise result has the same bits at both; a row reduction folds its lanes in lane
// order, so its rounding depends on the width, as any vectorized sum's does.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <pto/simd.hpp>
#include <pto/simd_math.hpp>

namespace pypto_kernel {

// max/min as numpy.maximum/minimum and pto::elem::max/min on 8 lanes: NaN in either operand
// gives NaN, and between equal operands (+0 and -0) the first wins. The raw instructions return
// their second operand when either is NaN, so `a` goes second and a NaN `b` is blended back in.
inline __m256 MaxNan8(__m256 a, __m256 b) {
  return _mm256_blendv_ps(_mm256_max_ps(b, a), b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
}
inline __m256 MinNan8(__m256 a, __m256 b) {
  return _mm256_blendv_ps(_mm256_min_ps(b, a), b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
}

#if defined(__AVX512F__)
using VecF = __m512;
using VecMask = __mmask16;
constexpr int kVecLanes = 16;

inline VecF VLoad(const float* p) { return _mm512_loadu_ps(p); }
inline void VStore(float* p, VecF v) { _mm512_storeu_ps(p, v); }
inline void VStream(float* p, VecF v) { _mm512_stream_ps(p, v); }                // p 64-byte aligned
inline VecMask VTail(int64_t n) { return static_cast<VecMask>((1u << n) - 1); }  // the first n < 16 lanes
inline VecF VMaskLoad(const float* p, VecMask m) { return _mm512_maskz_loadu_ps(m, p); }
inline void VMaskStore(float* p, VecMask m, VecF v) { _mm512_mask_storeu_ps(p, m, v); }
inline VecF VSelect(VecMask m, VecF v, VecF otherwise) { return _mm512_mask_blend_ps(m, otherwise, v); }
inline VecF VSet1(float x) { return _mm512_set1_ps(x); }
inline VecF VZero() { return _mm512_setzero_ps(); }
inline VecF VAdd(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline VecF VSub(VecF a, VecF b) { return _mm512_sub_ps(a, b); }
inline VecF VMul(VecF a, VecF b) { return _mm512_mul_ps(a, b); }
inline VecF VDiv(VecF a, VecF b) { return _mm512_div_ps(a, b); }
inline VecF VSqrt(VecF a) { return _mm512_sqrt_ps(a); }
inline VecF VAbs(VecF a) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
}
inline VecF VNeg(VecF a) {
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(int(0x80000000u))));
}
// max(0, x): x when x is NaN (the instruction returns its second operand then), -0 kept.
inline VecF VRelu(VecF a) { return _mm512_max_ps(_mm512_setzero_ps(), a); }
// numpy.maximum / minimum (see MaxNan8 above).
inline VecF MaxNan(VecF a, VecF b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), _mm512_max_ps(b, a), b);
}
inline VecF MinNan(VecF a, VecF b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), _mm512_min_ps(b, a), b);
}
// 1 / sqrt(x) in double, rounded once: TRSQRT's result bit for bit.
inline VecF RsqrtExact(VecF x) {
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d lo = _mm512_div_pd(one, _mm512_sqrt_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(x))));
  const __m512d hi = _mm512_div_pd(
      one, _mm512_sqrt_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo))),
                                             _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
}
template <int U>
inline void ExpN(VecF (&v)[U]) {
  pto::simd::exp_vec16<U>(v);
}
// tanh on 16 lanes: pto::simd::math::tanh's operations one by one (the same polynomial, Cody-Waite
// reduction and rounding steps, fused where it fuses), so the same bits as TTANH on 8 lanes at
// half the instructions of running that code on each half (GELU-tanh was compute-bound).
inline VecF VTanh(VecF x) {
  using pto::simd::exp_detail::kLn2Hi, pto::simd::exp_detail::kLn2Lo;
  auto c = [](float v) { return _mm512_set1_ps(v); };
  auto fma = [](__m512 a, __m512 b, __m512 d) { return _mm512_fmadd_ps(a, b, d); };
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
  const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
  const __m512 z = _mm512_mul_ps(a, a);
  __m512 p = c(-0.0003584520018193871f);
  for (float k : {0.0023013646714389324f, -0.007946106605231762f, 0.021486656740307808f, -0.05387980118393898f,
                  0.13332344591617584f, -0.33333295583724976f})
    p = fma(p, z, c(k));
  const __m512 small = fma(_mm512_mul_ps(a, z), p, a);
  const __m512 b = _mm512_mul_ps(c(2.0f), _mm512_min_ps(c(9.125f), _mm512_max_ps(c(0.0f), a)));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(b, c(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(_mm512_sub_ps(b, _mm512_mul_ps(n, c(kLn2Hi))), _mm512_mul_ps(n, c(kLn2Lo)));
  __m512 q = c(2.4790830138954334e-05f);  // expm1_poly
  for (float k : {0.0001997358340304345f, 0.001388930482789874f, 0.008333141915500164f, 0.0416666604578495f,
                  0.1666666716337204f, 0.5f})
    q = fma(q, r, c(k));
  const __m512 em1 = fma(_mm512_mul_ps(r, r), q, r);
  const __m512 scale = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23));  // pow2i
  const __m512 e = _mm512_mul_ps(_mm512_add_ps(em1, c(1.0f)), scale);
  const __m512 big = _mm512_sub_ps(c(1.0f), _mm512_div_ps(c(2.0f), _mm512_add_ps(e, c(1.0f))));
  const __m512 t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, c(1.0f), _CMP_LT_OQ), big, small);
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(t), sign));
}
// A function of the 8-lane math library on both halves (the same bits as on 8 lanes).
template <class F>
inline VecF VMap(F f, VecF a) {
  const __m256 lo = f(_mm512_castps512_ps256(a));
  const __m256 hi = f(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
template <class F>
inline VecF VMap(F f, VecF a, VecF b) {
  auto half = [](VecF v, int h) {
    return h ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)) : _mm512_castps512_ps256(v);
  };
  const __m256 lo = f(half(a, 0), half(b, 0)), hi = f(half(a, 1), half(b, 1));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
#else
using VecF = __m256;
using VecMask = __m256i;
constexpr int kVecLanes = 8;

inline VecF VLoad(const float* p) { return _mm256_loadu_ps(p); }
inline void VStore(float* p, VecF v) { _mm256_storeu_ps(p, v); }
inline void VStream(float* p, VecF v) { _mm256_stream_ps(p, v); }  // p 32-byte aligned
inline VecMask VTail(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline VecF VMaskLoad(const float* p, VecMask m) { return _mm256_maskload_ps(p, m); }
inline void VMaskStore(float* p, VecMask m, VecF v) { _mm256_maskstore_ps(p, m, v); }
inline VecF VSelect(VecMask m, VecF v, VecF otherwise) {
  return _mm256_blendv_ps(otherwise, v, _mm256_castsi256_ps(m));
}
inline VecF VSet1(float x) { return _mm256_set1_ps(x); }
inline VecF VZero() { return _mm256_setzero_ps(); }
inline VecF VAdd(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline VecF VSub(VecF a, VecF b) { return _mm256_sub_ps(a, b); }
inline VecF VMul(VecF a, VecF b) { return _mm256_mul_ps(a, b); }
inline VecF VDiv(VecF a, VecF b) { return _mm256_div_ps(a, b); }
inline VecF VSqrt(VecF a) { return _mm256_sqrt_ps(a); }
inline VecF VAbs(VecF a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
inline VecF VNeg(VecF a) { return _mm256_xor_ps(_mm256_set1_ps(-0.0f), a); }
inline VecF VRelu(VecF a) { return _mm256_max_ps(_mm256_setzero_ps(), a); }
inline VecF MaxNan(VecF a, VecF b) { return MaxNan8(a, b); }
inline VecF MinNan(VecF a, VecF b) { return MinNan8(a, b); }
// 1 / sqrt(x) in double, rounded once: TRSQRT's result bit for bit.
inline VecF RsqrtExact(VecF x) {
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d lo = _mm256_div_pd(one, _mm256_sqrt_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(x))));
  const __m256d hi = _mm256_div_pd(one, _mm256_sqrt_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
  return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}
// exp of U vectors in registers: the PTO TEXP's own code (pto::simd::exp_vec), so a fused
// chain gives the same bits as the instructions.
template <int U>
inline void ExpN(VecF (&v)[U]) {
  pto::simd::exp_vec<U>(v);
}
inline VecF VTanh(VecF x) { return __m256(pto::simd::math::tanh(x)); }
template <class F>
inline VecF VMap(F f, VecF a) {
  return f(a);
}
template <class F>
inline VecF VMap(F f, VecF a, VecF b) {
  return f(a, b);
}
#endif

// Row reductions (TROWSUM / TROWMAX / TROWMIN in fused loops) accumulate 8-lane vectors, a
// 16-lane vector as its low then its high half, so a row sum has the same bits at either width:
//  - rows of 256 valid columns or more, in the order of pto's AVX2 row_reduce_float
//    (pto/fast/reduce.hpp): four accumulators, the 8-lane vectors of each full 32-column block
//    into a0 a1 a2 a3 in turn, full vectors after the last block into a0, a masked tail into a1;
//    then (a0 op a1) op (a2 op a3). Four chains keep a long row off the add latency;
//  - shorter rows: one accumulator in column order.
using VecAcc = __m256;
inline VecAcc Add8(VecAcc a, VecAcc b) { return _mm256_add_ps(a, b); }

struct RowAcc {
  VecAcc a0, a1, a2, a3;
  bool four;  // 256 valid columns or more
};
inline RowAcc RowAccInit(float identity, int64_t valid_cols) {
  const VecAcc id = _mm256_set1_ps(identity);
  return {id, id, id, id, valid_cols >= 256};
}
// Accumulator k (0..3; a0 alone for short rows) takes v.
template <int K, class F>
inline void RowAccAdd(RowAcc& r, VecAcc v, F f) {
  if (!r.four || K == 0)
    r.a0 = f(r.a0, v);
  else if (K == 1)
    r.a1 = f(r.a1, v);
  else if (K == 2)
    r.a2 = f(r.a2, v);
  else
    r.a3 = f(r.a3, v);
}
#if defined(__AVX512F__)
inline VecAcc LowHalf(VecF v) { return _mm512_castps512_ps256(v); }
inline VecAcc HighHalf(VecF v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }
// Vector U of a full step (U vectors from a column that is a multiple of 4 * kVecLanes).
template <int U, class F>
inline void RowAccStep(RowAcc& r, VecF v, F f) {
  RowAccAdd<(2 * U) % 4>(r, LowHalf(v), f);
  RowAccAdd<(2 * U + 1) % 4>(r, HighHalf(v), f);
}
// A full vector after the full steps, at column c of vc.
template <class F>
inline void RowAccRest(RowAcc& r, VecF v, int64_t c, int64_t vc, F f) {
  if (c % 32 == 0 && c + 32 <= vc) {  // the first half of a full 32-column block
    RowAccAdd<0>(r, LowHalf(v), f);
    RowAccAdd<1>(r, HighHalf(v), f);
  } else if (c % 32 == 16) {  // its second half
    RowAccAdd<2>(r, LowHalf(v), f);
    RowAccAdd<3>(r, HighHalf(v), f);
  } else {
    RowAccAdd<0>(r, LowHalf(v), f);
    RowAccAdd<0>(r, HighHalf(v), f);
  }
}
// The masked tail of n < 16 columns (masked-off lanes hold the identity).
template <class F>
inline void RowAccTail(RowAcc& r, VecF v, int64_t n, F f) {
  if (n >= 8) {
    RowAccAdd<0>(r, LowHalf(v), f);
    if (n > 8) RowAccAdd<1>(r, HighHalf(v), f);
  } else {
    RowAccAdd<1>(r, LowHalf(v), f);
  }
}
#else
template <int U, class F>
inline void RowAccStep(RowAcc& r, VecF v, F f) {
  RowAccAdd<U>(r, v, f);
}
template <class F>
inline void RowAccRest(RowAcc& r, VecF v, int64_t, int64_t, F f) {
  RowAccAdd<0>(r, v, f);
}
template <class F>
inline void RowAccTail(RowAcc& r, VecF v, int64_t, F f) {
  RowAccAdd<1>(r, v, f);
}
#endif
template <class F>
inline VecAcc RowAccFinish(const RowAcc& r, F f) {
  return r.four ? f(f(r.a0, r.a1), f(r.a2, r.a3)) : r.a0;
}

// Prefetches the cache lines of n floats `ahead` floats past p (a later row of the stream p
// reads; past the end of the tensor the hint is simply dropped).
inline void PrefetchAhead(const float* p, int64_t ahead, int n) {
  const uintptr_t q = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(ahead) * sizeof(float);
  for (int o = 0; o < n * int(sizeof(float)); o += 64) _mm_prefetch(reinterpret_cast<const char*>(q + o), _MM_HINT_T0);
}

// Whether stores at p may stream (non-temporal full vectors need a vector-aligned address).
inline bool VAligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) & (sizeof(VecF) - 1)) == 0; }

// Row `src` (made in scratch, n floats) into an output row `dst` that is not vector-aligned, past
// the cache: plain stores up to dst's first aligned address and for the tail, non-temporal
// stores in between (their loads from src are unaligned, from L1). numpy puts a large array 16
// bytes past a page, so a row-fused kernel writing the user's output array (a pl.Out, an
// in-place tensor) would otherwise store with a read-for-ownership of every line.
inline void StreamRowTo(float* dst, const float* src, int64_t n) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst);
  int64_t c = 0;
  if (a % sizeof(float) == 0) {
    const int64_t head = std::min<int64_t>(n, (sizeof(VecF) - a % sizeof(VecF)) % sizeof(VecF) / sizeof(float));
    for (; c < head; ++c) dst[c] = src[c];
    for (; c + kVecLanes <= n; c += kVecLanes) VStream(dst + c, VLoad(src + c));
  }
  for (; c < n; ++c) dst[c] = src[c];
}
template <int R>
inline void StreamRowTo(float* dst, const float* src, const int64_t (&valid)[R]) {
  StreamRowTo(dst, src, valid[R - 1]);
}

}  // namespace pypto_kernel

// A math-library function of one or two operands on a VecF (its 8-lane form on each half).
#define PYPTO_VMATH1(FN, A) ::pypto_kernel::VMap([](__m256 h_) { return __m256(pto::simd::math::FN(h_)); }, A)
#define PYPTO_VMATH2(FN, A, B) \
  ::pypto_kernel::VMap([](__m256 a_, __m256 b_) { return __m256(pto::simd::math::FN(a_, b_)); }, A, B)

#endif
