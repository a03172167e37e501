// What the binding files share: Python values to the IR's (source locations, symbolic
// expressions, op attributes) and the compiled program object Python holds.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <vector>

#include "ir/error.h"
#include "ir/tensor_graph.h"
#include "passes/pipeline.h"
#include "runtime/runtime.h"

namespace pypto {

/// (file, line, column, text) from Python, or no location for None.
SourceLoc MakeLoc(const nanobind::handle& h);
/// An int or a SymbolicScalar as an expression (TypeError for anything else).
Expr ToExpr(const nanobind::handle& h);
std::vector<Expr> ToExprs(const nanobind::handle& seq);
/// Op attributes from a Python dict: bool/int, float, str, DataType, a list of ints, or a list
/// of dims (ints and SymbolicScalars).
Attrs ToAttrs(const nanobind::dict& d);

/// A compiled program and the runtime that runs it (pypto._core.Program).
struct Program {
  std::shared_ptr<const CompiledProgram> compiled;
  std::shared_ptr<Runtime> runtime;
};

/// pypto._core.Recorder (recorder_bindings.cpp).
void BindRecorder(nanobind::module_& m);

}  // namespace pypto
