// Row fusion: a stretch of a vector kernel whose instructions all work row by row on tiles of
// the same rows (loads, elementwise and row-broadcast instructions, row reductions, elementwise
// instructions on R x 1 row values, stores) runs as one loop over the rows. Each row goes
// through every instruction before the next row starts, so a row's intermediates stay in L1
// (they live in row-sized scratch, not in whole UB tiles), loads read the row in place and
// stores write the row as soon as it is made. A softmax over 128 x 128 tiles then makes one
// trip through memory instead of one per instruction.
//
// Each row sees the instructions in their order, so results equal the instruction sequence,
// which remains the fallback for hosts without AVX2.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/fused_loops.h"
#include "ir/block_graph.h"

namespace pypto {

/// Length of the row-fusable stretch starting at body[i], or 0.
size_t RowFusedRegion(const FusionEnv& env, const std::vector<Instr>& body, size_t i);

/// C++ for body[i, i + n): the row loop under AVX2, else `fallback`.
std::string EmitRowFusedRegion(const FusionEnv& env, const std::vector<Instr>& body, size_t i, size_t n,
                               const std::string& fallback, const std::string& pad);

}  // namespace pypto
