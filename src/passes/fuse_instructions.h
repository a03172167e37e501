#pragma once

#include "ir/block_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Peephole rewrites of kernel bodies into cheaper PTO instructions:
///  * TROWEXPANDSUB(t, a, b); TEXP(u, t)  ->  TROWEXPANDEXPDIF(u, a, b) when t has no other
///    reader (one pass over the tile instead of two; bit-exact), likewise TCOLEXPAND*;
///  * with the pass option reciprocal_division (off by default: the fast path that differs from
///    numpy), TROWEXPANDDIV(d, a, b) -> TRECIP(r, b); TROWEXPANDMUL(d, a, r), likewise
///    TCOLEXPANDDIV, and the scalar/tile TDIVS(d, s, b) -> TRECIP(r, b); TMULS(d, r, s). The
///    result can differ from a / b by one rounding (<= 1.5 ulp), and overflows to inf when
///    1 / b does (|b| < 2^-126, a subnormal divisor). Measured on softmax 8192 x 2048 fp32:
///    no faster than the division (the kernel is memory bound), hence off.
/// Requires: kernels (Partition), before AllocateBuffers (it adds and removes buffers).
void FuseInstructions(BlockGraph& g, PassContext& ctx);

}  // namespace pypto
