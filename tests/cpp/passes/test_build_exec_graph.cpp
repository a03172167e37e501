// BuildExecGraph alone, on the output of allocate_buffers: one task group per launch with what
// it reads and writes, its dependencies on earlier launches of its region, which of them are
// point-wise, and the per-point windows the runtime compares across iterations.
#include "pass_test_util.h"
#include "passes/build_exec_graph.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

ExecGraph Build(Function fn) {
  BlockGraph g = Through(std::move(fn), "allocate_buffers").block_graph;
  PassContext ctx(CompileOptions{});
  return BuildExecGraph(g, ctx);
}

std::vector<const LaunchNode*> Nodes(const ExecGraph& g) {
  std::vector<const LaunchNode*> v;
  g.body.ForEach([&](const LaunchNode& n) { v.push_back(&n); });
  return v;
}

std::string Names(const ExecGraph& g, const std::vector<int>& values) {
  std::string s;
  for (int v : values) s += (s.empty() ? "" : " ") + g.fn.value(v).name;
  return s;
}

}  // namespace

// The vector kernel reads the matmul's result at its own block: point p waits for point p, and
// the workspace needs one buffer.
TEST(BuildExecGraphPass, AVectorKernelAfterAMatmulIsPointwise) {
  EXPECT_EQ(PrintExecGraph(Build(MatmulRelu())),
            "execution_graph @mm {\n"
            "  task_group#0 k0_matmul on AIC x grid(2, 1) reads(%a, %b) writes(%t0)\n"
            "  task_group#1 k1_relu_assemble on AIV x grid(2, 1) reads(%t0) writes(%out_win2) after(#0) "
            "pointwise(#0)\n"
            "  # one buffer (consumed point-wise): %t0; other workspaces alternate between two\n"
            "}\n");
}

TEST(BuildExecGraphPass, OneKernelHasNoDependencies) {
  ExecGraph g = Build(Chain());
  auto nodes = Nodes(g);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(g.num_launches, 1);
  EXPECT_EQ(Names(g, nodes[0]->reads), "x y");
  EXPECT_EQ(Names(g, nodes[0]->writes), "out_win3");
  EXPECT_TRUE(nodes[0]->deps.empty());
  EXPECT_TRUE(g.single_buffer.empty());
}

// Kernels on other grids depend on each other but not point-wise.
TEST(BuildExecGraphPass, SplitSoftmaxDependencies) {
  ExecGraph g = Build(Softmax(64, 16));
  auto nodes = Nodes(g);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(g.num_launches, 4);
  std::vector<std::vector<int>> deps, pointwise;
  for (auto* n : nodes) {
    deps.push_back(n->deps);
    pointwise.push_back(n->pointwise_after);
  }
  EXPECT_EQ(deps, (std::vector<std::vector<int>>{{}, {0}, {1}, {1, 2}}));
  EXPECT_EQ(pointwise, (std::vector<std::vector<int>>{{}, {}, {}, {1}}));
  EXPECT_EQ(nodes[1]->pointwise_reason, "#0: grids (2, 1) and (2, 4) differ");
  EXPECT_EQ(nodes[3]->pointwise_reason, "#2: grids (2, 1) and (2, 4) differ");
  EXPECT_EQ(Names(g, nodes[3]->reads), "t2 t3");
  EXPECT_EQ(g.single_buffer, std::set<int>{});  // t2 is also read by the sum, not point-wise
}

// Kernels that only read x in common are unordered; a write after a read is ordered. (Each
// kernel has its own tile grid, so none fuse.)
TEST(BuildExecGraphPass, OnlyConflictingAccessesAreOrdered) {
  Recorder r("conflicts");
  int x = r.AddParam("x", {16, 64}, DataType::FP32, false);
  int y = r.AddParam("y", {16, 64}, DataType::FP32, true);
  int out = r.CreateTensor({16, 64}, DataType::FP32, "out");
  int out2 = r.CreateTensor({16, 64}, DataType::FP32, "out2");
  r.SetVecTileShapes({8, 64});
  r.Assemble(r.Binary("add", x, y), {0, 0}, out);  // #0 reads x and y
  r.SetVecTileShapes({4, 64});
  r.Assemble(r.Unary("abs", x), {0, 0}, out2);  // #1 reads x
  r.SetVecTileShapes({2, 64});
  r.Assemble(r.Unary("neg", x), {0, 0}, y);  // #2 reads x, writes y
  r.Return({out, out2});
  ExecGraph g = Build(r.Finish());
  auto nodes = Nodes(g);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_TRUE(nodes[1]->deps.empty());
  EXPECT_EQ(Names(g, nodes[2]->writes), "y_win5");
  EXPECT_EQ(nodes[2]->deps, (std::vector<int>{0}));  // y is read by #0 before #2 overwrites it
  EXPECT_TRUE(nodes[2]->pointwise_after.empty());    // other grids
}

TEST(BuildExecGraphPass, ALoopIsOneNodePerLaunchWithWindowsAtItsIndex) {
  ExecGraph g = Build(RowLoop());
  ASSERT_EQ(g.body.entries.size(), 1u);
  ASSERT_TRUE(g.body.entries[0].loop);
  const auto& body = g.body.entries[0].loop->body->entries;
  ASSERT_EQ(body.size(), 1u);
  EXPECT_EQ(g.num_launches, 1);
  // Per point (grid (1, 1): the point is fixed), x is read at row i and out written at row i.
  const auto& acc = g.point_access.at(0);
  ASSERT_EQ(acc.size(), 2u);
  EXPECT_EQ(g.fn.value(acc[0].root).name, "x");
  EXPECT_FALSE(acc[0].write);
  EXPECT_EQ(acc[0].keys, (std::vector<std::string>{"i;1;0;32;"}));
  EXPECT_EQ(g.fn.value(acc[1].root).name, "out");
  EXPECT_TRUE(acc[1].write);
  EXPECT_EQ(acc[1].other_vars, (std::vector<std::string>{"i"}));
}

// A launch after a loop depends on the launch before it, but a loop between them is no run.
TEST(BuildExecGraphPass, ALoopBetweenLaunchesIsNotPointwise) {
  Recorder r("between");
  int x = r.AddParam("x", {8, 32}, DataType::FP32, false);
  int z = r.AddParam("z", {8, 32}, DataType::FP32, true);
  int out = r.CreateTensor({8, 32}, DataType::FP32, "out");
  r.SetVecTileShapes({8, 32});
  r.Assemble(r.Unary("exp", x), {0, 0}, out);
  r.BeginLoop("i", "L0", 0, 2, 1);
  r.Assemble(r.Unary("abs", x), {0, 0}, z);
  r.EndLoop();
  r.Assemble(r.Unary("neg", r.View(out, {0, 0}, {8, 32})), {0, 0}, z);
  r.Return({out});
  ExecGraph g = Build(r.Finish());
  auto nodes = Nodes(g);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[2]->deps, (std::vector<int>{0}));
  EXPECT_TRUE(nodes[2]->pointwise_after.empty());
  EXPECT_EQ(nodes[2]->pointwise_reason, "a loop comes between it and #0");
  EXPECT_TRUE(nodes[1]->deps.empty());  // in the loop's own region
}

TEST(BuildExecGraphPass, BranchLaunchesStayInTheirRegions) {
  ExecGraph g = Build(Branch());
  const auto& paths = g.body.entries.at(0).loop->body->entries;
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0].loop->info.name, "IF_0");
  EXPECT_EQ(paths[0].loop->body->entries.at(0).item->kernel, 0);
  EXPECT_EQ(paths[1].loop->info.name, "ELSE_0");
  EXPECT_EQ(paths[1].loop->body->entries.at(0).item->kernel, 1);
  for (auto* n : Nodes(g)) EXPECT_TRUE(n->deps.empty());
  EXPECT_EQ(g.num_launches, 2);
}

TEST(BuildExecGraphPass, KernelsAreCopiedWithTheirBuffers) {
  BlockGraph b = Through(Softmax(), "allocate_buffers").block_graph;
  PassContext ctx(CompileOptions{});
  ExecGraph g = BuildExecGraph(b, ctx);
  ASSERT_EQ(g.kernels.size(), 1u);
  EXPECT_EQ(PrintKernel(g.fn, g.kernels[0]), PrintKernel(b.fn, b.kernels[0]));
  EXPECT_EQ(g.point_access.size(), 1u);
}

TEST(BuildExecGraphPass, ProducesExecGraphBuilt) {
  PassContext ctx(CompileOptions{});
  auto built = [&] {  // a fresh graph each time: copies of a region share its nodes
    CompiledProgram p = Through(MatmulRelu(), "allocate_buffers");
    p.exec_graph = BuildExecGraph(p.block_graph, ctx);
    return p;
  };
  EXPECT_NO_THROW(CheckProperty(IRProperty::ExecGraphBuilt, built(), ctx.machine(), "build_exec_graph"));
  auto error = [&](const CompiledProgram& q) {
    try {
      CheckProperty(IRProperty::ExecGraphBuilt, q, ctx.machine(), "build_exec_graph");
    } catch (const InternalError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CompiledProgram bad_kernel = built();
  bad_kernel.exec_graph.body.entries[0].item->kernel = 5;
  EXPECT_NE(error(bad_kernel)
                .find("after pass build_exec_graph: property exec_graph_built does not hold: "
                      "task_group#0 names kernel 5 of 2"),
            std::string::npos)
      << error(bad_kernel);
  CompiledProgram bad_dep = built();
  bad_dep.exec_graph.body.entries[0].item->deps = {1};  // #0 after #1, which comes later
  EXPECT_NE(error(bad_dep).find("task_group#0 depends on #1, not earlier in its region"), std::string::npos)
      << error(bad_dep);
}
