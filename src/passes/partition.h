#pragma once

#include "ir/block_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Tile graph -> block graph. Consecutive tile ops of one region that iterate the same tile
/// grid become one kernel: each grid point loads its operand tiles (TLOAD), runs the chain of
/// PTO instructions with intermediates in UB, and stores (TSTORE) only what leaves the kernel.
/// A value read by another kernel is materialized as a global-memory workspace. A reduction
/// whose axis spans several tiles gets its own kernel, which reduces across tiles in a loop.
/// Requires: tile shapes (ExpandTiles). Produces: kernels whose tile estimate fits UB.
BlockGraph Partition(const TileGraph& g, PassContext& ctx);

}  // namespace pypto
