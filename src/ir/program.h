// A compiled program as data: the options it was compiled with and every level the pipeline
// produced. The passes make it (passes/pipeline.h), the runtime runs it, without depending on
// the passes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/block_graph.h"

namespace pypto {

struct CompileOptions {
  std::string machine = "cpu";  // capacities the program must fit ("a2a3", "a5": NPU models)
  std::string dump_dir;         // write per-pass dumps here when set
  bool dump_passes = false;
  std::vector<std::string> dump_only;  // pass names to dump (all if empty)
  bool reciprocal_division = false;    // FuseInstructions: x / row_value as x * (1 / row_value)
  bool keep_snapshots = false;         // keep the block graph after each block-level pass (verify_passes)
};

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

}  // namespace pypto
