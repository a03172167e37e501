// Packing the cube's Right buffer (TEXTRACT into L0B): 16-column panels, each `steps` rows of
// 64 bytes (cube_isa.hpp). fp32: 16 floats per k. Pairs (bf16, int16): (b[2p][j], b[2p+1][j])
// side by side, the operand order of VPMADDWD / VDPBF16PS / TDPBF16PS. Quads (int8): the 4 bytes
// b[4p..4p+3][j] side by side (VPDPBUSD / TDPBSSD), then a row of 16 int32: -128 x each
// column's sum, which takes back what adding 128 to A (VNNI's unsigned operand) added.
#pragma once

#include "pypto/cube_pack.hpp"

namespace pypto_kernel {

/// The quads of an int8 B (see the file comment); steps past k are zero.
inline void PackRightQuads(int8_t* dst, const int8_t* base, int64_t ks, int64_t ns, int64_t vk, int64_t vn) {
  const int64_t panels = (vn + kCubeNR - 1) / kCubeNR, panel = PanelBytes<int8_t>(vk);
  const int64_t steps = (vk + 3) / 4, spad = CubeSteps<int8_t>(vk), full_steps = vk / 4;
  int64_t fast_panels = 0;
#if defined(__SSE2__)
  if (ns == 1) {
    // Row-major B: 4 rows x 16 bytes interleaved into one step row, 4 steps (16 rows) at a time
    // across the panels, so the lines read serve every panel before they leave L1.
    fast_panels = vn / kCubeNR;
    for (int64_t s0 = 0; s0 < full_steps; s0 += 4) {
      const int64_t s1 = std::min<int64_t>(full_steps, s0 + 4);
      for (int64_t q = 0; q < fast_panels; ++q)
        for (int64_t s = s0; s < s1; ++s) {
          const int8_t* r = base + 4 * s * ks + q * kCubeNR;
          const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r));
          const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + ks));
          const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2 * ks));
          const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 3 * ks));
          const __m128i p01l = _mm_unpacklo_epi8(r0, r1), p01h = _mm_unpackhi_epi8(r0, r1);
          const __m128i p23l = _mm_unpacklo_epi8(r2, r3), p23h = _mm_unpackhi_epi8(r2, r3);
          __m128i* o = reinterpret_cast<__m128i*>(dst + q * panel + s * 64);
          _mm_store_si128(o, _mm_unpacklo_epi16(p01l, p23l));      // columns 0-3
          _mm_store_si128(o + 1, _mm_unpackhi_epi16(p01l, p23l));  // 4-7
          _mm_store_si128(o + 2, _mm_unpacklo_epi16(p01h, p23h));  // 8-11
          _mm_store_si128(o + 3, _mm_unpackhi_epi16(p01h, p23h));  // 12-15
        }
    }
  }
#endif
  for (int64_t q = 0; q < panels; ++q) {
    int8_t* d = dst + q * panel;
    const int64_t n0 = q * kCubeNR, nc = std::min<int64_t>(kCubeNR, vn - n0);
    int64_t s = q < fast_panels ? full_steps : 0;
    if (ks == 1 && ns != 1 && nc == kCubeNR)  // transposed B (K^T): a column's quad is 4 contiguous bytes
      for (; s < full_steps; ++s)
        for (int64_t j = 0; j < kCubeNR; ++j) std::memcpy(d + s * 64 + 4 * j, base + (n0 + j) * ns + 4 * s, 4);
    for (; s < steps; ++s)
      for (int64_t j = 0; j < kCubeNR; ++j)
        for (int64_t i = 0; i < 4; ++i) {
          const int64_t k = 4 * s + i;
          d[s * 64 + 4 * j + i] = j < nc && k < vk ? base[k * ks + (n0 + j) * ns] : int8_t(0);
        }
    std::memset(d + steps * 64, 0, static_cast<size_t>((spad - steps) * 64));
    // The fix-up row: -128 x the column sums (the AMX path multiplies signed bytes and skips it).
    int32_t* corr = reinterpret_cast<int32_t*>(d + spad * 64);
#if PYPTO_CUBE_I8 == 3
    __m512i sum = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t t = 0; t < steps; ++t)
      sum = _mm512_dpbusd_epi32(sum, ones, _mm512_load_si512(reinterpret_cast<const __m512i*>(d + t * 64)));
    _mm512_store_si512(reinterpret_cast<__m512i*>(corr), _mm512_mullo_epi32(sum, _mm512_set1_epi32(-128)));
#elif PYPTO_CUBE_I8 == 2
    const __m256i ones = _mm256_set1_epi8(1);
    for (int h = 0; h < 2; ++h) {
      __m256i sum = _mm256_setzero_si256();
      for (int64_t t = 0; t < steps; ++t)
        sum = _mm256_dpbusd_avx_epi32(sum, ones,
                                      _mm256_load_si256(reinterpret_cast<const __m256i*>(d + t * 64 + 32 * h)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(corr + 8 * h), _mm256_mullo_epi32(sum, _mm256_set1_epi32(-128)));
    }
#else
    for (int64_t j = 0; j < kCubeNR; ++j) corr[j] = 0;
#endif
  }
}

/// Right (k x n) into 16-column panels from the window at `base` of a Mat tile, element (k, n) at
/// base[k * ks + n * ns]; zero past n (and past k to whole steps).
template <class In>
inline void PackRight(CubeT<In>* dst, const In* base, int64_t ks, int64_t ns, int64_t vk, int64_t vn) {
  using CT = CubeT<In>;
  const int64_t panels = (vn + kCubeNR - 1) / kCubeNR;
  const int64_t panel = PanelBytes<CT>(vk) / static_cast<int64_t>(sizeof(CT));  // elements per panel
  if constexpr (std::is_same_v<CT, int8_t>) {
    PackRightQuads(dst, base, ks, ns, vk, vn);
  } else if constexpr (kPairs<CT>) {
    const int64_t pairs = (vk + 1) / 2;
    int64_t fast_panels = 0;  // full panels whose full pairs the blocked loop below packs
#if PYPTO_CUBE_BF16_PAIRS && PYPTO_CUBE_YMM
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
              CT* row = dst + q * panel + p * 2 * kCubeNR;
              _mm256_store_si256(reinterpret_cast<__m256i*>(row), _mm256_permute2x128_si256(lo, hi, 0x20));
              _mm256_store_si256(reinterpret_cast<__m256i*>(row + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
            }
        }
      }
    }
#endif
    for (int64_t q = 0; q < panels; ++q) {
      CT* d = dst + q * panel;
      const int64_t n0 = q * kCubeNR, nc = std::min<int64_t>(kCubeNR, vn - n0);
      int64_t p = q < fast_panels ? vk / 2 : 0;
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
      // AMX: whole tiles of 16 steps.
      std::memset(static_cast<void*>(d + pairs * 2 * kCubeNR), 0,
                  static_cast<size_t>((panel - pairs * 2 * kCubeNR) * sizeof(CT)));
    }
#if PYPTO_CUBE_BF16_PAIRS
    if constexpr (std::is_same_v<CT, pto::bfloat16>) NoteBf16Pack(dst, Bf16MinExp(dst, panels * panel));
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
#if PYPTO_CUBE_YMM
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

}  // namespace pypto_kernel
