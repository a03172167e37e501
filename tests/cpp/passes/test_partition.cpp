// Partition alone, on the output of expand_tiles: which tile ops share a kernel (and why a new
// one starts), which values become workspaces, and the launch structure per region.
#include "pass_test_util.h"
#include "passes/partition.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

struct Parted {
  TileGraph tiles;
  BlockGraph blocks;
};

Parted Part(Function fn) {
  Parted p;
  p.tiles = Through(std::move(fn), "expand_tiles").tile_graph;
  PassContext ctx(CompileOptions{});
  p.blocks = Partition(p.tiles, ctx);
  return p;
}

// The names of the values Partition moved to global memory, in id order.
std::vector<std::string> Workspaces(const BlockGraph& g) {
  std::vector<std::string> v;
  for (const Value& x : g.fn.values)
    if (x.materialized) v.push_back(x.name);
  return v;
}

std::vector<std::string> Reasons(const BlockGraph& g) {
  std::vector<std::string> v;
  for (const Kernel& k : g.kernels) v.push_back(k.reason);
  return v;
}

}  // namespace

TEST(PartitionPass, AnElementwiseChainIsOneKernel) {
  EXPECT_EQ(PrintBlockGraph(Part(Chain()).blocks),
            "block_graph @chain {\n"
            "kernel k0_add_exp_mul_scalar_assemble [AIV] grid=(2, 1) ub=0B {\n"
            "  # new kernel at add#0: first op of the region\n"
            "  param0 r %x: fp32(16, 64)\n"
            "  param1 r %y: fp32(16, 64)\n"
            "  param2 w %out_win3: fp32(16, 64) = %out(0, 0)\n"
            "  tile %x#0: Vec fp32[8, 64] valid=(8, 64)\n"
            "  tile %y#1: Vec fp32[8, 64] valid=(8, 64)\n"
            "  tile %t0#2: Vec fp32[8, 64] valid=(8, 64)\n"
            "  tile %t1#3: Vec fp32[8, 64] valid=(8, 64)\n"
            "  tile %t2#4: Vec fp32[8, 64] valid=(8, 64)\n"
            "  %x#0 = TLOAD(param0((8*$c0), (64*$c1)))\n"
            "  %y#1 = TLOAD(param1((8*$c0), (64*$c1)))\n"
            "  %t0#2 = TADD(%x#0, %y#1)\n"
            "  %t1#3 = TEXP(%t0#2)\n"
            "  %t2#4 = TMULS(%t1#3, 2)\n"
            "  TSTORE(%t2#4, param2((8*$c0), (64*$c1)))\n"
            "}\n"
            "program {\n"
            "  launch#0 k0_add_exp_mul_scalar_assemble\n"
            "}\n"
            "}\n");
}

// Row reductions of one tile per row fuse with their producers and consumers.
TEST(PartitionPass, SoftmaxOverOneTilePerRowIsOneKernel) {
  Parted p = Part(Softmax());
  EXPECT_EQ(KernelOps(p.blocks, p.tiles), (std::vector<std::string>{"amax sub exp sum div assemble"}));
  EXPECT_EQ(Workspaces(p.blocks), std::vector<std::string>{});
  EXPECT_EQ(Opcodes(p.blocks.kernels[0].body), "TLOAD TROWMAX TROWEXPANDSUB TEXP TROWSUM TROWEXPANDDIV TSTORE");
}

// A reduction over 4 tiles is a kernel of its own; its result and what crosses kernels go to
// global memory.
TEST(PartitionPass, SplitReductionsGetKernelsOfTheirOwn) {
  Parted p = Part(Softmax(64, 16));
  EXPECT_EQ(KernelOps(p.blocks, p.tiles), (std::vector<std::string>{"amax", "sub exp", "sum", "div assemble"}));
  EXPECT_EQ(Reasons(p.blocks),
            (std::vector<std::string>{
                "new kernel at amax#0: first op of the region; reduces across 4 tiles along axis 1 in a loop",
                "new kernel at sub#1: the previous kernel reduces across tiles",
                "new kernel at sum#3: reduction over axis 1 spans several tiles; reduces across 4 tiles along axis 1 "
                "in a loop",
                "new kernel at div#4: the previous kernel reduces across tiles"}));
  std::vector<std::string> grids;
  for (const Kernel& k : p.blocks.kernels) grids.push_back(ShapeStr(k.grid));
  EXPECT_EQ(grids, (std::vector<std::string>{"(2, 1)", "(2, 4)", "(2, 1)", "(2, 4)"}));
  EXPECT_EQ(Workspaces(p.blocks), (std::vector<std::string>{"t0", "t2", "t3"}));  // not t1: sub -> exp stay in UB
}

TEST(PartitionPass, AMatmulRunsOnTheCubeWithAtMostItsStore) {
  Parted relu = Part(MatmulRelu(true));
  EXPECT_EQ(KernelOps(relu.blocks, relu.tiles), (std::vector<std::string>{"matmul", "relu assemble"}));
  ASSERT_EQ(relu.blocks.kernels.size(), 2u);
  EXPECT_EQ(relu.blocks.kernels[0].core, CoreKind::AIC);
  EXPECT_EQ(relu.blocks.kernels[1].core, CoreKind::AIV);
  EXPECT_EQ(relu.blocks.kernels[1].reason,
            "new kernel at relu#1: the cube kernel holds only the matmul and the store of its result; relu runs on a "
            "vector core (AIV)");
  EXPECT_EQ(Workspaces(relu.blocks), (std::vector<std::string>{"t0"}));
  Parted store = Part(MatmulRelu(false));
  EXPECT_EQ(KernelOps(store.blocks, store.tiles), (std::vector<std::string>{"matmul assemble"}));
  EXPECT_EQ(store.blocks.kernels[0].core, CoreKind::AIC);
  EXPECT_EQ(Workspaces(store.blocks), std::vector<std::string>{});
}

TEST(PartitionPass, AnotherTileGridStartsANewKernel) {
  Recorder r("grids");
  int x = r.AddParam("x", {16, 64}, DataType::FP32, false);
  r.SetVecTileShapes({8, 64});
  int e = r.Unary("exp", x);
  r.SetVecTileShapes({4, 64});
  r.Return({r.Unary("abs", e)});
  Parted p = Part(r.Finish());
  EXPECT_EQ(KernelOps(p.blocks, p.tiles), (std::vector<std::string>{"exp", "abs assemble"}));
  EXPECT_EQ(p.blocks.kernels[1].reason, "new kernel at abs#1: its tile grid (4, 1) differs from the kernel's (2, 1)");
  EXPECT_EQ(Workspaces(p.blocks), (std::vector<std::string>{"t0"}));
}

// out[0:8] = x * 2, then out[8:16] = exp(out[0:8]): the read waits for the write in another
// kernel, and the write into out (at another window than the read) in a third.
TEST(PartitionPass, ReadingATensorTheKernelWritesStartsANewKernel) {
  Recorder r("raw");
  int x = r.AddParam("x", {8, 32}, DataType::FP32, false);
  int out = r.CreateTensor({16, 32}, DataType::FP32, "out");
  r.SetVecTileShapes({8, 32});
  r.Assemble(r.BinaryScalar("mul", x, 2.0), {0, 0}, out);
  r.Assemble(r.Unary("exp", r.View(out, {0, 0}, {8, 32})), {8, 0}, out);
  r.Return({out});
  Parted p = Part(r.Finish());
  EXPECT_EQ(KernelOps(p.blocks, p.tiles), (std::vector<std::string>{"mul_scalar assemble", "exp", "assemble"}));
  EXPECT_EQ(p.blocks.kernels[1].reason, "new kernel at exp#2: it reads %out, which the kernel writes");
  EXPECT_EQ(p.blocks.kernels[2].reason, "new kernel at assemble#3: it writes a tensor the kernel reads");
}

// y[:] = y * 2 + x reads and writes y at the same tile per grid point: one kernel.
TEST(PartitionPass, AnInPlaceUpdateStaysInOneKernel) {
  Recorder r("inplace");
  int x = r.AddParam("x", {16, 32}, DataType::FP32, false);
  int y = r.AddParam("y", {16, 32}, DataType::FP32, true);
  r.SetVecTileShapes({8, 32});
  r.Assemble(r.Binary("add", r.BinaryScalar("mul", y, 2.0), x), {0, 0}, y);
  Parted p = Part(r.Finish());
  EXPECT_EQ(KernelOps(p.blocks, p.tiles), (std::vector<std::string>{"mul_scalar add assemble"}));
}

TEST(PartitionPass, ALoopBodyIsARegionOfItsOwn) {
  Parted p = Part(RowLoop());
  ASSERT_EQ(p.blocks.kernels.size(), 1u);
  ASSERT_EQ(p.blocks.body.entries.size(), 1u);
  const LoopRegion<Launch>& l = *p.blocks.body.entries[0].loop;
  EXPECT_EQ(l.info.name, "L0");
  ASSERT_EQ(l.body->entries.size(), 1u);
  EXPECT_EQ(l.body->entries[0].item->kernel, 0);
  const Kernel& k = p.blocks.kernels[0];
  EXPECT_EQ(ShapeStr(k.grid), "(1, 1)");
  // The kernel addresses the rows through views at the loop index.
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_EQ(ShapeStr(p.blocks.fn.value(k.params[0].value).offsets), "(i, 0)");
  EXPECT_TRUE(k.params[0].read && !k.params[0].write);
  EXPECT_EQ(ShapeStr(p.blocks.fn.value(k.params[1].value).offsets), "(i, 0)");
  EXPECT_TRUE(k.params[1].write && !k.params[1].read);
}

// Each path of a branch is a region: its ops never join a kernel outside it.
TEST(PartitionPass, BranchPathsGetKernelsOfTheirOwn) {
  Parted p = Part(Branch());
  EXPECT_EQ(KernelOps(p.blocks, p.tiles), (std::vector<std::string>{"exp assemble", "mul_scalar assemble"}));
  auto& paths = p.blocks.body.entries.at(0).loop->body->entries;
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0].loop->info.name, "IF_0");
  EXPECT_EQ(paths[0].loop->body->entries.at(0).item->kernel, 0);
  EXPECT_EQ(paths[1].loop->info.name, "ELSE_0");
  EXPECT_EQ(paths[1].loop->body->entries.at(0).item->kernel, 1);
  for (const Kernel& k : p.blocks.kernels) EXPECT_NE(k.reason.find("first op of the region"), std::string::npos);
}

TEST(PartitionPass, ViewsAndAssemblesOfOneGridShareAKernel) {
  Parted p = Part(SwapHalves());
  EXPECT_EQ(KernelOps(p.blocks, p.tiles), (std::vector<std::string>{"add_scalar assemble assemble"}));
  EXPECT_EQ(Opcodes(p.blocks.kernels[0].body), "TLOAD TADDS TSTORE TLOAD TSTORE");
  EXPECT_EQ(p.blocks.kernels[0].params.size(), 4u);  // two views read, two windows written
}

TEST(PartitionPass, ProducesKernelsPartitioned) {
  CompiledProgram p = Through(Softmax(64, 16), "expand_tiles");
  PassContext ctx(CompileOptions{});
  p.block_graph = Partition(p.tile_graph, ctx);
  EXPECT_NO_THROW(CheckProperty(IRProperty::KernelsPartitioned, p, ctx.machine(), "partition"));
  p.block_graph.body.entries[1].item->kernel = 7;
  try {
    CheckProperty(IRProperty::KernelsPartitioned, p, ctx.machine(), "partition");
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "after pass partition: property kernels_partitioned does not hold: launch#1 names kernel 7 of 4"),
              std::string::npos)
        << e.what();
  }
}
