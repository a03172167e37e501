#pragma once

#include <string>
#include <vector>

#include "ir/block_graph.h"
#include "ir/tile_graph.h"

namespace pypto {

/// The body of kernel `id`, which runs `ops` (tile ops of one region on one tile grid, as
/// Partition grouped them) at each grid point: loads of the operand tiles (TLOAD), the PTO
/// instructions of each op with intermediates in UB, stores (TSTORE) of what leaves the kernel
/// (values marked materialized). A reduction whose axis spans several tiles becomes a loop
/// over its tiles; a matmul, the cube's L1 / L0 steps.
Kernel BuildKernelBody(const Function& fn, int id, const std::vector<const TileOp*>& ops, const std::string& reason);

}  // namespace pypto
