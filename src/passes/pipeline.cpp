// The default pass pipeline, top to bottom. Each step runs one pass and records the IR after
// it (written to dump_dir/passes/NN_<pass>.txt and .json when dumping is on).
#include "passes/pipeline.h"

#include <chrono>

#include "ir/json_printer.h"
#include "passes/allocate_buffers.h"
#include "passes/build_exec_graph.h"
#include "passes/expand_tiles.h"
#include "passes/fuse_instructions.h"
#include "passes/infer_shapes.h"
#include "passes/partition.h"

namespace pypto {

namespace {
template <class F>
double Timed(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

CompiledProgram Compile(Function fn, const CompileOptions& opts) {
  PassContext ctx(opts);
  CompiledProgram p;
  p.options = opts;

  // The graph as recorded from the user's program.
  ctx.Dump("tensor_graph", PrintTensorGraph(fn), 0, [&] { return TensorGraphJson(fn); });

  // Check every op's type with the registry: graphs from any frontend are consistent after it.
  double ms = Timed([&] { InferShapes(fn, ctx); });
  ctx.Dump("infer_shapes", PrintTensorGraph(fn), ms, [&] { return TensorGraphJson(fn); });

  // Tensor ops -> tile ops with the user's tile shapes; needs inferred shapes for the tails.
  ms = Timed([&] { p.tile_graph = ExpandTiles(fn, ctx); });
  ctx.Dump("expand_tiles", PrintTileGraph(p.tile_graph), ms, [&] { return TileGraphJson(p.tile_graph); });

  // Tile ops -> kernels; decides which values stay in UB and which go to global memory.
  ms = Timed([&] { p.block_graph = Partition(p.tile_graph, ctx); });
  ctx.Dump("partition", PrintBlockGraph(p.block_graph), ms, [&] { return BlockGraphJson(p.block_graph); });
  if (opts.keep_snapshots) p.snapshots.push_back({"partition", p.block_graph});

  // Cheaper instruction sequences inside kernels; before AllocateBuffers, as it adds and
  // removes tile buffers.
  ms = Timed([&] { FuseInstructions(p.block_graph, ctx); });
  ctx.Dump("fuse_instructions", PrintBlockGraph(p.block_graph), ms, [&] { return BlockGraphJson(p.block_graph); });
  if (opts.keep_snapshots) p.snapshots.push_back({"fuse_instructions", p.block_graph});

  // UB offsets: must follow Partition, which fixes the buffers each kernel needs.
  ms = Timed([&] { AllocateBuffers(p.block_graph, ctx); });
  ctx.Dump("allocate_buffers", PrintBlockGraph(p.block_graph), ms, [&] { return BlockGraphJson(p.block_graph); });

  // Task groups and their dependencies for the runtime.
  ms = Timed([&] { p.exec_graph = BuildExecGraph(p.block_graph, ctx); });
  ctx.Dump("build_exec_graph", PrintExecGraph(p.exec_graph), ms, [&] { return ExecGraphJson(p.exec_graph); });

  p.tensor_graph = std::move(fn);
  p.dumps = ctx.dumps();
  p.pass_ms = ctx.timings();
  return p;
}

const std::vector<std::string>& PipelineStepNames() {
  // The order of Compile above (tests/cpp/test_pipeline.cpp checks the two agree).
  static const std::vector<std::string> names = {"tensor_graph",    "infer_shapes",      "expand_tiles",
                                                 "partition",       "fuse_instructions", "allocate_buffers",
                                                 "build_exec_graph"};
  return names;
}

CompiledProgram SnapshotProgram(const CompiledProgram& p, size_t i) {
  PYPTO_CHECK(i < p.snapshots.size(), "no snapshot ", i);
  CompiledProgram s = p;
  s.snapshots.clear();
  s.block_graph = p.snapshots[i].second;
  for (auto& k : s.block_graph.kernels) {
    int64_t off = 0;
    for (auto& b : k.bufs) {
      b.offset = off;
      off += (b.bytes() + 63) / 64 * 64;
    }
    k.ub_bytes = off;
  }
  CompileOptions o = p.options;
  o.dump_passes = false;
  o.dump_dir.clear();
  PassContext ctx(o);
  s.exec_graph = BuildExecGraph(s.block_graph, ctx);
  return s;
}

}  // namespace pypto
