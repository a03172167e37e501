#pragma once

#include "ir/block_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Gives every tile buffer of every kernel an offset in UB. Buffers whose live ranges do not
/// overlap share space (largest first, each at the lowest offset free over its live range; aligned to the
/// machine's UB alignment).
/// Requires: kernels (Partition). Produces: TileBuf::offset, Kernel::ub_bytes <= UB capacity.
void AllocateBuffers(BlockGraph& g, PassContext& ctx);

}  // namespace pypto
