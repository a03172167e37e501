// Packing the cube's Left buffer (TEXTRACT into L0A) in the layout of cube_isa.hpp: m rows of
// whole steps (fp32; bf16 or int16 pairs; int8 quads, + 128 for VNNI). And the bookkeeping that
// keeps bf16 dot products exact. Right's panels: cube_pack_right.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pypto/cube_isa.hpp"

namespace pypto_kernel {

#if PYPTO_CUBE_BF16_PAIRS
/// The smallest biased exponent among the nonzero values each bf16 buffer was last packed with
/// (0 for a subnormal), per thread. VDPBF16PS and TDPBF16PS read subnormals as zero and flush
/// subnormal results; products whose exponents sum to at least -112 (biased sum 142) and every
/// sum of them are multiples of at least 2^-126, so none is subnormal and the instructions are
/// exact where fp32 FMAs are. Otherwise (or when a buffer is not found) the matmul widens to fp32.
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
#if PYPTO_CUBE_YMM
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
#endif
  for (; i < n; ++i)
    if (v[i].bits & 0x7FFF) m = std::min<int>(m, (v[i].bits >> 7) & 0xFF);
  return m;
}
#endif

template <class In>
inline CubeT<In> Widen(In x) {
  if constexpr (std::is_same_v<In, int8_t> && std::is_same_v<CubeT<In>, int16_t>)
    return static_cast<int16_t>(x);
  else if constexpr (std::is_same_v<CubeT<In>, In>)
    return x;  // bf16 pairs, int8 quads: the bits as they are
  else
    return static_cast<float>(x);
}

/// Left (m x k, row stride ldl) from the window at `base` of a Mat tile, element (m, k) at
/// base[m * ms + k * ks]. Rows are padded with zeros to whole steps; on AMX, rows too (to 16).
template <class In>
inline void PackLeft(CubeT<In>* dst, int64_t ldl, const In* base, int64_t ms, int64_t ks, int64_t vm, int64_t vk) {
  using CT = CubeT<In>;
  const int64_t kp = CubeSteps<CT>(vk) * kGroup<CT>;
  for (int64_t m = 0; m < vm; ++m) {
    CT* d = dst + m * ldl;
    const In* s = base + m * ms;
    if constexpr (std::is_same_v<In, float>) {
      if (ks == 1) {
        // Rows are short (k0 floats): an inline vector copy beats a call to memcpy per row.
        int64_t full = 0;
#if PYPTO_CUBE_YMM
        full = vk / 8 * 8;
        for (int64_t k = 0; k < full; k += 8) _mm256_storeu_ps(d + k, _mm256_loadu_ps(s + k));
#endif
        for (int64_t k = full; k < vk; ++k) d[k] = s[k];
      } else {
        for (int64_t k = 0; k < vk; ++k) d[k] = s[k * ks];
      }
    } else if constexpr (std::is_same_v<In, int8_t> && PYPTO_CUBE_I8 >= 2 && PYPTO_CUBE_I8 <= 3) {
      // VNNI: A + 128 as unsigned bytes (VPDPBUSD multiplies unsigned by signed).
      if (ks == 1) {
        int64_t k = 0;
#if PYPTO_CUBE_YMM
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        for (; k + 32 <= vk; k += 32)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + k),
                              _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + k)), flip));
#endif
        for (; k < vk; ++k) d[k] = static_cast<int8_t>(s[k] ^ 0x80);
      } else {
        for (int64_t k = 0; k < vk; ++k) d[k] = static_cast<int8_t>(s[k * ks] ^ 0x80);
      }
    } else if constexpr (std::is_same_v<CT, In>) {
      if (ks == 1)
        std::memcpy(d, s, static_cast<size_t>(vk) * sizeof(In));  // bf16 pairs, AMX int8: the row as it is
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
    for (int64_t k = vk; k < kp; ++k) d[k] = CT(0);
  }
  if constexpr (kAmx<CT>)  // the rows a tile of 16 reads past the last one
    for (int64_t m = vm; m < (vm + 15) / 16 * 16; ++m) std::memset(dst + m * ldl, 0, kp * sizeof(CT));
#if PYPTO_CUBE_BF16_PAIRS
  if constexpr (std::is_same_v<CT, pto::bfloat16>) {
    int m = 255;
    for (int64_t r = 0; r < vm; ++r) m = std::min(m, Bf16MinExp(dst + r * ldl, vk));
    NoteBf16Pack(dst, m);
  }
#endif
}

#if PYPTO_CUBE_YMM
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

}  // namespace pypto_kernel
