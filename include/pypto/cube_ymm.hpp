// The AVX2 cube micro-kernels (and the portable ones): MR x 16 blocks, one panel, 12 ymm
// accumulators. One family for fp32 FMA, int16 pairs (VPMADDWD) and int8 quads (AVX-VNNI
// VPDPBUSD, VEX-encoded): every step broadcasts 4 bytes of a Left row and multiplies them into
// the panel's 64-byte row (two ymm). Also the bf16 kernel that widens pairs to fp32 (operands
// whose products could be subnormal, which the bf16 dot products would flush).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "pypto/cube_isa.hpp"

namespace pypto_kernel {

#if PYPTO_CUBE_YMM
/// 4 bytes of a Left row in every 32-bit lane.
inline __m256i Bcast32Y(const unsigned char* a) {
  int32_t v;
  std::memcpy(&v, a, 4);
  return _mm256_set1_epi32(v);
}

/// fp32: c += a * b.
struct YF32 {
  using Acc = float;
  using V = __m256;
  static constexpr bool kCorr = false;
  static V Bcast(const unsigned char* a) { return _mm256_broadcast_ss(reinterpret_cast<const float*>(a)); }
  static V Step(V c, V a, V b) { return _mm256_fmadd_ps(a, b, c); }
  static V Load(const Acc* p) { return _mm256_loadu_ps(p); }
  static V LoadB(const unsigned char* p) { return _mm256_load_ps(reinterpret_cast<const float*>(p)); }
  static void Store(Acc* p, V v) { _mm256_storeu_ps(p, v); }
  static V Zero() { return _mm256_setzero_ps(); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
};
/// int16 pairs: c += a[2p] * b[2p][j] + a[2p+1] * b[2p+1][j], exact in int32 (|products| <= 2^14).
struct YI16 {
  using Acc = int32_t;
  using V = __m256i;
  static constexpr bool kCorr = false;
  static V Bcast(const unsigned char* a) { return Bcast32Y(a); }
  static V Step(V c, V a, V b) { return _mm256_add_epi32(c, _mm256_madd_epi16(a, b)); }
  static V Load(const Acc* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static V LoadB(const unsigned char* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
  static void Store(Acc* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V Zero() { return _mm256_setzero_si256(); }
  static V Add(V a, V b) { return _mm256_add_epi32(a, b); }
};
#if defined(__AVXVNNI__)
/// int8 quads: c += the 4 products (unsigned a) x (signed b), exact in int32 (wrapping).
struct YVNNI : YI16 {
  static constexpr bool kCorr = true;
  static V Step(V c, V a, V b) { return _mm256_dpbusd_avx_epi32(c, a, b); }
};
#endif

/// C[MR x 16] (row stride ldc) += Left rows (lda bytes apart) x the panel B, over `steps` steps;
/// with `init`, C = the product (C is not read). Op::kCorr: the panel's row of 16 int32 after its
/// steps is added to every row. The accumulators are named variables: GCC keeps an array of
/// __m256 in memory across the loop.
template <class Op, int MR>
inline void MicroY(int64_t steps, const unsigned char* A, int64_t lda, const unsigned char* B, typename Op::Acc* C,
                   int64_t ldc, bool init) {
  static_assert(MR >= 1 && MR <= 6);
  using V = typename Op::V;
  V c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  V k0 = Op::Zero(), k1 = Op::Zero();
  if constexpr (Op::kCorr) {
    k0 = Op::Load(reinterpret_cast<const typename Op::Acc*>(B + steps * 64));
    k1 = Op::Load(reinterpret_cast<const typename Op::Acc*>(B + steps * 64 + 32));
  }
#define PYPTO_ROWS(X) X(0, c00, c01) X(1, c10, c11) X(2, c20, c21) X(3, c30, c31) X(4, c40, c41) X(5, c50, c51)
#define PYPTO_LOAD(I, X0, X1)                                            \
  if constexpr (I < MR) {                                                \
    X0 = init ? Op::Zero() : Op::Load(C + I * ldc);                      \
    X1 = init ? Op::Zero() : Op::Load(C + I * ldc + 8);                  \
    if constexpr (Op::kCorr) X0 = Op::Add(X0, k0), X1 = Op::Add(X1, k1); \
  }
#define PYPTO_STEP(I, X0, X1)                   \
  if constexpr (I < MR) {                       \
    const V a = Op::Bcast(A + I * lda + s * 4); \
    X0 = Op::Step(X0, a, b0);                   \
    X1 = Op::Step(X1, a, b1);                   \
  }
#define PYPTO_STORE(I, X0, X1)      \
  if constexpr (I < MR) {           \
    Op::Store(C + I * ldc, X0);     \
    Op::Store(C + I * ldc + 8, X1); \
  }
  PYPTO_ROWS(PYPTO_LOAD)
  for (int64_t s = 0; s < steps; ++s) {
    const V b0 = Op::LoadB(B + s * 64);
    const V b1 = Op::LoadB(B + s * 64 + 32);
    PYPTO_ROWS(PYPTO_STEP)
  }
  PYPTO_ROWS(PYPTO_STORE)
#undef PYPTO_ROWS
#undef PYPTO_LOAD
#undef PYPTO_STEP
#undef PYPTO_STORE
}
#endif

/// The portable kernel of fp32 and int16 pairs (the compiler vectorizes the j loop).
template <class Acc, class CT, int MR>
inline void MicroPortable(int64_t steps, const CT* A, int64_t lda, const CT* B, Acc* C, int64_t ldc, bool init) {
  for (int i = 0; i < MR; ++i) {
    if (init)
      for (int j = 0; j < kCubeNR; ++j) C[i * ldc + j] = Acc(0);
    for (int64_t s = 0; s < steps; ++s)
      for (int j = 0; j < kCubeNR; ++j) {
        if constexpr (std::is_same_v<Acc, float>) {
          C[i * ldc + j] = std::fma(A[i * lda + s], B[s * kCubeNR + j], C[i * ldc + j]);
        } else {
          const int32_t p =
              int32_t(A[i * lda + 2 * s]) * B[s * 32 + 2 * j] + int32_t(A[i * lda + 2 * s + 1]) * B[s * 32 + 2 * j + 1];
          C[i * ldc + j] = int32_t(uint32_t(C[i * ldc + j]) + uint32_t(p));
        }
      }
  }
}

/// C[vm x vn] += L x R with the one-panel kernels (ymm, else portable): rows in blocks of 6
/// (7 or 8 rows left go as 4 + 3 or 4 + 4: below 4 rows the FMA latency, not the pipes, sets the
/// pace); a partial last panel goes through a 16-wide scratch block.
template <class Acc, class CT>
inline void CubeY(Acc* C, int64_t ldc, const CT* L, int64_t ldl, const CT* R, int64_t panel_elems, int64_t vm,
                  int64_t vn, int64_t steps, bool init) {
  for (int64_t n0 = 0; n0 < vn; n0 += kCubeNR) {
    const CT* bp = R + (n0 / kCubeNR) * panel_elems;
    const int64_t nc = std::min<int64_t>(kCubeNR, vn - n0);
    alignas(32) Acc edge[kCubeMR * kCubeNR];
    for (int64_t m0 = 0, mr = 0; m0 < vm; m0 += mr) {
      const int64_t left = vm - m0;
      mr = left == 7 || left == 8 ? 4 : std::min<int64_t>(kCubeMR, left);
      const CT* a = L + m0 * ldl;
      Acc* c = C + m0 * ldc + n0;
      Acc* out = c;
      int64_t ldo = ldc;
      if (nc < kCubeNR) {  // a partial panel: compute into a 16-wide scratch block
        for (int64_t i = 0; i < mr; ++i) {
          if (init)
            std::fill(edge + i * kCubeNR, edge + i * kCubeNR + nc, Acc(0));
          else
            std::memcpy(edge + i * kCubeNR, c + i * ldc, nc * sizeof(Acc));
          std::fill(edge + i * kCubeNR + nc, edge + (i + 1) * kCubeNR, Acc(0));
        }
        out = edge;
        ldo = kCubeNR;
      }
      const bool zero = init && out != edge;  // (the edge block was zeroed above)
      WithRows<kCubeMR>(mr, [&](auto rows) {
        constexpr int MR = decltype(rows)::value;
#if PYPTO_CUBE_YMM
        const auto* A8 = reinterpret_cast<const unsigned char*>(a);
        const auto* B8 = reinterpret_cast<const unsigned char*>(bp);
        const int64_t lda = ldl * static_cast<int64_t>(sizeof(CT));
        if constexpr (std::is_same_v<CT, float>)
          MicroY<YF32, MR>(steps, A8, lda, B8, out, ldo, zero);
        else if constexpr (std::is_same_v<CT, int16_t>)
          MicroY<YI16, MR>(steps, A8, lda, B8, out, ldo, zero);
#if defined(__AVXVNNI__)
        else if constexpr (std::is_same_v<CT, int8_t>)
          MicroY<YVNNI, MR>(steps, A8, lda, B8, out, ldo, zero);
#endif
#else
        MicroPortable<Acc, CT, MR>(steps, a, ldl, bp, out, ldo, zero);
#endif
      });
      if (out == edge)
        for (int64_t i = 0; i < mr; ++i) std::memcpy(c + i * ldc, edge + i * kCubeNR, nc * sizeof(Acc));
    }
  }
}

/// bf16 pairs widened to fp32 on the fly, FMAs in k order: what the fp32 path computes, for
/// operands whose products or sums may be subnormal (see Bf16PackInfo). Panels of `panel_elems`.
inline void CubeBf16Wide(float* C, int64_t ldc, const pto::bfloat16* L, int64_t ldl, const pto::bfloat16* R,
                         int64_t panel_elems, int64_t vm, int64_t vn, int64_t vk, bool init) {
  for (int64_t n0 = 0; n0 < vn; n0 += kCubeNR) {
    const pto::bfloat16* Bp = R + (n0 / kCubeNR) * panel_elems;
    const int64_t nc = std::min<int64_t>(kCubeNR, vn - n0);
    for (int64_t i = 0; i < vm; ++i) {
      alignas(32) float c[kCubeNR];
      for (int64_t j = 0; j < kCubeNR; ++j) c[j] = init || j >= nc ? 0.0f : C[i * ldc + n0 + j];
      for (int64_t k = 0; k < vk; ++k) {
        const float a = static_cast<float>(L[i * ldl + k]);
        const pto::bfloat16* b = Bp + (k / 2) * 2 * kCubeNR + (k & 1);
#if PYPTO_CUBE_YMM
        const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
        const __m256 av = _mm256_set1_ps(a);
        for (int h = 0; h < 2; ++h) {
          const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + (k / 2) * 2 * kCubeNR + 16 * h));
          const __m256 bv = _mm256_castsi256_ps(k & 1 ? _mm256_and_si256(w, hi) : _mm256_slli_epi32(w, 16));
          _mm256_store_ps(c + 8 * h, _mm256_fmadd_ps(av, bv, _mm256_load_ps(c + 8 * h)));
        }
        (void)b;
#else
        for (int64_t j = 0; j < kCubeNR; ++j) c[j] = std::fma(a, static_cast<float>(b[2 * j]), c[j]);
#endif
      }
      for (int64_t j = 0; j < nc; ++j) C[i * ldc + n0 + j] = c[j];
    }
  }
}

}  // namespace pypto_kernel
