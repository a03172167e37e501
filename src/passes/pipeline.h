#pragma once

#include "ir/program.h"
#include "passes/pass_context.h"

namespace pypto {

/// The default pass pipeline (see pipeline.cpp for the list and the reasons for its order).
CompiledProgram Compile(Function fn, const CompileOptions& opts);
/// The names of the pipeline's steps in order, as Compile dumps them (tensor_graph, the graph
/// as recorded, then one per pass): what per-pass options and dumps may name.
const std::vector<std::string>& PipelineStepNames();

/// The program as it stood after snapshot `i`: that block graph, every tile buffer in its own
/// bytes (no reuse, so only the passes up to the snapshot can change the answer), and its
/// execution graph. For the interpreter.
CompiledProgram SnapshotProgram(const CompiledProgram& p, size_t i);

}  // namespace pypto
