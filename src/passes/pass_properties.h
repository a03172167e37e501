// Properties of the IR that the pipeline's passes establish and rely on, each with a cheap
// structural check. pipeline.cpp declares which pass requires, produces and breaks which, and
// checks them after every pass in debug builds and in the C++ test build.
#pragma once

#include <cstdint>
#include <string>

#include "ir/program.h"
#include "machine/machine.h"

namespace pypto {

enum class IRProperty : uint8_t {
  // Tensor graph: every op's operands exist and every result has a shape of defined dims.
  ShapesInferred,
  // Tile graph: each live tensor op is one tile op with a tile of its iteration rank (>= 1 per
  // dim), valid accesses, and a cube tile for a matmul; the others are listed as dead.
  TilesExpanded,
  // Block graph: each tile op runs in exactly one kernel, each kernel is launched exactly once,
  // and kernel bodies name only their own buffers and parameters.
  KernelsPartitioned,
  // Block graph: every tile buffer an instruction touches has an aligned offset inside its
  // kernel's scratch (Vec inside UB), one instruction's operands never share bytes, and the
  // memory spaces do not overlap.
  BuffersAllocated,
  // Execution graph: one node per launch, each naming an existing kernel; dependencies name
  // earlier launches of the same region, point-wise links are dependencies.
  ExecGraphBuilt,
};

const char* IRPropertyName(IRProperty p);

/// Throws InternalError("after pass <pass>: property <name> does not hold: <what>") when `p`
/// does not hold in `prog` (compiled for machine `m`).
void CheckProperty(IRProperty p, const CompiledProgram& prog, const MachineModel& m, const std::string& pass);

}  // namespace pypto
