// The cube tiles on the CPU. A cube kernel's instructions map to a register-blocked GEMM:
//   TLOAD into Mat (L1)    -> a view of global memory (no copy: the L1 tile is whatever the
//                             caches hold of it)
//   TEXTRACT into Left     -> a row-major copy of the m0 x k0 block, widened to the compute type
//                             (fp16/bf16 -> float, int8 -> int16); this is the CPU's L0A layout
//   TEXTRACT into Right    -> packed 16-column panels, k-major (the CPU's L0B "fractal"), so
//                             the micro-kernel reads B with two aligned loads per k
//   TMATMUL_ACC            -> a 6 x 16 micro-kernel over the panels (12 accumulators in ymm)
// Results equal the reference in exact arithmetic; fp32 sums run in k order per output with
// FMAs, and int8 products accumulate exactly in int32. bf16 on a CPU with AVX512_BF16 stays bf16
// in Left and Right (k pairs, as int8) and multiplies with VDPBF16PS: each step adds the two
// exact products of a k pair into the fp32 sum (two roundings, the odd k first, as the
// instruction defines), twice the MACs per instruction of an fp32 FMA; the instruction treats
// subnormal inputs and results as zero, as torch's bf16 matmul on such a CPU does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <pto/pto.hpp>

#include "pypto/kernel_abi.h"

namespace pypto_kernel {

/// Element (i, j) of a Mat tile is p[i * rs + j * cs].
template <class T>
struct MatView {
  const T* p;
  int64_t rs, cs;
};

template <class T, int R>
inline MatView<T> MatLoad(const int64_t (&start)[R], const PyptoParamView& v) {
  int64_t off = 0;
  for (int d = 0; d < R; ++d) off += start[d] * v.stride[d];
  return {reinterpret_cast<const T*>(v.data) + off, v.stride[R - 2], v.stride[R - 1]};
}

/// The window a Left or Right buffer was last packed from. Within one call a kernel's inputs do
/// not change, so when the next point reads the same window (consecutive points of a task often
/// share an operand, e.g. the A block of a matmul for its column blocks) the packing is skipped. Declared
/// per call: the buffers outlive the call but what they hold is not trusted across calls.
struct PackedWindow {
  const void* p = nullptr;
  int64_t rows = -1, cols = -1;
  /// True when (p, rows, cols) differs from the last window, which it then becomes.
  bool Changes(const void* np, int64_t nrows, int64_t ncols) {
    if (np == p && nrows == rows && ncols == cols) return false;
    p = np;
    rows = nrows;
    cols = ncols;
    return true;
  }
};

#if defined(__AVX512BF16__) && defined(__AVX512VL__) && defined(__AVX2__)
#define PYPTO_CUBE_BF16_PAIRS 1
#else
#define PYPTO_CUBE_BF16_PAIRS 0
#endif

/// The compute type of the cube on the CPU: float for float inputs, int16 pairs for int8, bf16
/// pairs for bf16 where the CPU multiplies them (PYPTO_CUBE_BF16_PAIRS).
template <class In>
using CubeT = std::conditional_t<
    std::is_same_v<In, int8_t>, int16_t,
    std::conditional_t<PYPTO_CUBE_BF16_PAIRS && std::is_same_v<In, pto::bfloat16>, pto::bfloat16, float>>;
/// Whether Left and Right hold k pairs (int8, bf16 pairs), so k is padded to even.
template <class CT>
constexpr bool kPairs = !std::is_same_v<CT, float>;

#if PYPTO_CUBE_BF16_PAIRS
/// The smallest biased exponent among the nonzero values each bf16 buffer was last packed with
/// (0 for a subnormal), per thread. VDPBF16PS reads subnormals as zero and flushes subnormal
/// results; products whose exponents sum to at least -112 (biased sum 142) and every sum of
/// them are multiples of at least 2^-126, so none is subnormal and the instruction is exact
/// where fp32 FMAs are. Otherwise (or when a buffer is not found) the matmul widens to fp32.
struct Bf16PackInfo {
  const void* buf = nullptr;
  int min_exp = 0;
};
inline Bf16PackInfo* Bf16Packs() {
  static thread_local Bf16PackInfo packs[16];
  return packs;
}
inline void NoteBf16Pack(const void* buf, int min_exp) {
  Bf16PackInfo* p = Bf16Packs();
  int slot = 15;
  for (int i = 0; i < 16; ++i)
    if (p[i].buf == buf || p[i].buf == nullptr) {
      slot = i;
      break;
    }
  for (int i = slot; i > 0; --i) p[i] = p[i - 1];  // most recent first
  p[0] = {buf, min_exp};
}
inline int Bf16PackMinExp(const void* buf) {
  const Bf16PackInfo* p = Bf16Packs();
  for (int i = 0; i < 16; ++i)
    if (p[i].buf == buf) return p[i].min_exp;
  return 0;  // unknown: assume the worst
}
/// The smallest biased exponent field among the nonzero values of n bf16 values (255 if none).
inline int Bf16MinExp(const pto::bfloat16* v, int64_t n) {
  int m = 255;
  int64_t i = 0;
  __m256i lo = _mm256_set1_epi16(255);
  const __m256i expmask = _mm256_set1_epi16(0x7F80), magmask = _mm256_set1_epi16(0x7FFF);
  for (; i + 16 <= n; i += 16) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i));
    __m256i e = _mm256_srli_epi16(_mm256_and_si256(x, expmask), 7);
    __m256i zero = _mm256_cmpeq_epi16(_mm256_and_si256(x, magmask), _mm256_setzero_si256());
    lo = _mm256_min_epu16(lo, _mm256_or_si256(e, _mm256_and_si256(zero, _mm256_set1_epi16(255))));
  }
  alignas(32) uint16_t t[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(t), lo);
  for (int j = 0; j < 16; ++j) m = std::min<int>(m, t[j]);
  for (; i < n; ++i)
    if (v[i].bits & 0x7FFF) m = std::min<int>(m, (v[i].bits >> 7) & 0xFF);
  return m;
}
#endif

constexpr int kCubeMR = 6;   // rows of the micro-kernel
constexpr int kCubeNR = 16;  // columns of the micro-kernel (two ymm of float or int32)

/// Elements of the Left buffer for an m0 x k0 tile: rows of k0 (rounded up to even, for int8
/// pairs) plus kCubeMR rows of slack so edge panels may read past the last row.
constexpr int64_t LeftElems(int64_t m0, int64_t k0) { return (m0 + kCubeMR) * ((k0 + 1) / 2 * 2); }
/// Elements of the Right buffer for a k0 x n0 tile: 16-column panels of k0 (even) rows.
constexpr int64_t RightElems(int64_t k0, int64_t n0) {
  return (n0 + kCubeNR - 1) / kCubeNR * kCubeNR * ((k0 + 1) / 2 * 2);
}

/// Bytes `elems` values of T take in the cube arena (64-byte aligned slots).
template <class T>
constexpr int64_t ArenaBytes(int64_t elems) {
  return (elems * static_cast<int64_t>(sizeof(T)) + 63) / 64 * 64;
}

template <class In>
inline CubeT<In> Widen(In x) {
  if constexpr (std::is_same_v<In, int8_t>)
    return static_cast<int16_t>(x);
  else if constexpr (std::is_same_v<CubeT<In>, In>)
    return x;  // bf16 pairs: the bits as they are
  else
    return static_cast<float>(x);
}

/// Left (m x k, row stride ldl) from the window at `base` of a Mat tile, element (m, k) at
/// base[m * ms + k * ks]. Rows are padded with zeros to an even k for int8.
template <class In>
inline void PackLeft(CubeT<In>* dst, int64_t ldl, const In* base, int64_t ms, int64_t ks, int64_t vm, int64_t vk) {
  const int64_t kp = (vk + 1) / 2 * 2;
  for (int64_t m = 0; m < vm; ++m) {
    CubeT<In>* d = dst + m * ldl;
    const In* s = base + m * ms;
    if constexpr (std::is_same_v<In, float>) {
      if (ks == 1) {
        // Rows are short (k0 floats): an inline vector copy beats a call to memcpy per row.
        int64_t full = 0;
#if defined(__AVX2__)
        full = vk / 8 * 8;
        for (int64_t k = 0; k < full; k += 8) _mm256_storeu_ps(d + k, _mm256_loadu_ps(s + k));
#endif
        for (int64_t k = full; k < vk; ++k) d[k] = s[k];
      } else {
        for (int64_t k = 0; k < vk; ++k) d[k] = s[k * ks];
      }
    } else if constexpr (std::is_same_v<CubeT<In>, In>) {
      if (ks == 1)
        std::memcpy(d, s, static_cast<size_t>(vk) * sizeof(In));  // bf16 pairs: the row as it is
      else
        for (int64_t k = 0; k < vk; ++k) d[k] = s[k * ks];
    } else if constexpr (!std::is_same_v<In, int8_t>) {
      if (ks == 1)
        pto::simd::to_float(s, d, static_cast<int>(vk));  // fp16/bf16: 8 at a time
      else
        for (int64_t k = 0; k < vk; ++k) d[k] = Widen(s[k * ks]);
    } else {
      for (int64_t k = 0; k < vk; ++k) d[k] = Widen(s[k * ks]);
    }
    for (int64_t k = vk; k < kp; ++k) d[k] = CubeT<In>(0);
  }
#if PYPTO_CUBE_BF16_PAIRS
  if constexpr (std::is_same_v<CubeT<In>, pto::bfloat16>) {
    int m = 255;
    for (int64_t r = 0; r < vm; ++r) m = std::min(m, Bf16MinExp(dst + r * ldl, vk));
    NoteBf16Pack(dst, m);
  }
#endif
}

#if defined(__AVX2__)
/// In-register transpose: on return r_i holds what was column i of the 8 x 8 block.
inline void Transpose8x8(__m256& r0, __m256& r1, __m256& r2, __m256& r3, __m256& r4, __m256& r5, __m256& r6,
                         __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r0 = _mm256_permute2f128_ps(s0, s4, 0x20);
  r1 = _mm256_permute2f128_ps(s1, s5, 0x20);
  r2 = _mm256_permute2f128_ps(s2, s6, 0x20);
  r3 = _mm256_permute2f128_ps(s3, s7, 0x20);
  r4 = _mm256_permute2f128_ps(s0, s4, 0x31);
  r5 = _mm256_permute2f128_ps(s1, s5, 0x31);
  r6 = _mm256_permute2f128_ps(s2, s6, 0x31);
  r7 = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif

/// Right (k x n) into 16-column panels: panel q holds, for each k, columns 16q .. 16q+15
/// (zero past n). For int8 the panel is k-pair-major: (b[2p][j], b[2p+1][j]) side by side, the
/// operand order of a 16-bit multiply-add.
template <class In>
inline void PackRight(CubeT<In>* dst, const In* base, int64_t ks, int64_t ns, int64_t vk, int64_t vn) {
  using CT = CubeT<In>;
  const int64_t panels = (vn + kCubeNR - 1) / kCubeNR;
  if constexpr (kPairs<CT>) {
    const int64_t pairs = (vk + 1) / 2;
    int64_t fast_panels = 0;  // full panels whose full pairs the blocked loop below packs
#if PYPTO_CUBE_BF16_PAIRS
    if constexpr (std::is_same_v<CT, pto::bfloat16>) {
      if (ns == 1) {
        // Row-major B: rows 2p and 2p + 1 interleaved 16 bits at a time into row p of each panel,
        // 8 rows of B at a time across the panels, so the lines read serve every panel (as the
        // fp32 packing below) instead of being fetched again for each.
        fast_panels = vn / kCubeNR;
        const int64_t full_pairs = vk / 2;
        for (int64_t p0 = 0; p0 < full_pairs; p0 += 4) {
          const int64_t p1 = std::min<int64_t>(full_pairs, p0 + 4);
          for (int64_t q = 0; q < fast_panels; ++q)
            for (int64_t p = p0; p < p1; ++p) {
              const In* r = base + 2 * p * ks + q * kCubeNR;
              const __m256i r0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r));
              const __m256i r1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + ks));
              const __m256i lo = _mm256_unpacklo_epi16(r0, r1), hi = _mm256_unpackhi_epi16(r0, r1);
              CT* row = dst + q * pairs * 2 * kCubeNR + p * 2 * kCubeNR;
              _mm256_store_si256(reinterpret_cast<__m256i*>(row), _mm256_permute2x128_si256(lo, hi, 0x20));
              _mm256_store_si256(reinterpret_cast<__m256i*>(row + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
            }
        }
      }
    }
#endif
    for (int64_t q = 0; q < panels; ++q) {
      CT* d = dst + q * pairs * 2 * kCubeNR;
      const int64_t n0 = q * kCubeNR, nc = std::min<int64_t>(kCubeNR, vn - n0);
      int64_t p = q < fast_panels ? vk / 2 : 0;
#if PYPTO_CUBE_BF16_PAIRS
      if constexpr (std::is_same_v<CT, pto::bfloat16>) {
        const int64_t full_pairs = vk / 2;
        if (nc == kCubeNR && ks == 1 && ns != 1) {
          // Transposed B (K^T): column j's pair is 4 contiguous bytes of its row.
          for (; p < full_pairs; ++p) {
            CT* row = d + p * 2 * kCubeNR;
            for (int64_t j = 0; j < kCubeNR; ++j) std::memcpy(row + 2 * j, base + (n0 + j) * ns + 2 * p, 4);
          }
        }
      }
#endif
      for (; p < pairs; ++p) {
        CT* row = d + p * 2 * kCubeNR;
        for (int64_t j = 0; j < kCubeNR; ++j) {
          // Lane order of _mm256_madd_epi16 and _mm256_dpbf16_ps: for column j, the pair sits at
          // 2j, 2j+1.
          bool in = j < nc;
          int64_t k = 2 * p;
          row[2 * j] = in ? Widen(base[k * ks + (n0 + j) * ns]) : CT(0);
          row[2 * j + 1] = in && k + 1 < vk ? Widen(base[(k + 1) * ks + (n0 + j) * ns]) : CT(0);
        }
      }
    }
#if PYPTO_CUBE_BF16_PAIRS
    if constexpr (std::is_same_v<CT, pto::bfloat16>) NoteBf16Pack(dst, Bf16MinExp(dst, panels * pairs * 2 * kCubeNR));
#endif
  } else {
    // Full panels of a row-major B, 8 rows of B at a time: the rows are read front to back and
    // each panel receives 8 consecutive 64-byte lines (writing one line per panel per row
    // scatters stores 16 KiB apart, which costs twice as much).
    int64_t full = ns == 1 ? vn / kCubeNR : 0;
    for (int64_t k0 = 0; k0 < vk; k0 += 8) {
      const int64_t k1 = std::min<int64_t>(vk, k0 + 8);
      for (int64_t q = 0; q < full; ++q)
        for (int64_t k = k0; k < k1; ++k) {
          const In* s = base + k * ks + q * kCubeNR;
          float* o = dst + q * vk * kCubeNR + k * kCubeNR;
          if constexpr (std::is_same_v<In, float>)
            std::memcpy(o, s, kCubeNR * sizeof(float));
          else
            pto::simd::to_float(s, o, kCubeNR);
        }
    }
#if defined(__AVX2__)
    // A transposed B (contiguous along k, e.g. K^T in attention): 8 x 8 blocks go through
    // registers, transposed with unpack/shuffle/permute, instead of one element at a time.
    if constexpr (std::is_same_v<In, float>) {
      if (ks == 1 && full == 0) {
        const int64_t fullq = vn / kCubeNR, kfull = vk / 8 * 8;
        for (int64_t q = 0; q < fullq; ++q) {
          float* d = dst + q * vk * kCubeNR;
          for (int64_t k0 = 0; k0 < kfull; k0 += 8)
            for (int h = 0; h < 2; ++h) {
              const float* src = base + (q * kCubeNR + h * 8) * ns + k0;
              __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ns), r2 = _mm256_loadu_ps(src + 2 * ns),
                     r3 = _mm256_loadu_ps(src + 3 * ns), r4 = _mm256_loadu_ps(src + 4 * ns),
                     r5 = _mm256_loadu_ps(src + 5 * ns), r6 = _mm256_loadu_ps(src + 6 * ns),
                     r7 = _mm256_loadu_ps(src + 7 * ns);
              Transpose8x8(r0, r1, r2, r3, r4, r5, r6, r7);
              float* o = d + k0 * kCubeNR + h * 8;
              _mm256_store_ps(o, r0);
              _mm256_store_ps(o + kCubeNR, r1);
              _mm256_store_ps(o + 2 * kCubeNR, r2);
              _mm256_store_ps(o + 3 * kCubeNR, r3);
              _mm256_store_ps(o + 4 * kCubeNR, r4);
              _mm256_store_ps(o + 5 * kCubeNR, r5);
              _mm256_store_ps(o + 6 * kCubeNR, r6);
              _mm256_store_ps(o + 7 * kCubeNR, r7);
            }
          for (int64_t k = kfull; k < vk; ++k)  // the k tail of the panel
            for (int64_t j = 0; j < kCubeNR; ++j) d[k * kCubeNR + j] = base[k + (q * kCubeNR + j) * ns];
        }
        full = fullq;  // the partial last panel, if any, below
      }
    }
#endif
    for (int64_t q = full; q < panels; ++q) {  // a partial last panel, or a transposed B
      float* d = dst + q * vk * kCubeNR;
      const int64_t n0 = q * kCubeNR, nc = std::min<int64_t>(kCubeNR, vn - n0);
      for (int64_t k = 0; k < vk; ++k)
        for (int64_t j = 0; j < kCubeNR; ++j)
          d[k * kCubeNR + j] = j < nc ? static_cast<float>(base[k * ks + (n0 + j) * ns]) : 0.0f;
    }
  }
}

#if defined(__AVX2__) && defined(__FMA__)
// C[MR x 16] += A[MR x K] (rows lda apart) * Bp (a packed 16-column panel). The accumulators
// are named variables: GCC keeps an array of __m256 in memory across the loop.
// With kInit, C = A * Bp (the accumulators start at zero; C is not read).
template <int MR, bool kInit = false>
inline void MicroF32(int64_t K, const float* A, int64_t lda, const float* Bp, float* C, int64_t ldc) {
  static_assert(MR >= 1 && MR <= 6);
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
#define PYPTO_ROWS(X) X(0, c00, c01) X(1, c10, c11) X(2, c20, c21) X(3, c30, c31) X(4, c40, c41) X(5, c50, c51)
#define PYPTO_LOAD(I, X0, X1)                                            \
  if constexpr (I < MR) {                                                \
    X0 = kInit ? _mm256_setzero_ps() : _mm256_loadu_ps(C + I * ldc);     \
    X1 = kInit ? _mm256_setzero_ps() : _mm256_loadu_ps(C + I * ldc + 8); \
  }
#define PYPTO_FMA(I, X0, X1)                               \
  if constexpr (I < MR) {                                  \
    const __m256 a = _mm256_broadcast_ss(A + I * lda + k); \
    X0 = _mm256_fmadd_ps(a, b0, X0);                       \
    X1 = _mm256_fmadd_ps(a, b1, X1);                       \
  }
#define PYPTO_STORE(I, X0, X1)             \
  if constexpr (I < MR) {                  \
    _mm256_storeu_ps(C + I * ldc, X0);     \
    _mm256_storeu_ps(C + I * ldc + 8, X1); \
  }
  PYPTO_ROWS(PYPTO_LOAD)
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_load_ps(Bp + k * kCubeNR);
    const __m256 b1 = _mm256_load_ps(Bp + k * kCubeNR + 8);
    PYPTO_ROWS(PYPTO_FMA)
  }
  PYPTO_ROWS(PYPTO_STORE)
#undef PYPTO_FMA

// int8 as int16 pairs: per k pair, _mm256_madd_epi16 forms a[2p] * b[2p][j] + a[2p+1] * b[2p+1][j]
// exactly in int32 (|products| <= 2^14), added to the int32 accumulators.
#define PYPTO_ILOAD(I, X0, X1)                                                  \
  if constexpr (I < MR) {                                                       \
    X0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(C + I * ldc));     \
    X1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(C + I * ldc + 8)); \
  }
#define PYPTO_IMAD(I, X0, X1)                            \
  if constexpr (I < MR) {                                \
    int32_t pair;                                        \
    std::memcpy(&pair, A + I * lda + 2 * p, 4);          \
    const __m256i a = _mm256_set1_epi32(pair);           \
    X0 = _mm256_add_epi32(X0, _mm256_madd_epi16(a, b0)); \
    X1 = _mm256_add_epi32(X1, _mm256_madd_epi16(a, b1)); \
  }
#define PYPTO_ISTORE(I, X0, X1)                                           \
  if constexpr (I < MR) {                                                 \
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(C + I * ldc), X0);     \
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(C + I * ldc + 8), X1); \
  }
}

#if PYPTO_CUBE_BF16_PAIRS
// bf16 pairs: per k pair, _mm256_dpbf16_ps adds a[2p+1] * b[2p+1][j] and then a[2p] * b[2p][j]
// (exact products) into the fp32 accumulators. With kInit the accumulators start at zero.
template <int MR, bool kInit>
inline void MicroBF16(int64_t pairs, const pto::bfloat16* A, int64_t lda, const pto::bfloat16* Bp, float* C,
                      int64_t ldc) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
#define PYPTO_BDOT(I, X0, X1)                             \
  if constexpr (I < MR) {                                 \
    int32_t pair;                                         \
    std::memcpy(&pair, A + I * lda + 2 * p, 4);           \
    const __m256bh a = (__m256bh)_mm256_set1_epi32(pair); \
    X0 = _mm256_dpbf16_ps(X0, a, b0);                     \
    X1 = _mm256_dpbf16_ps(X1, a, b1);                     \
  }
  PYPTO_ROWS(PYPTO_LOAD)  // (MicroF32's: fp32 accumulators, zero with kInit)
  for (int64_t p = 0; p < pairs; ++p) {
    const __m256bh b0 = (__m256bh)(_mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + p * 2 * kCubeNR)));
    const __m256bh b1 = (__m256bh)(_mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + p * 2 * kCubeNR + 16)));
    PYPTO_ROWS(PYPTO_BDOT)
  }
  PYPTO_ROWS(PYPTO_STORE)
#undef PYPTO_BDOT
}

#include "pypto/cube_bf16_panels.hpp"  // the zmm kernels of two and three panels

// bf16 pairs widened to fp32 on the fly, FMAs in k order: what the fp32 path computes, for
// operands whose products or sums may be subnormal (see Bf16PackInfo).
template <int MR>
inline void MicroBF16Wide(int64_t K, const pto::bfloat16* A, int64_t lda, const pto::bfloat16* Bp, float* C,
                          int64_t ldc, bool init) {
  const __m256i hi = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  for (int i = 0; i < MR; ++i) {
    __m256 c0 = init ? _mm256_setzero_ps() : _mm256_loadu_ps(C + i * ldc);
    __m256 c1 = init ? _mm256_setzero_ps() : _mm256_loadu_ps(C + i * ldc + 8);
    for (int64_t k = 0; k < K; k += 2) {
      const int64_t p = k / 2;
      const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + p * 2 * kCubeNR));
      const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + p * 2 * kCubeNR + 16));
      const __m256 a0 = _mm256_set1_ps(static_cast<float>(A[i * lda + k]));
      c0 = _mm256_fmadd_ps(a0, _mm256_castsi256_ps(_mm256_slli_epi32(b0, 16)), c0);
      c1 = _mm256_fmadd_ps(a0, _mm256_castsi256_ps(_mm256_slli_epi32(b1, 16)), c1);
      if (k + 1 < K) {
        const __m256 a1 = _mm256_set1_ps(static_cast<float>(A[i * lda + k + 1]));
        c0 = _mm256_fmadd_ps(a1, _mm256_castsi256_ps(_mm256_and_si256(b0, hi)), c0);
        c1 = _mm256_fmadd_ps(a1, _mm256_castsi256_ps(_mm256_and_si256(b1, hi)), c1);
      }
    }
    _mm256_storeu_ps(C + i * ldc, c0);
    _mm256_storeu_ps(C + i * ldc + 8, c1);
  }
}
#endif

template <int MR>
inline void MicroI8(int64_t pairs, const int16_t* A, int64_t lda, const int16_t* Bp, int32_t* C, int64_t ldc) {
  __m256i c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  PYPTO_ROWS(PYPTO_ILOAD)
  for (int64_t p = 0; p < pairs; ++p) {
    // Columns 0-7 and 8-15 of the pair row: the panel stores (b0 b1) per column, 16 columns.
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + p * 2 * kCubeNR));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + p * 2 * kCubeNR + 16));
    PYPTO_ROWS(PYPTO_IMAD)
  }
  PYPTO_ROWS(PYPTO_ISTORE)
}
#undef PYPTO_ROWS
#undef PYPTO_LOAD
#undef PYPTO_STORE
#undef PYPTO_ILOAD
#undef PYPTO_IMAD
#undef PYPTO_ISTORE

// `init`: C = A * B; only the float kernels start from zero registers, so for int8 the
// caller zeroes C first (kZeroesC says which).
template <class Acc, int MR, class CT>
inline void Micro(int64_t K, const CT* A, int64_t lda, const void* Bp, Acc* C, int64_t ldc, bool init, bool dot_exact) {
  (void)dot_exact;
  if constexpr (std::is_same_v<Acc, int32_t>) {
    (void)init;
    MicroI8<MR>((K + 1) / 2, A, lda, static_cast<const int16_t*>(Bp), C, ldc);
#if PYPTO_CUBE_BF16_PAIRS
  } else if constexpr (std::is_same_v<CT, pto::bfloat16>) {
    if (!dot_exact)
      MicroBF16Wide<MR>(K, A, lda, static_cast<const pto::bfloat16*>(Bp), C, ldc, init);
    else if (init)
      MicroBF16<MR, true>((K + 1) / 2, A, lda, static_cast<const pto::bfloat16*>(Bp), C, ldc);
    else
      MicroBF16<MR, false>((K + 1) / 2, A, lda, static_cast<const pto::bfloat16*>(Bp), C, ldc);
#endif
  } else if (init) {
    MicroF32<MR, true>(K, A, lda, static_cast<const float*>(Bp), C, ldc);
  } else {
    MicroF32<MR, false>(K, A, lda, static_cast<const float*>(Bp), C, ldc);
  }
}
template <class Acc>
constexpr bool kZeroesC = std::is_same_v<Acc, float>;
#else
// Portable: the same blocking with scalar loops (the compiler vectorizes the j loop).
template <class Acc>
constexpr bool kZeroesC = false;
template <class Acc, int MR, class CT>
inline void Micro(int64_t K, const CT* A, int64_t lda, const void* Bpv, Acc* C, int64_t ldc, bool, bool) {
  if constexpr (std::is_same_v<Acc, int32_t>) {
    const int16_t* Bp = static_cast<const int16_t*>(Bpv);
    for (int i = 0; i < MR; ++i)
      for (int64_t p = 0; p < (K + 1) / 2; ++p)
        for (int j = 0; j < kCubeNR; ++j)
          C[i * ldc + j] =
              int32_t(uint32_t(C[i * ldc + j]) + uint32_t(int32_t(A[i * lda + 2 * p]) * Bp[p * 32 + 2 * j] +
                                                          int32_t(A[i * lda + 2 * p + 1]) * Bp[p * 32 + 2 * j + 1]));
  } else {
    const float* Bp = static_cast<const float*>(Bpv);
    for (int i = 0; i < MR; ++i)
      for (int64_t k = 0; k < K; ++k)
        for (int j = 0; j < kCubeNR; ++j)
          C[i * ldc + j] = std::fma(A[i * lda + k], Bp[k * kCubeNR + j], C[i * ldc + j]);
  }
}
#endif

/// C[vm x vn] (row stride ldc) += Left[vm x vk] (row stride ldl) * Right (packed panels); with
/// `init`, C = Left * Right (C's old values are not read).
template <class Acc, class CT>
inline void CubeMatmulAcc(Acc* C, int64_t ldc, const CT* L, int64_t ldl, const void* Rp, int64_t vm, int64_t vn,
                          int64_t vk, bool init) {
  static_assert(std::is_same_v<Acc, int32_t> == std::is_same_v<CT, int16_t>, "int8 operands accumulate in int32");
  const int64_t kp = (vk + 1) / 2 * 2;
  const int64_t panel = (kPairs<CT> ? kp : vk) * kCubeNR;  // elements per panel
  bool dot_exact = true;                                   // bf16 pairs: no subnormal product or sum (see Bf16PackInfo)
#if PYPTO_CUBE_BF16_PAIRS
  if constexpr (std::is_same_v<CT, pto::bfloat16>) dot_exact = Bf16PackMinExp(L) + Bf16PackMinExp(Rp) >= 142;
#endif
  int64_t n_done = 0;
#if PYPTO_CUBE_BF16_PAIRS
  if constexpr (std::is_same_v<CT, pto::bfloat16>)
    if (dot_exact) n_done = CubeBf16Panels(C, ldc, L, ldl, static_cast<const CT*>(Rp), panel, vm, vn, kp / 2, init);
#endif
  for (int64_t n0 = n_done; n0 < vn; n0 += kCubeNR) {
    const CT* bp = static_cast<const CT*>(Rp) + (n0 / kCubeNR) * panel;
    const int64_t nc = std::min<int64_t>(kCubeNR, vn - n0);
    alignas(32) Acc edge[kCubeMR * kCubeNR];
    for (int64_t m0 = 0, mr = 0; m0 < vm; m0 += mr) {
      // Blocks of 6 rows; 7 or 8 rows left go as 4 + 3 or 4 + 4, not 6 + 1 or 6 + 2 (a block of
      // r rows has 2r accumulators, and below 4 rows their FMA latency, not the pipes, sets
      // the pace: 4 + 4 takes 8 steps' time where 6 + 2 takes 10).
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
      } else if (init && !kZeroesC<Acc>) {
        for (int64_t i = 0; i < mr; ++i) std::fill(c + i * ldc, c + i * ldc + kCubeNR, Acc(0));
      }
      const bool zero = init && out != edge;  // (the edge block was zeroed above)
      switch (mr) {
        case 6:
          Micro<Acc, 6, CT>(vk, a, ldl, bp, out, ldo, zero, dot_exact);
          break;
        case 5:
          Micro<Acc, 5, CT>(vk, a, ldl, bp, out, ldo, zero, dot_exact);
          break;
        case 4:
          Micro<Acc, 4, CT>(vk, a, ldl, bp, out, ldo, zero, dot_exact);
          break;
        case 3:
          Micro<Acc, 3, CT>(vk, a, ldl, bp, out, ldo, zero, dot_exact);
          break;
        case 2:
          Micro<Acc, 2, CT>(vk, a, ldl, bp, out, ldo, zero, dot_exact);
          break;
        default:
          Micro<Acc, 1, CT>(vk, a, ldl, bp, out, ldo, zero, dot_exact);
          break;
      }
      if (out == edge)
        for (int64_t i = 0; i < mr; ++i) std::memcpy(c + i * ldc, edge + i * kCubeNR, nc * sizeof(Acc));
    }
  }
}

}  // namespace pypto_kernel
