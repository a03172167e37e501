// The default pass pipeline, top to bottom. Each step runs one pass and records the IR after
// it (written to dump_dir/passes/NN_<pass>.txt and .json when dumping is on). Each step also
// states its contract: the IR properties (pass_properties.h) it requires, produces and breaks,
// checked after every step in debug builds and in the C++ test build.
#include "passes/pipeline.h"

#include <algorithm>
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

#if !defined(NDEBUG) || defined(PYPTO_CHECK_PASS_PROPERTIES)
constexpr bool kCheckProperties = true;
#else
constexpr bool kCheckProperties = false;
#endif

template <class F>
double Timed(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

enum class Level : uint8_t { Tensor, Tile, Block, Exec };  // the IR a step leaves, for its dump

struct Step {
  PassProperties props;
  Level level;
  bool snapshot;                                // kept with options.keep_snapshots (verify_passes)
  void (*run)(CompiledProgram&, PassContext&);  // null: the graph as recorded
};

using P = IRProperty;

const std::vector<Step>& Steps() {
  static const std::vector<Step> steps = {
      // The graph as recorded from the user's program.
      {{"tensor_graph", {}, {}, {}}, Level::Tensor, false, nullptr},
      // Check every op's type with the registry: graphs from any frontend are consistent after it.
      {{"infer_shapes", {}, {P::ShapesInferred}, {}},
       Level::Tensor,
       false,
       [](CompiledProgram& p, PassContext& c) { InferShapes(p.tensor_graph, c); }},
      // Tensor ops -> tile ops with the user's tile shapes; needs inferred shapes for the tails.
      {{"expand_tiles", {P::ShapesInferred}, {P::TilesExpanded}, {}},
       Level::Tile,
       false,
       [](CompiledProgram& p, PassContext& c) { p.tile_graph = ExpandTiles(p.tensor_graph, c); }},
      // Tile ops -> kernels; decides which values stay in UB and which go to global memory.
      {{"partition", {P::TilesExpanded}, {P::KernelsPartitioned}, {}},
       Level::Block,
       true,
       [](CompiledProgram& p, PassContext& c) { p.block_graph = Partition(p.tile_graph, c); }},
      // Cheaper instruction sequences inside kernels; before AllocateBuffers, as it adds and
      // removes tile buffers (so it breaks an allocation).
      {{"fuse_instructions", {P::KernelsPartitioned}, {}, {P::BuffersAllocated}},
       Level::Block,
       true,
       [](CompiledProgram& p, PassContext& c) { FuseInstructions(p.block_graph, c); }},
      // UB offsets: must follow Partition, which fixes the buffers each kernel needs.
      {{"allocate_buffers", {P::KernelsPartitioned}, {P::BuffersAllocated}, {}},
       Level::Block,
       false,
       [](CompiledProgram& p, PassContext& c) { AllocateBuffers(p.block_graph, c); }},
      // Task groups and their dependencies for the runtime, which runs the kernels it copies:
      // they must have their buffers.
      {{"build_exec_graph", {P::KernelsPartitioned, P::BuffersAllocated}, {P::ExecGraphBuilt}, {}},
       Level::Exec,
       false,
       [](CompiledProgram& p, PassContext& c) { p.exec_graph = BuildExecGraph(p.block_graph, c); }},
  };
  return steps;
}

size_t StepIndex(const std::string& name) {
  const auto& steps = Steps();
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].props.name == name) return i;
  throw InternalError("no pipeline step '" + name + "'");
}

void DumpLevel(PassContext& ctx, const Step& s, const CompiledProgram& p, double ms) {
  const std::string& name = s.props.name;
  switch (s.level) {
    case Level::Tensor:
      return ctx.Dump(name, PrintTensorGraph(p.tensor_graph), ms, [&] { return TensorGraphJson(p.tensor_graph); });
    case Level::Tile:
      return ctx.Dump(name, PrintTileGraph(p.tile_graph), ms, [&] { return TileGraphJson(p.tile_graph); });
    case Level::Block:
      return ctx.Dump(name, PrintBlockGraph(p.block_graph), ms, [&] { return BlockGraphJson(p.block_graph); });
    case Level::Exec:
      return ctx.Dump(name, PrintExecGraph(p.exec_graph), ms, [&] { return ExecGraphJson(p.exec_graph); });
  }
}

void CheckAfter(size_t step, const CompiledProgram& p, const MachineModel& m) {
  const auto& steps = Steps();
  std::vector<IRProperty> holds;
  auto has = [&](IRProperty x) { return std::find(holds.begin(), holds.end(), x) != holds.end(); };
  for (size_t i = 0; i <= step; ++i) {
    const PassProperties& s = steps[i].props;
    for (IRProperty x : s.required)
      if (!has(x))
        throw InternalError("pass " + s.name + " requires property " + IRPropertyName(x) +
                            ", which no earlier pass produces");
    for (IRProperty x : s.invalidated) holds.erase(std::remove(holds.begin(), holds.end(), x), holds.end());
    for (IRProperty x : s.produced)
      if (!has(x)) holds.push_back(x);
  }
  for (IRProperty x : holds) CheckProperty(x, p, m, steps[step].props.name);
}

}  // namespace

CompiledProgram CompileThrough(Function fn, const CompileOptions& opts, const std::string& last) {
  const auto& steps = Steps();
  const size_t end = StepIndex(last);
  PassContext ctx(opts);
  CompiledProgram p;
  p.options = opts;
  p.tensor_graph = std::move(fn);
  for (size_t i = 0; i <= end; ++i) {
    const Step& s = steps[i];
    double ms = s.run ? Timed([&] { s.run(p, ctx); }) : 0;
    DumpLevel(ctx, s, p, ms);
    if (s.snapshot && opts.keep_snapshots) p.snapshots.push_back({s.props.name, p.block_graph});
    if constexpr (kCheckProperties) CheckAfter(i, p, ctx.machine());
  }
  p.dumps = ctx.dumps();
  p.pass_ms = ctx.timings();
  return p;
}

CompiledProgram Compile(Function fn, const CompileOptions& opts) {
  return CompileThrough(std::move(fn), opts, Steps().back().props.name);
}

const std::vector<std::string>& PipelineStepNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Step& s : Steps()) n.push_back(s.props.name);
    return n;
  }();
  return names;
}

const std::vector<PassProperties>& PipelineProperties() {
  static const std::vector<PassProperties> props = [] {
    std::vector<PassProperties> v;
    for (const Step& s : Steps()) v.push_back(s.props);
    return v;
  }();
  return props;
}

void CheckPropertiesAfter(const std::string& step, const CompiledProgram& p, const MachineModel& m) {
  CheckAfter(StepIndex(step), p, m);
}

bool PipelineChecksProperties() { return kCheckProperties; }

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
