// Which cube micro-kernels a kernel library compiles, from the target macros: the runtime compiles
// with -march=native minus what the CPU level in force takes away (src/runtime/cpu_isa.cpp,
// $PYPTO_CPU_ISA), so these choices follow the level. The library reports them as
// pypto_cube_paths(), which the runtime checks against the level's (CubePathsKey).
//
// The buffers' layouts, common to every path: A step of the dot product reads 4 bytes of a Left
// row (one fp32, a pair of bf16 or int16, a quad of int8) and one 64-byte row of a 16-column
// Right panel (16 lanes of the accumulator, fp32 or int32). AMX tiles are 16 of those steps by 16
// rows, so the AMX paths pad the steps to a multiple of 16 (and Left's rows to 16).
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <pto/pto.hpp>

// fp32 (and fp16, and bf16 without a bf16 dot product): zmm, ymm or portable kernels.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define PYPTO_CUBE_ZMM 1
#else
#define PYPTO_CUBE_ZMM 0
#endif
#if defined(__AVX2__) && defined(__FMA__)
#define PYPTO_CUBE_YMM 1
#else
#define PYPTO_CUBE_YMM 0
#endif

// AMX (BF16 and INT8 tiles), or its C++ emulation (PYPTO_AMX_EMULATE: the test level
// amx_emulated, any CPU).
#if defined(PYPTO_AMX_EMULATE) || (defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AMX_INT8__) && \
                                   PYPTO_CUBE_ZMM && defined(__AVX512BF16__))
#define PYPTO_CUBE_AMX 1
#else
#define PYPTO_CUBE_AMX 0
#endif

// bf16: 2 AMX TDPBF16PS, 1 AVX512_BF16 VDPBF16PS, 0 widened to fp32.
#if PYPTO_CUBE_AMX
#define PYPTO_CUBE_BF16 2
#elif PYPTO_CUBE_ZMM && defined(__AVX512BF16__)
#define PYPTO_CUBE_BF16 1
#else
#define PYPTO_CUBE_BF16 0
#endif
#define PYPTO_CUBE_BF16_PAIRS (PYPTO_CUBE_BF16 >= 1)

// int8: 4 AMX TDPBSSD, 3 AVX512_VNNI VPDPBUSD zmm, 2 AVX-VNNI VPDPBUSD ymm, 1 AVX2 VPMADDWD on
// int16 pairs, 0 portable (int16 pairs).
#if PYPTO_CUBE_AMX
#define PYPTO_CUBE_I8 4
#elif PYPTO_CUBE_ZMM && defined(__AVX512VNNI__)
#define PYPTO_CUBE_I8 3
#elif PYPTO_CUBE_YMM && defined(__AVXVNNI__)
#define PYPTO_CUBE_I8 2
#elif PYPTO_CUBE_YMM
#define PYPTO_CUBE_I8 1
#else
#define PYPTO_CUBE_I8 0
#endif

// The path names (src/runtime/cpu_isa.cpp's CubePathsKey spells the same).
#if PYPTO_CUBE_ZMM
#define PYPTO_CUBE_F32_NAME "avx512"
#elif PYPTO_CUBE_YMM
#define PYPTO_CUBE_F32_NAME "avx2"
#else
#define PYPTO_CUBE_F32_NAME "generic"
#endif
#if defined(PYPTO_AMX_EMULATE)
#define PYPTO_CUBE_AMX_NAME "amx_emulated"
#else
#define PYPTO_CUBE_AMX_NAME "amx"
#endif
#if PYPTO_CUBE_BF16 == 2
#define PYPTO_CUBE_BF16_NAME PYPTO_CUBE_AMX_NAME
#elif PYPTO_CUBE_BF16 == 1
#define PYPTO_CUBE_BF16_NAME "avx512_bf16"
#else
#define PYPTO_CUBE_BF16_NAME "widen"
#endif
#if PYPTO_CUBE_I8 == 4
#define PYPTO_CUBE_I8_NAME PYPTO_CUBE_AMX_NAME
#elif PYPTO_CUBE_I8 == 3
#define PYPTO_CUBE_I8_NAME "avx512_vnni"
#elif PYPTO_CUBE_I8 == 2
#define PYPTO_CUBE_I8_NAME "avx_vnni"
#elif PYPTO_CUBE_I8 == 1
#define PYPTO_CUBE_I8_NAME "avx2"
#else
#define PYPTO_CUBE_I8_NAME "generic"
#endif
#define PYPTO_CUBE_PATHS \
  "fp32=" PYPTO_CUBE_F32_NAME ";fp16=" PYPTO_CUBE_F32_NAME ";bf16=" PYPTO_CUBE_BF16_NAME ";int8=" PYPTO_CUBE_I8_NAME

namespace pypto_kernel {

/// The compute type of Left and Right: float for fp32 / fp16 (and bf16 without a bf16 dot
/// product), bf16 pairs, int16 pairs for int8 (VPMADDWD), or int8 quads (VNNI: Left holds A + 128
/// as unsigned bytes; AMX: signed bytes as they are).
template <class In>
using CubeT = std::conditional_t<
    std::is_same_v<In, int8_t>, std::conditional_t<(PYPTO_CUBE_I8 >= 2), int8_t, int16_t>,
    std::conditional_t<PYPTO_CUBE_BF16_PAIRS && std::is_same_v<In, pto::bfloat16>, pto::bfloat16, float>>;

/// Elements of CT one step of the dot product takes from a Left row (4 bytes).
template <class CT>
constexpr int64_t kGroup = 4 / static_cast<int64_t>(sizeof(CT));
/// Whether a step holds several k (pairs, quads): k is padded to a whole step.
template <class CT>
constexpr bool kPairs = !std::is_same_v<CT, float>;
/// Whether CT goes through the AMX tiles (steps and Left's rows padded to 16).
template <class CT>
constexpr bool kAmx = PYPTO_CUBE_AMX && (std::is_same_v<CT, pto::bfloat16> || std::is_same_v<CT, int8_t>);
/// Whether Right's panels end with a row of 16 int32 column corrections (int8 quads: VNNI's
/// unsigned A takes 128 x the column sum of B back out).
template <class CT>
constexpr bool kCorrRow = std::is_same_v<CT, int8_t>;

constexpr int kCubeMR = 6;     // rows of the ymm micro-kernel
constexpr int kCubeNR = 16;    // columns of a panel (one zmm, two ymm of fp32 or int32)
constexpr int kRowSlack = 16;  // Left rows past the tile that kernels may read (zeros or stale)

/// Steps of the dot product for k valid columns (whole tiles of 16 steps on AMX).
template <class CT>
constexpr int64_t CubeSteps(int64_t k) {
  const int64_t s = (k + kGroup<CT> - 1) / kGroup<CT>;
  return kAmx<CT> ? (s + 15) / 16 * 16 : s;
}
/// Left's row stride (elements) for a tile of k0 columns.
template <class In>
constexpr int64_t LeftLd(int64_t k0) {
  return CubeSteps<CubeT<In>>(k0) * kGroup<CubeT<In>>;
}
/// Elements of the Left buffer for an m0 x k0 tile (with the rows kernels may read past m0).
template <class In>
constexpr int64_t LeftElems(int64_t m0, int64_t k0) {
  return (m0 + kRowSlack) * LeftLd<In>(k0);
}
/// Bytes of one 16-column Right panel for k valid rows.
template <class CT>
constexpr int64_t PanelBytes(int64_t k) {
  return (CubeSteps<CT>(k) + (kCorrRow<CT> ? 1 : 0)) * 64;
}
/// Elements of the Right buffer for a k0 x n0 tile: 16-column panels.
template <class In>
constexpr int64_t RightElems(int64_t k0, int64_t n0) {
  using CT = CubeT<In>;
  return (n0 + kCubeNR - 1) / kCubeNR * PanelBytes<CT>(k0) / static_cast<int64_t>(sizeof(CT));
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

/// Bytes `elems` values of T take in the cube arena (64-byte aligned slots).
template <class T>
constexpr int64_t ArenaBytes(int64_t elems) {
  return (elems * static_cast<int64_t>(sizeof(T)) + 63) / 64 * 64;
}

}  // namespace pypto_kernel
