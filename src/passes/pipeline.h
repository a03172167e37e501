#pragma once

#include "ir/program.h"
#include "passes/pass_context.h"

namespace pypto {

/// The default pass pipeline (see pipeline.cpp for the list and the reasons for its order).
CompiledProgram Compile(Function fn, const CompileOptions& opts);

/// The program as it stood after snapshot `i`: that block graph, every tile buffer in its own
/// bytes (no reuse, so only the passes up to the snapshot can change the answer), and its
/// execution graph. For the interpreter.
CompiledProgram SnapshotProgram(const CompiledProgram& p, size_t i);

}  // namespace pypto
