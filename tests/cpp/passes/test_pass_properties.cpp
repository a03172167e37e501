// The pipeline's property table (src/passes/pipeline.cpp): what each pass requires, produces and
// breaks, the checks run after each step, and CompileThrough, the seam the per-pass tests use.
#include <set>

#include "pass_test_util.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

std::string Names(const std::vector<IRProperty>& ps) {
  std::string s;
  for (IRProperty p : ps) s += (s.empty() ? "" : ", ") + std::string(IRPropertyName(p));
  return "{" + s + "}";
}

// The InternalError CheckPropertiesAfter(step) raises on `p`, or "no error".
std::string ErrorAfter(const std::string& step, const CompiledProgram& p) {
  try {
    CheckPropertiesAfter(step, p, GetMachine(p.options.machine));
  } catch (const InternalError& e) {
    return e.what();
  }
  return "no error";
}

std::vector<Function> Programs() {
  return {Chain(), Softmax(), Softmax(64, 16), MatmulRelu(true), MatmulRelu(false), RowLoop(), SwapHalves(), Branch()};
}

}  // namespace

TEST(PassProperties, TheTable) {
  std::vector<std::string> rows;
  for (const PassProperties& p : PipelineProperties())
    rows.push_back(p.name + ": requires " + Names(p.required) + " produces " + Names(p.produced) + " breaks " +
                   Names(p.invalidated));
  EXPECT_EQ(rows, (std::vector<std::string>{
                      "tensor_graph: requires {} produces {} breaks {}",
                      "infer_shapes: requires {} produces {shapes_inferred} breaks {}",
                      "expand_tiles: requires {shapes_inferred} produces {tiles_expanded} breaks {}",
                      "partition: requires {tiles_expanded} produces {kernels_partitioned} breaks {}",
                      "fuse_instructions: requires {kernels_partitioned} produces {} breaks {buffers_allocated}",
                      "allocate_buffers: requires {kernels_partitioned} produces {buffers_allocated} breaks {}",
                      "build_exec_graph: requires {kernels_partitioned, buffers_allocated} produces "
                      "{exec_graph_built} breaks {}",
                  }));
  std::vector<std::string> names;
  for (const PassProperties& p : PipelineProperties()) names.push_back(p.name);
  EXPECT_EQ(names, PipelineStepNames());
}

// Each pass finds what it requires: produced by an earlier pass, not broken since.
TEST(PassProperties, EveryRequirementIsProducedEarlier) {
  std::set<IRProperty> holds;
  for (const PassProperties& p : PipelineProperties()) {
    for (IRProperty r : p.required) EXPECT_TRUE(holds.count(r)) << p.name << " requires " << IRPropertyName(r);
    for (IRProperty x : p.invalidated) holds.erase(x);
    holds.insert(p.produced.begin(), p.produced.end());
  }
  EXPECT_EQ(holds.size(), 5u);  // all of them hold at the end
}

TEST(PassProperties, CompileChecksThemInTheTestBuild) { EXPECT_TRUE(PipelineChecksProperties()); }

// Every sample program has every property that should hold after every step (Compile checks
// them too here; this also runs where the build does not).
TEST(PassProperties, EveryProgramHasThemAfterEveryStep) {
  for (const std::string& step : PipelineStepNames())
    for (Function& fn : Programs()) {
      CompiledProgram p = CompileThrough(fn, {}, step);
      EXPECT_EQ(ErrorAfter(step, p), "no error") << step << " @" << fn.name;
    }
}

// The tile graph is checked after every later step too: a broken tile op is found after
// partition, naming that step.
TEST(PassProperties, APropertyIsCheckedAsLongAsItHolds) {
  CompiledProgram p = Through(Chain(), "partition");
  p.tile_graph.body.entries[1].item->tile_reason.clear();
  EXPECT_NE(ErrorAfter("partition", p)
                .find("after pass partition: property tiles_expanded does not hold: tile_op#1 "
                      "does not say why its tile was chosen"),
            std::string::npos)
      << ErrorAfter("partition", p);
  EXPECT_EQ(ErrorAfter("infer_shapes", p), "no error");  // not yet a property there
}

// Buffers are allocated only after allocate_buffers; fuse_instructions would break them.
TEST(PassProperties, FuseInstructionsComesBeforeAllocation) {
  CompiledProgram p = Through(Softmax(), "fuse_instructions");
  EXPECT_EQ(ErrorAfter("fuse_instructions", p), "no error");
  EXPECT_NE(ErrorAfter("allocate_buffers", p)
                .find("after pass allocate_buffers: property buffers_allocated does not "
                      "hold: buffer %x#0 of kernel k0_amax_sub_exp_sum_div_assemble is "
                      "at offset -1"),
            std::string::npos)
      << ErrorAfter("allocate_buffers", p);
}

TEST(PassProperties, KernelsPartitionedViolations) {
  {
    CompiledProgram p = Through(Chain(), "partition");  // a tile op no kernel runs
    p.block_graph.kernels[0].tile_ops.pop_back();
    EXPECT_NE(ErrorAfter("partition", p).find("tile_op#3 (assemble) runs in no kernel"), std::string::npos)
        << ErrorAfter("partition", p);
  }
  {
    CompiledProgram p = Through(Softmax(64, 16), "partition");  // one tile op in two kernels
    p.block_graph.kernels[1].tile_ops.push_back(0);
    EXPECT_NE(ErrorAfter("partition", p).find("tile_op#0 runs in kernels 0 and 1"), std::string::npos)
        << ErrorAfter("partition", p);
  }
  {
    CompiledProgram p = Through(Chain(), "partition");  // an instruction on a buffer it does not have
    p.block_graph.kernels[0].body[2].srcs[1] = 9;
    EXPECT_NE(ErrorAfter("partition", p)
                  .find("an instruction of kernel k0_add_exp_mul_scalar_assemble reads buffer 9 "
                        "of 5"),
              std::string::npos)
        << ErrorAfter("partition", p);
  }
  {
    CompiledProgram p = Through(RowLoop(), "partition");  // a kernel launched twice
    p.block_graph.body.entries[0].loop->body->Add(Launch{1, 0});
    EXPECT_NE(ErrorAfter("partition", p).find("kernel k0_mul_scalar_add_scalar_assemble is launched 2 times"),
              std::string::npos)
        << ErrorAfter("partition", p);
  }
}

TEST(PassProperties, AllocationViolations) {
  CompiledProgram p = Through(MatmulRelu(false), "allocate_buffers");
  Kernel& k = p.block_graph.kernels[0];
  EXPECT_EQ(ErrorAfter("allocate_buffers", p), "no error");
  k.bufs[1].offset += 8;  // a_l1, off the 64-byte alignment
  EXPECT_NE(ErrorAfter("allocate_buffers", p).find("buffer %a_l1#1 of kernel k0_matmul_assemble is at offset 6152"),
            std::string::npos)
      << ErrorAfter("allocate_buffers", p);
  k.bufs[1].offset -= 8;
  k.bufs[3].offset = 0;  // a_l0 (Left) inside the Mat space
  EXPECT_NE(ErrorAfter("allocate_buffers", p).find("memory spaces Mat and Left of kernel k0_matmul_assemble overlap"),
            std::string::npos)
      << ErrorAfter("allocate_buffers", p);
}

TEST(PassProperties, ExecGraphViolations) {
  CompiledProgram p = Through(Softmax(64, 16), "build_exec_graph");
  EXPECT_EQ(ErrorAfter("build_exec_graph", p), "no error");
  p.exec_graph.body.entries[1].item->pointwise_after = {0};  // #1 depends on #0, but not point-wise
  p.exec_graph.body.entries[2].item->pointwise_after = {0};  // #2 does not depend on #0
  EXPECT_NE(ErrorAfter("build_exec_graph", p).find("task_group#2 is point-wise after #0 without depending on it"),
            std::string::npos)
      << ErrorAfter("build_exec_graph", p);
  p.exec_graph.num_launches = 5;
  p.exec_graph.body.entries[2].item->pointwise_after.clear();
  EXPECT_NE(ErrorAfter("build_exec_graph", p).find("4 task groups, 5 counted, 4 launches in the block graph"),
            std::string::npos)
      << ErrorAfter("build_exec_graph", p);
}

// CompileThrough(step) is Compile stopped there: the same dumps up to the step.
TEST(PassProperties, CompileThroughIsCompileStoppedAtAStep) {
  CompiledProgram all = Compile(Softmax(64, 16), {});
  const auto& steps = PipelineStepNames();
  for (size_t i = 0; i < steps.size(); ++i) {
    CompiledProgram part = CompileThrough(Softmax(64, 16), {}, steps[i]);
    ASSERT_EQ(part.dumps.size(), i + 1) << steps[i];
    for (size_t j = 0; j <= i; ++j) EXPECT_EQ(part.dumps[j], all.dumps[j]) << steps[i];
  }
  try {
    CompileThrough(Chain(), {}, "no_such_pass");
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("no pipeline step 'no_such_pass'"), std::string::npos) << e.what();
  }
}

// With keep_snapshots the block graphs after partition and fuse_instructions are kept, as before.
TEST(PassProperties, SnapshotsAreTheBlockGraphsAfterTheirSteps) {
  CompileOptions o;
  o.keep_snapshots = true;
  CompiledProgram p = Compile(Softmax(), o);
  ASSERT_EQ(p.snapshots.size(), 2u);
  EXPECT_EQ(p.snapshots[0].first, "partition");
  EXPECT_EQ(p.snapshots[1].first, "fuse_instructions");
  EXPECT_EQ(PrintBlockGraph(p.snapshots[0].second), p.dumps[3].second);
  EXPECT_EQ(PrintBlockGraph(p.snapshots[1].second), p.dumps[4].second);
}
