#pragma once

#include "ir/block_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Everything the compiler produced for one function: every level, and the pass dumps.
struct CompiledProgram {
  Function tensor_graph;
  TileGraph tile_graph;
  BlockGraph block_graph;
  ExecGraph exec_graph;
  std::vector<std::pair<std::string, std::string>> dumps;  // (NN_pass, text)
  std::vector<std::pair<std::string, double>> pass_ms;
  CompileOptions options;
};

/// The default pass pipeline (see pipeline.cpp for the list and the reasons for its order).
CompiledProgram Compile(Function fn, const CompileOptions& opts);

}  // namespace pypto
