#pragma once

#include "ir/block_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Peephole rewrites of kernel bodies into cheaper PTO instructions:
///  * TROWEXPANDSUB(t, a, b); TEXP(u, t)  ->  TROWEXPANDEXPDIF(u, a, b) when t has no other
///    reader (one pass over the tile instead of two; bit-exact), likewise TCOLEXPAND*;
///  * TROWEXPANDDIV(d, a, b)  ->  TRECIP(r, b); TROWEXPANDMUL(d, a, r) when the pass option
///    reciprocal_division is on (the default): a divide costs several multiplies and b has
///    one value per row; the result can differ from a / b by one rounding (<= 1.5 ulp).
/// Requires: kernels (Partition), before AllocateBuffers (it adds and removes buffers).
void FuseInstructions(BlockGraph& g, PassContext& ctx);

}  // namespace pypto
