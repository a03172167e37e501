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
  // With options.keep_snapshots: the block graph after each block-level pass before
  // AllocateBuffers ("partition", "fuse_instructions"), so verify_passes can run each one.
  std::vector<std::pair<std::string, BlockGraph>> snapshots;
};

/// The default pass pipeline (see pipeline.cpp for the list and the reasons for its order).
CompiledProgram Compile(Function fn, const CompileOptions& opts);

/// The program as it stood after snapshot `i`: that block graph, every tile buffer in its own
/// bytes (no reuse, so only the passes up to the snapshot can change the answer), and its
/// execution graph. For the interpreter.
CompiledProgram SnapshotProgram(const CompiledProgram& p, size_t i);

}  // namespace pypto
