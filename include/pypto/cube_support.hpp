// The cube tiles on the CPU. A cube kernel's instructions map to a register-blocked GEMM:
//   TLOAD into Mat (L1)    -> a view of global memory (no copy: the L1 tile is whatever the
//                             caches hold of it)
//   TEXTRACT into Left     -> a row-major copy of the m0 x k0 block in whole steps of the dot
//                             product (cube_pack.hpp); this is the CPU's L0A layout
//   TEXTRACT into Right    -> 16-column panels of 64-byte step rows (cube_pack_right.hpp), the
//                             CPU's L0B "fractal" and an AMX B tile's layout
//   TMATMUL_ACC            -> the micro-kernels of the CPU level the library is compiled for
//                             (cube_isa.hpp): zmm (cube_zmm.hpp), ymm or portable
//                             (cube_ymm.hpp), AMX tiles (cube_amx.hpp)
// Results equal the reference in exact arithmetic; fp32 sums run in k order per output with
// FMAs, and int8 products accumulate exactly in int32 (wrapping). bf16 on a CPU with AVX512_BF16
// or AMX stays bf16 in Left and Right (k pairs) and multiplies with VDPBF16PS / TDPBF16PS: each
// step adds the two exact products of a k pair into the fp32 sum (two roundings), twice the MACs
// per instruction of an fp32 FMA; the instructions treat subnormal inputs and results as zero,
// so operands that could make one take the fp32 FMA path (see Bf16PackInfo).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <pto/pto.hpp>
#include <type_traits>

#include "pypto/cube_amx.hpp"
#include "pypto/cube_isa.hpp"
#include "pypto/cube_pack_right.hpp"
#include "pypto/cube_ymm.hpp"
#include "pypto/kernel_abi.h"
#if PYPTO_CUBE_ZMM
#include "pypto/cube_zmm.hpp"
#endif

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

/// C[vm x vn] (row stride ldc) += Left[vm x vk] (row stride ldl) * Right (packed panels); with
/// `init`, C = Left * Right (C's old values are not read).
template <class Acc, class CT>
inline void CubeMatmulAcc(Acc* C, int64_t ldc, const CT* L, int64_t ldl, const void* Rp, int64_t vm, int64_t vn,
                          int64_t vk, bool init) {
  static_assert(std::is_same_v<Acc, int32_t> == (std::is_same_v<CT, int16_t> || std::is_same_v<CT, int8_t>),
                "int8 operands accumulate in int32");
  const CT* R = static_cast<const CT*>(Rp);
  const int64_t steps = CubeSteps<CT>(vk);
  const int64_t panel = PanelBytes<CT>(vk);  // bytes per panel
  [[maybe_unused]] const auto* L8 = reinterpret_cast<const unsigned char*>(L);
  [[maybe_unused]] const auto* R8 = reinterpret_cast<const unsigned char*>(R);
  [[maybe_unused]] const int64_t lda = ldl * static_cast<int64_t>(sizeof(CT));
  if constexpr (std::is_same_v<CT, pto::bfloat16>) {
#if PYPTO_CUBE_BF16_PAIRS
    // No subnormal product or sum (see Bf16PackInfo): the bf16 dot products; else widen.
    if (Bf16PackMinExp(L) + Bf16PackMinExp(Rp) < 142)
      return CubeBf16Wide(C, ldc, L, ldl, R, panel / 2, vm, vn, vk, init);
#if PYPTO_CUBE_BF16 == 2
    return CubeAmx<Acc, CT>(C, ldc, L, ldl, R, panel, vm, vn, steps, init);
#else
    return CubeZ<ZBF16>(C, ldc, L8, lda, R8, panel, vm, vn, steps, init);
#endif
#endif
  } else if constexpr (std::is_same_v<CT, int8_t>) {
#if PYPTO_CUBE_I8 == 4
    return CubeAmx<Acc, CT>(C, ldc, L, ldl, R, panel, vm, vn, steps, init);
#elif PYPTO_CUBE_I8 == 3
    return CubeZ<ZVNNI>(C, ldc, L8, lda, R8, panel, vm, vn, steps, init);
#elif PYPTO_CUBE_I8 == 2
    return CubeY<Acc, CT>(C, ldc, L, ldl, R, panel, vm, vn, steps, init);
#endif
  } else if constexpr (std::is_same_v<CT, float>) {
#if PYPTO_CUBE_ZMM
    return CubeZ<ZF32>(C, ldc, L8, lda, R8, panel, vm, vn, steps, init);
#else
    return CubeY<Acc, CT>(C, ldc, L, ldl, R, panel / 4, vm, vn, steps, init);
#endif
  } else {  // int16 pairs
    return CubeY<Acc, CT>(C, ldc, L, ldl, R, panel / 2, vm, vn, steps, init);
  }
}

}  // namespace pypto_kernel
