// The AVX512_BF16 cube kernels on zmm registers, two or three 16-column panels of Right at a time
// (included by cube_support.hpp where PYPTO_CUBE_BF16_PAIRS holds; the one-panel kernels and the
// panel layouts are there).
#pragma once

// Two panels at once (32 columns) in zmm: per k pair 2 loads of B and MR broadcasts of A feed
// 2 * MR VDPBF16PS of 16 lanes each, half the loads per multiply of the one-panel kernel.
template <int MR, bool kInit>
inline void MicroBF16x2(int64_t pairs, const pto::bfloat16* A, int64_t lda, const pto::bfloat16* B0,
                        const pto::bfloat16* B1, float* C, int64_t ldc) {
  __m512 c0, d0, c1, d1, c2, d2, c3, d3, c4, d4, c5, d5;
#define PYPTO_ZROWS(X) X(0, c0, d0) X(1, c1, d1) X(2, c2, d2) X(3, c3, d3) X(4, c4, d4) X(5, c5, d5)
#define PYPTO_ZLOAD(I, X0, X1)                                            \
  if constexpr (I < MR) {                                                 \
    X0 = kInit ? _mm512_setzero_ps() : _mm512_loadu_ps(C + I * ldc);      \
    X1 = kInit ? _mm512_setzero_ps() : _mm512_loadu_ps(C + I * ldc + 16); \
  }
#define PYPTO_ZDOT(I, X0, X1)                             \
  if constexpr (I < MR) {                                 \
    int32_t pair;                                         \
    std::memcpy(&pair, A + I * lda + 2 * p, 4);           \
    const __m512bh a = (__m512bh)_mm512_set1_epi32(pair); \
    X0 = _mm512_dpbf16_ps(X0, a, b0);                     \
    X1 = _mm512_dpbf16_ps(X1, a, b1);                     \
  }
#define PYPTO_ZSTORE(I, X0, X1)             \
  if constexpr (I < MR) {                   \
    _mm512_storeu_ps(C + I * ldc, X0);      \
    _mm512_storeu_ps(C + I * ldc + 16, X1); \
  }
  PYPTO_ZROWS(PYPTO_ZLOAD)
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(B0 + p * 2 * kCubeNR);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(B1 + p * 2 * kCubeNR);
    PYPTO_ZROWS(PYPTO_ZDOT)
  }
  PYPTO_ZROWS(PYPTO_ZSTORE)
#undef PYPTO_ZROWS
#undef PYPTO_ZLOAD
#undef PYPTO_ZDOT
#undef PYPTO_ZSTORE
}

// Three panels at once (48 columns) and up to 8 rows: 24 zmm accumulators (of the 32 registers),
// per k pair 3 loads of B and MR broadcasts of A feed 3 * MR VDPBF16PS: fewer loads per multiply
// than two panels, and enough independent sums to cover the instruction's latency.
template <int MR, bool kInit>
inline void MicroBF16x3(int64_t pairs, const pto::bfloat16* A, int64_t lda, const pto::bfloat16* B0,
                        const pto::bfloat16* B1, const pto::bfloat16* B2, float* C, int64_t ldc) {
  __m512 c0, d0, e0, c1, d1, e1, c2, d2, e2, c3, d3, e3, c4, d4, e4, c5, d5, e5, c6, d6, e6, c7, d7, e7;
#define PYPTO_YROWS(X) \
  X(0, c0, d0, e0)     \
  X(1, c1, d1, e1) X(2, c2, d2, e2) X(3, c3, d3, e3) X(4, c4, d4, e4) X(5, c5, d5, e5) X(6, c6, d6, e6) X(7, c7, d7, e7)
#define PYPTO_YLOAD(I, X0, X1, X2)                                        \
  if constexpr (I < MR) {                                                 \
    X0 = kInit ? _mm512_setzero_ps() : _mm512_loadu_ps(C + I * ldc);      \
    X1 = kInit ? _mm512_setzero_ps() : _mm512_loadu_ps(C + I * ldc + 16); \
    X2 = kInit ? _mm512_setzero_ps() : _mm512_loadu_ps(C + I * ldc + 32); \
  }
#define PYPTO_YDOT(I, X0, X1, X2)                         \
  if constexpr (I < MR) {                                 \
    int32_t pair;                                         \
    std::memcpy(&pair, A + I * lda + 2 * p, 4);           \
    const __m512bh a = (__m512bh)_mm512_set1_epi32(pair); \
    X0 = _mm512_dpbf16_ps(X0, a, b0);                     \
    X1 = _mm512_dpbf16_ps(X1, a, b1);                     \
    X2 = _mm512_dpbf16_ps(X2, a, b2);                     \
  }
#define PYPTO_YSTORE(I, X0, X1, X2)         \
  if constexpr (I < MR) {                   \
    _mm512_storeu_ps(C + I * ldc, X0);      \
    _mm512_storeu_ps(C + I * ldc + 16, X1); \
    _mm512_storeu_ps(C + I * ldc + 32, X2); \
  }
  PYPTO_YROWS(PYPTO_YLOAD)
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(B0 + p * 2 * kCubeNR);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(B1 + p * 2 * kCubeNR);
    const __m512bh b2 = (__m512bh)_mm512_load_si512(B2 + p * 2 * kCubeNR);
    PYPTO_YROWS(PYPTO_YDOT)
  }
  PYPTO_YROWS(PYPTO_YSTORE)
#undef PYPTO_YROWS
#undef PYPTO_YLOAD
#undef PYPTO_YDOT
#undef PYPTO_YSTORE
}

/// Calls f(std::integral_constant<int, R>{}) with R = rows, for 1 <= rows <= Max: a micro-kernel
/// of that many rows, its size a template parameter.
template <int Max, class F>
inline void WithRows(int64_t rows, F&& f) {
  if constexpr (Max > 1) {
    if (rows < Max) return WithRows<Max - 1>(rows, f);
  }
  f(std::integral_constant<int, Max>{});
}

/// C[vm x 16k] (row stride ldc) += Left * the first k full panels of Right, three or two panels
/// at a time; returns the columns done (the rest go through the one-panel kernels).
inline int64_t CubeBf16Panels(float* C, int64_t ldc, const pto::bfloat16* L, int64_t ldl, const pto::bfloat16* R,
                              int64_t panel, int64_t vm, int64_t vn, int64_t pairs, bool init) {
  // Full panels in threes, then twos: a count of 3t + 1 ends with two pairs (4 = 2 + 2), so no
  // panel is left to the narrower one-panel kernel.
  const int64_t full = vn / kCubeNR;
  const int64_t threes = full % 3 == 1 ? std::max<int64_t>(0, (full - 4) / 3) : full / 3;
  int64_t n0 = 0;
  for (; n0 < threes * 3 * kCubeNR; n0 += 3 * kCubeNR) {
    const pto::bfloat16* b0 = R + (n0 / kCubeNR) * panel;
    for (int64_t m0 = 0, mr = 0; m0 < vm; m0 += mr) {
      mr = std::min<int64_t>(8, vm - m0);
      const pto::bfloat16* a = L + m0 * ldl;
      float* c = C + m0 * ldc + n0;
      WithRows<8>(mr, [&](auto rows) {
        if (init)
          MicroBF16x3<decltype(rows)::value, true>(pairs, a, ldl, b0, b0 + panel, b0 + 2 * panel, c, ldc);
        else
          MicroBF16x3<decltype(rows)::value, false>(pairs, a, ldl, b0, b0 + panel, b0 + 2 * panel, c, ldc);
      });
    }
  }
  for (; n0 + 2 * kCubeNR <= vn; n0 += 2 * kCubeNR) {
    const pto::bfloat16* b0 = R + (n0 / kCubeNR) * panel;
    for (int64_t m0 = 0, mr = 0; m0 < vm; m0 += mr) {
      const int64_t left = vm - m0;
      mr = left == 7 || left == 8 ? 4 : std::min<int64_t>(kCubeMR, left);
      const pto::bfloat16* a = L + m0 * ldl;
      float* c = C + m0 * ldc + n0;
      WithRows<kCubeMR>(mr, [&](auto rows) {
        if (init)
          MicroBF16x2<decltype(rows)::value, true>(pairs, a, ldl, b0, b0 + panel, c, ldc);
        else
          MicroBF16x2<decltype(rows)::value, false>(pairs, a, ldl, b0, b0 + panel, c, ldc);
      });
    }
  }
  return n0;
}
