#pragma once

#include <string>
#include <vector>

#include "ir/tensor_graph.h"

namespace pypto {

/// Whether each row of every result depends only on the same row of the `row_values` (the tile
/// parameters of a tile function): elementwise ops and broadcasts, casts, reductions and scans
/// along the last dim, a row-aligned left matmul operand. Returns "" when so, else a description
/// of the first op that mixes rows (a reduction over dim 0, a slice of rows, a loop, ...). A tile
/// function whose body is row-local runs over the whole array at once (the compiler cuts it into
/// the same row tiles); otherwise it is traced per tile.
std::string FirstRowMixingOp(const Function& f, const std::vector<int>& row_values);

}  // namespace pypto
