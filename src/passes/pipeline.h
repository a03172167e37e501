#pragma once

#include "ir/program.h"
#include "passes/pass_context.h"
#include "passes/pass_properties.h"

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

/// A step's contract (pipeline.cpp's table): the IR properties its pass needs on its input, those
/// its output has, and those it breaks.
struct PassProperties {
  std::string name;
  std::vector<IRProperty> required, produced, invalidated;
};
/// One entry per step of PipelineStepNames, in order.
const std::vector<PassProperties>& PipelineProperties();

/// Runs the steps up to and including `last` (a PipelineStepNames entry) as Compile does: the
/// input of the step after it, so a test can run that one pass alone. Compile runs them all.
CompiledProgram CompileThrough(Function fn, const CompileOptions& opts, const std::string& last);

/// Checks every property the table says holds after step `step`, and that the step's required
/// ones were produced before it: an InternalError names the step and the property. Compile calls
/// it after each step when PipelineChecksProperties().
void CheckPropertiesAfter(const std::string& step, const CompiledProgram& p, const MachineModel& m);
/// True in debug builds (no NDEBUG) and in the C++ test build (PYPTO_CHECK_PASS_PROPERTIES).
bool PipelineChecksProperties();

}  // namespace pypto
