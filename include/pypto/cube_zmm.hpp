// The AVX-512 cube micro-kernels: one family for fp32 FMA, bf16 pairs (VDPBF16PS) and int8 quads
// (VPDPBUSD). Every step broadcasts 4 bytes of a Left row and multiplies them into one 64-byte
// row of each of NP 16-column panels: MR x NP zmm accumulators, up to 24 of the 32 registers.
// Included by cube_support.hpp where PYPTO_CUBE_ZMM holds.
#pragma once

#include <algorithm>
#include <cstring>

#include "pypto/cube_isa.hpp"

namespace pypto_kernel {

/// 4 bytes of a Left row (one step's A) in every 32-bit lane.
inline __m512 Bcast32(const unsigned char* a) {
  int32_t v;
  std::memcpy(&v, a, 4);
  return _mm512_castsi512_ps(_mm512_set1_epi32(v));
}

/// fp32: c += a * b, one k per step.
struct ZF32 {
  using Acc = float;
  static constexpr bool kCorr = false;
  static __m512 Bcast(const unsigned char* a) { return _mm512_set1_ps(*reinterpret_cast<const float*>(a)); }
  static __m512 Step(__m512 c, __m512 a, __m512 b) { return _mm512_fmadd_ps(a, b, c); }
};
#if defined(__AVX512BF16__)
/// bf16 pairs: c += a[2p+1] * b[2p+1] and then a[2p] * b[2p] (exact products, fp32 sums).
struct ZBF16 {
  using Acc = float;
  static constexpr bool kCorr = false;
  static __m512 Bcast(const unsigned char* a) { return Bcast32(a); }
  static __m512 Step(__m512 c, __m512 a, __m512 b) { return _mm512_dpbf16_ps(c, (__m512bh)a, (__m512bh)b); }
};
#endif
#if defined(__AVX512VNNI__)
/// int8 quads: c += the 4 products (unsigned a) x (signed b), exact in int32 (wrapping).
struct ZVNNI {
  using Acc = int32_t;
  static constexpr bool kCorr = true;
  static __m512 Bcast(const unsigned char* a) { return Bcast32(a); }
  static __m512 Step(__m512 c, __m512 a, __m512 b) {
    return _mm512_castsi512_ps(
        _mm512_dpbusd_epi32(_mm512_castps_si512(c), _mm512_castps_si512(a), _mm512_castps_si512(b)));
  }
};
#endif

/// C[MR x 16 NP] (row stride ldc) += Left rows (lda bytes apart) x NP panels (`panel` bytes apart
/// from B), over `steps` steps; with `init` C = the product (C is not read). The last panel reads
/// and writes only the columns of `mask`. Op::kCorr: each panel's row of 16 int32 after its steps
/// (at B + steps * 64) is added to every row of C (VNNI's fix-up).
template <class Op, int MR, int NP>
inline void MicroZ(int64_t steps, const unsigned char* A, int64_t lda, const unsigned char* B, int64_t panel,
                   typename Op::Acc* Cp, int64_t ldc, bool init, __mmask16 mask) {
  static_assert(MR >= 1 && NP >= 1 && NP <= 3 && MR * NP <= 24 && MR <= 12);
  float* C = reinterpret_cast<float*>(Cp);  // (int32 lanes move as float bits)
  __m512 c00, c01, c02, c10, c11, c12, c20, c21, c22, c30, c31, c32, c40, c41, c42, c50, c51, c52, c60, c61, c62, c70,
      c71, c72, c80, c81, c82, c90, c91, c92, ca0, ca1, ca2, cb0, cb1, cb2;
  const unsigned char* B1 = B + panel;
  const unsigned char* B2 = B + 2 * panel;
  __m512 k0 = _mm512_setzero_ps(), k1 = k0, k2 = k0;  // the fix-up rows
  if constexpr (Op::kCorr) {
    k0 = _mm512_loadu_ps(reinterpret_cast<const float*>(B + steps * 64));
    if constexpr (NP > 1) k1 = _mm512_loadu_ps(reinterpret_cast<const float*>(B1 + steps * 64));
    if constexpr (NP > 2) k2 = _mm512_loadu_ps(reinterpret_cast<const float*>(B2 + steps * 64));
  }
  auto load = [&](int i, int j, __m512 corr) {
    __m512 v;
    const float* p = C + i * ldc + 16 * j;
    if (init)
      v = _mm512_setzero_ps();
    else if (j == NP - 1)
      v = _mm512_maskz_loadu_ps(mask, p);
    else
      v = _mm512_loadu_ps(p);
    if constexpr (Op::kCorr)
      v = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(v), _mm512_castps_si512(corr)));
    return v;
  };
  auto store = [&](int i, int j, __m512 v) {
    float* p = C + i * ldc + 16 * j;
    if (j == NP - 1)
      _mm512_mask_storeu_ps(p, mask, v);
    else
      _mm512_storeu_ps(p, v);
  };
#define PYPTO_ZROWS(X) \
  X(0, c00, c01, c02)  \
  X(1, c10, c11, c12)  \
  X(2, c20, c21, c22)  \
  X(3, c30, c31, c32)  \
  X(4, c40, c41, c42)  \
  X(5, c50, c51, c52)  \
  X(6, c60, c61, c62)  \
  X(7, c70, c71, c72)  \
  X(8, c80, c81, c82)  \
  X(9, c90, c91, c92)  \
  X(10, ca0, ca1, ca2) \
  X(11, cb0, cb1, cb2)
#define PYPTO_ZLOAD(I, X0, X1, X2)             \
  if constexpr (I < MR) {                      \
    X0 = load(I, 0, k0);                       \
    if constexpr (NP > 1) X1 = load(I, 1, k1); \
    if constexpr (NP > 2) X2 = load(I, 2, k2); \
  }
#define PYPTO_ZSTEP(I, X0, X1, X2)                   \
  if constexpr (I < MR) {                            \
    const __m512 a = Op::Bcast(A + I * lda + s * 4); \
    X0 = Op::Step(X0, a, b0);                        \
    if constexpr (NP > 1) X1 = Op::Step(X1, a, b1);  \
    if constexpr (NP > 2) X2 = Op::Step(X2, a, b2);  \
  }
#define PYPTO_ZSTORE(I, X0, X1, X2)        \
  if constexpr (I < MR) {                  \
    store(I, 0, X0);                       \
    if constexpr (NP > 1) store(I, 1, X1); \
    if constexpr (NP > 2) store(I, 2, X2); \
  }
  PYPTO_ZROWS(PYPTO_ZLOAD)
  for (int64_t s = 0; s < steps; ++s) {
    const __m512 b0 = _mm512_load_ps(reinterpret_cast<const float*>(B + s * 64));
    __m512 b1 = b0, b2 = b0;
    if constexpr (NP > 1) b1 = _mm512_load_ps(reinterpret_cast<const float*>(B1 + s * 64));
    if constexpr (NP > 2) b2 = _mm512_load_ps(reinterpret_cast<const float*>(B2 + s * 64));
    PYPTO_ZROWS(PYPTO_ZSTEP)
  }
  PYPTO_ZROWS(PYPTO_ZSTORE)
#undef PYPTO_ZROWS
#undef PYPTO_ZLOAD
#undef PYPTO_ZSTEP
#undef PYPTO_ZSTORE
}

/// C[vm x vn] (row stride ldc) += L (rows ldl bytes apart) x the panels of R (`panel` bytes each),
/// over `steps` steps; with `init`, C = the product. Panels go three at a time (8 rows), the last
/// ones in twos (12 rows) so that no panel is left alone unless there is one (4 = 2 + 2); a
/// partial last panel is read and written under a mask.
template <class Op>
inline void CubeZ(typename Op::Acc* C, int64_t ldc, const unsigned char* L, int64_t ldl, const unsigned char* R,
                  int64_t panel, int64_t vm, int64_t vn, int64_t steps, bool init) {
  const int64_t panels = (vn + kCubeNR - 1) / kCubeNR;
  for (int64_t q = 0; q < panels;) {
    const int64_t left = panels - q;
    const int np = left == 1 ? 1 : left == 2 || left == 4 ? 2 : 3;
    const bool last = q + np == panels;
    const int64_t tail = last ? vn - (panels - 1) * kCubeNR : kCubeNR;  // columns of the group's last panel
    const __mmask16 mask = static_cast<__mmask16>((1u << tail) - 1);
    const unsigned char* b = R + q * panel;
    auto run = [&](auto np_c) {
      constexpr int NP = decltype(np_c)::value;
      constexpr int kMaxRows = NP == 3 ? 8 : 12;
      for (int64_t m0 = 0, mr = 0; m0 < vm; m0 += mr) {
        mr = std::min<int64_t>(kMaxRows, vm - m0);
        const unsigned char* a = L + m0 * ldl;
        typename Op::Acc* c = C + m0 * ldc + q * kCubeNR;
        WithRows<kMaxRows>(
            mr, [&](auto rows) { MicroZ<Op, decltype(rows)::value, NP>(steps, a, ldl, b, panel, c, ldc, init, mask); });
      }
    };
    if (np == 3)
      run(std::integral_constant<int, 3>{});
    else if (np == 2)
      run(std::integral_constant<int, 2>{});
    else
      run(std::integral_constant<int, 1>{});
    q += np;
  }
}

}  // namespace pypto_kernel
