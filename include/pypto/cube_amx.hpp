// The AMX cube kernels: the L0A / L0B / L0C buffers of a step map onto tile registers (tiles 4-5
// hold 16 rows of Left, 6-7 a 16 x 64-byte block of a Right panel, 0-3 a 32 x 32 block of the
// accumulator), and TMATMUL_ACC onto TDPBF16PS (bf16 pairs) or TDPBSSD (int8 quads, signed x
// signed: no fix-up). The panel layout is the VNNI one (a step's 64-byte row holds 16 columns of
// a pair or quad), which is what a B tile is. Steps and Left's rows are padded to 16 with zeros.
//
// PYPTO_AMX_EMULATE (the test level amx_emulated) computes the tile instructions in C++ as the
// SDM's pseudo-code defines them, on any CPU: the layouts, tails and padding are then checked
// where there is no AMX. The Linux permission for the tile data is requested by the runtime
// (src/runtime/cpu_isa.cpp), which compiles for AMX only once it was granted.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "pypto/cube_isa.hpp"

#if PYPTO_CUBE_AMX
namespace pypto_kernel {
namespace amx {

#if defined(PYPTO_AMX_EMULATE)
/// This thread's eight tiles of 16 rows x 64 bytes (the palette the kernels configure).
struct Tiles {
  alignas(64) unsigned char t[8][16][64];
};
inline Tiles& Regs() {
  static thread_local Tiles r;
  return r;
}
inline void Config() {}
inline void Release() {}
template <int T>
inline void Load(const void* p, int64_t stride) {
  for (int r = 0; r < 16; ++r) std::memcpy(Regs().t[T][r], static_cast<const char*>(p) + r * stride, 64);
}
template <int T>
inline void Store(void* p, int64_t stride) {
  for (int r = 0; r < 16; ++r) std::memcpy(static_cast<char*>(p) + r * stride, Regs().t[T][r], 64);
}
template <int T>
inline void Zero() {
  std::memset(Regs().t[T], 0, sizeof(Regs().t[T]));
}
/// bf16 (bits) as fp32, a subnormal read as zero (the instruction's DAZ).
inline float Bf16Daz(const unsigned char* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  if ((b & 0x7F80) == 0) b &= 0x8000;
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float Ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
/// TDPBF16PS: c[m][n] += a[m][2k] * b[k][2n], then += a[m][2k+1] * b[k][2n+1], k in order.
template <int Cc, int Aa, int Bb>
inline void DpBf16() {
  Tiles& r = Regs();
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      float acc;
      std::memcpy(&acc, &r.t[Cc][m][4 * n], 4);
      for (int k = 0; k < 16; ++k) {
        acc = Ftz(acc + Bf16Daz(&r.t[Aa][m][4 * k]) * Bf16Daz(&r.t[Bb][k][4 * n]));
        acc = Ftz(acc + Bf16Daz(&r.t[Aa][m][4 * k + 2]) * Bf16Daz(&r.t[Bb][k][4 * n + 2]));
      }
      std::memcpy(&r.t[Cc][m][4 * n], &acc, 4);
    }
}
/// TDPBSSD: c[m][n] += the 4 products a[m][4k + i] * b[k][4n + i] (signed bytes), wrapping.
template <int Cc, int Aa, int Bb>
inline void DpSsd() {
  Tiles& r = Regs();
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      uint32_t acc;
      std::memcpy(&acc, &r.t[Cc][m][4 * n], 4);
      for (int k = 0; k < 16; ++k)
        for (int i = 0; i < 4; ++i)
          acc += uint32_t(int32_t(int8_t(r.t[Aa][m][4 * k + i])) * int32_t(int8_t(r.t[Bb][k][4 * n + i])));
      std::memcpy(&r.t[Cc][m][4 * n], &acc, 4);
    }
}
#define PYPTO_TILE_LOAD(T, p, s) amx::Load<T>(p, s)
#define PYPTO_TILE_STORE(T, p, s) amx::Store<T>(p, s)
#define PYPTO_TILE_ZERO(T) amx::Zero<T>()
#define PYPTO_TILE_DPBF16(C, A, B) amx::DpBf16<C, A, B>()
#define PYPTO_TILE_DPBSSD(C, A, B) amx::DpSsd<C, A, B>()
#else
/// Palette 1, every tile 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette_id, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
inline void Config() {
  TileConfig c;
  std::memset(&c, 0, sizeof(c));
  c.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = 16;
  }
  _tile_loadconfig(&c);
}
inline void Release() { _tile_release(); }
// (GCC's tile intrinsics paste the tile number into the assembly: it must be a literal.)
#define PYPTO_TILE_LOAD(T, p, s) _tile_loadd(T, p, s)
#define PYPTO_TILE_STORE(T, p, s) _tile_stored(T, p, s)
#define PYPTO_TILE_ZERO(T) _tile_zero(T)
#define PYPTO_TILE_DPBF16(C, A, B) _tile_dpbf16ps(C, A, B)
#define PYPTO_TILE_DPBSSD(C, A, B) _tile_dpbssd(C, A, B)
#endif

#define PYPTO_TILE_DP(C, A, B)    \
  do {                            \
    if constexpr (kBf16)          \
      PYPTO_TILE_DPBF16(C, A, B); \
    else                          \
      PYPTO_TILE_DPBSSD(C, A, B); \
  } while (0)

/// C (ldc bytes between rows) += MT x 16 rows of Left (lda bytes apart) times NT panels of Right
/// (`panel` bytes apart), over `steps` (a multiple of 16); with `init`, C = the product.
template <class CT, int MT, int NT>
inline void Block(int64_t steps, const unsigned char* A, int64_t lda, const unsigned char* B, int64_t panel,
                  unsigned char* C, int64_t ldc, bool init) {
  constexpr bool kBf16 = std::is_same_v<CT, pto::bfloat16>;
  if (init) {
    PYPTO_TILE_ZERO(0);
    if constexpr (NT == 2) PYPTO_TILE_ZERO(1);
    if constexpr (MT == 2) PYPTO_TILE_ZERO(2);
    if constexpr (MT == 2 && NT == 2) PYPTO_TILE_ZERO(3);
  } else {
    PYPTO_TILE_LOAD(0, C, ldc);
    if constexpr (NT == 2) PYPTO_TILE_LOAD(1, C + 64, ldc);
    if constexpr (MT == 2) PYPTO_TILE_LOAD(2, C + 16 * ldc, ldc);
    if constexpr (MT == 2 && NT == 2) PYPTO_TILE_LOAD(3, C + 16 * ldc + 64, ldc);
  }
  for (int64_t s = 0; s < steps; s += 16) {
    PYPTO_TILE_LOAD(4, A + s * 4, lda);
    if constexpr (MT == 2) PYPTO_TILE_LOAD(5, A + 16 * lda + s * 4, lda);
    PYPTO_TILE_LOAD(6, B + s * 64, 64);
    if constexpr (NT == 2) PYPTO_TILE_LOAD(7, B + panel + s * 64, 64);
    PYPTO_TILE_DP(0, 4, 6);
    if constexpr (NT == 2) PYPTO_TILE_DP(1, 4, 7);
    if constexpr (MT == 2) PYPTO_TILE_DP(2, 5, 6);
    if constexpr (MT == 2 && NT == 2) PYPTO_TILE_DP(3, 5, 7);
  }
  PYPTO_TILE_STORE(0, C, ldc);
  if constexpr (NT == 2) PYPTO_TILE_STORE(1, C + 64, ldc);
  if constexpr (MT == 2) PYPTO_TILE_STORE(2, C + 16 * ldc, ldc);
  if constexpr (MT == 2 && NT == 2) PYPTO_TILE_STORE(3, C + 16 * ldc + 64, ldc);
}

}  // namespace amx

/// C[vm x vn] (row stride ldc) += L x R on the tiles, 32 x 32 blocks of C; a block past the
/// valid rows or columns is computed in a scratch block and its valid part copied.
template <class Acc, class CT>
inline void CubeAmx(Acc* C, int64_t ldc, const CT* L, int64_t ldl, const CT* R, int64_t panel, int64_t vm, int64_t vn,
                    int64_t steps, bool init) {
  amx::Config();
  const auto* A8 = reinterpret_cast<const unsigned char*>(L);
  const auto* B8 = reinterpret_cast<const unsigned char*>(R);
  const int64_t lda = ldl * static_cast<int64_t>(sizeof(CT));
  const int64_t panels = (vn + kCubeNR - 1) / kCubeNR;
  alignas(64) Acc scratch[32 * 32];
  for (int64_t q = 0; q < panels; q += 2) {
    const int nt = panels - q >= 2 ? 2 : 1;
    const int64_t cols = std::min<int64_t>(16 * nt, vn - q * kCubeNR);
    for (int64_t m0 = 0; m0 < vm; m0 += 32) {
      const int mt = vm - m0 > 16 ? 2 : 1;
      const int64_t rows = std::min<int64_t>(16 * mt, vm - m0);
      const unsigned char* a = A8 + m0 * lda;
      const unsigned char* b = B8 + q * panel;
      Acc* c = C + m0 * ldc + q * kCubeNR;
      const bool whole = rows == 16 * mt && cols == 16 * nt;
      unsigned char* out = reinterpret_cast<unsigned char*>(whole ? c : scratch);
      const int64_t ldo = whole ? ldc * 4 : 32 * 4;
      if (!whole) {
        std::fill(scratch, scratch + 32 * 32, Acc(0));
        if (!init)
          for (int64_t i = 0; i < rows; ++i) std::memcpy(scratch + i * 32, c + i * ldc, cols * sizeof(Acc));
      }
      const bool zero = init && whole;
      if (mt == 2 && nt == 2)
        amx::Block<CT, 2, 2>(steps, a, lda, b, panel, out, ldo, zero);
      else if (mt == 2)
        amx::Block<CT, 2, 1>(steps, a, lda, b, panel, out, ldo, zero);
      else if (nt == 2)
        amx::Block<CT, 1, 2>(steps, a, lda, b, panel, out, ldo, zero);
      else
        amx::Block<CT, 1, 1>(steps, a, lda, b, panel, out, ldo, zero);
      if (!whole)
        for (int64_t i = 0; i < rows; ++i) std::memcpy(c + i * ldc, scratch + i * 32, cols * sizeof(Acc));
    }
  }
  amx::Release();
}

}  // namespace pypto_kernel
#endif
