// BuildKernelBody (Partition's second half) alone, on tile ops of expand_tiles' output: the
// loads, instructions and stores of one kernel, the loop of a split reduction, the cube's L1 /
// L0 steps, and the valid extents of tail tiles.
#include "pass_test_util.h"
#include "passes/kernel_body.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

struct Tiles {
  TileGraph g;
  std::vector<const TileOp*> ops;
};

Tiles Expanded(Function fn) {
  Tiles t;
  t.g = Through(std::move(fn), "expand_tiles").tile_graph;
  t.g.body.ForEach([&](const TileOp& op) { t.ops.push_back(&op); });
  return t;
}

// Marks the values with these names as read by another kernel (Partition's job).
void Materialize(Function& fn, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (Value& v : fn.values)
      if (v.name == n) v.materialized = true;
}

std::vector<std::string> BufText(const Kernel& k) {
  std::vector<std::string> v;
  for (const TileBuf& b : k.bufs)
    v.push_back(b.name + ":" + MemSpaceName(b.space) + IntList(b.shape, "[", "]") + ShapeStr(b.valid));
  return v;
}

}  // namespace

TEST(KernelBodyPass, ElementwiseOpsLoadComputeAndStore) {
  Tiles t = Expanded(Chain());
  Kernel k = BuildKernelBody(t.g.fn, 3, t.ops, "why");
  EXPECT_EQ(k.id, 3);
  EXPECT_EQ(k.name, "k3_add_exp_mul_scalar_assemble");
  EXPECT_EQ(k.reason, "why");
  EXPECT_EQ(k.core, CoreKind::AIV);
  EXPECT_EQ(ShapeStr(k.grid), "(2, 1)");
  EXPECT_EQ(k.tile_ops, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Opcodes(k.body), "TLOAD TLOAD TADD TEXP TMULS TSTORE");
  EXPECT_EQ(BufText(k), (std::vector<std::string>{"x:Vec[8, 64](8, 64)", "y:Vec[8, 64](8, 64)", "t0:Vec[8, 64](8, 64)",
                                                  "t1:Vec[8, 64](8, 64)", "t2:Vec[8, 64](8, 64)"}));
  const Instr& load = k.body[0];
  EXPECT_EQ(ShapeStr(load.coord), "((8*$c0), (64*$c1))");
  EXPECT_EQ(k.body[4].scalar, 2.0);
  // The store writes the assemble's window of out.
  const Instr& store = k.body.back();
  EXPECT_EQ(t.g.fn.value(k.params[store.param].value).name, "out_win3");
  EXPECT_TRUE(k.params[store.param].write);
}

// Only a value another kernel reads is stored; an intermediate stays in UB.
TEST(KernelBodyPass, AValueLeavingTheKernelIsStored) {
  Tiles t = Expanded(Chain());
  std::vector<const TileOp*> add = {t.ops[0]};
  EXPECT_EQ(Opcodes(BuildKernelBody(t.g.fn, 0, add, "").body), "TLOAD TLOAD TADD");
  Materialize(t.g.fn, {"t0"});
  Kernel k = BuildKernelBody(t.g.fn, 0, add, "");
  EXPECT_EQ(Opcodes(k.body), "TLOAD TLOAD TADD TSTORE");
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(t.g.fn.value(k.params[2].value).name, "t0");
  EXPECT_TRUE(k.params[2].write && !k.params[2].read);
}

// amax over 4 tiles: the first tile peeled, then a loop of load, reduce and combine.
TEST(KernelBodyPass, ASplitReductionLoopsOverItsTiles) {
  Tiles t = Expanded(Softmax(64, 16));
  Materialize(t.g.fn, {"t0"});
  Kernel k = BuildKernelBody(t.g.fn, 0, {t.ops[0]}, "first");
  EXPECT_EQ(Opcodes(k.body), "TLOAD TROWMAX LOOP{TLOAD TROWMAX TMAX} TSTORE");
  EXPECT_EQ(ShapeStr(k.grid), "(2, 1)");  // the reduced axis leaves the grid
  EXPECT_EQ(k.reason, "first; reduces across 4 tiles along axis 1 in a loop");
  const Instr& loop = k.body[2];
  EXPECT_EQ(loop.var, "$r");
  EXPECT_EQ(loop.trip.str(), "3");
  EXPECT_EQ(ShapeStr(k.body[0].coord), "((8*$c0), 0)");
  EXPECT_EQ(ShapeStr(loop.body[0].coord), "((8*$c0), (16*$r + 16))");
  // The combine accumulates into the peeled tile's result, which is what is stored.
  const Instr& combine = loop.body[2];
  EXPECT_EQ(combine.dst, k.body[1].dst);
  EXPECT_EQ(combine.srcs, (std::vector<int>{k.body[1].dst, loop.body[1].dst}));
  EXPECT_EQ(k.body[3].srcs, (std::vector<int>{k.body[1].dst}));
}

// One tile per row: the row result and the broadcast forms, no loop.
TEST(KernelBodyPass, RowReductionsAndRowBroadcasts) {
  Tiles t = Expanded(Softmax());
  Kernel k = BuildKernelBody(t.g.fn, 0, t.ops, "");
  EXPECT_EQ(Opcodes(k.body), "TLOAD TROWMAX TROWEXPANDSUB TEXP TROWSUM TROWEXPANDDIV TSTORE");
  const Instr& sub = k.body[2];
  EXPECT_EQ(sub.srcs, (std::vector<int>{k.body[0].dst, k.body[1].dst}));  // x, its row max
  EXPECT_EQ(k.bufs[k.body[1].dst].shape, (std::vector<int64_t>{8, 1}));
}

// A matmul and the store of its result: zero the accumulator, step K through L1 and L0.
TEST(KernelBodyPass, AMatmulStepsThroughL1AndL0) {
  Tiles t = Expanded(MatmulRelu(false));
  Kernel k = BuildKernelBody(t.g.fn, 0, t.ops, "");
  EXPECT_EQ(k.core, CoreKind::AIC);
  EXPECT_EQ(Opcodes(k.body), "TEXPANDS LOOP{TLOAD TLOAD LOOP{TEXTRACT TEXTRACT TMATMUL_ACC}} TSTORE");
  EXPECT_EQ(BufText(k), (std::vector<std::string>{"t0_acc:Acc[32, 48](32, 48)", "a_l1:Mat[32, 32](32, 32)",
                                                  "b_l1:Mat[32, 48](32, 48)", "a_l0:Left[32, 16](32, 16)",
                                                  "b_l0:Right[16, 48](16, 48)"}));
  EXPECT_EQ(k.body[1].trip.str(), "1");          // K = 32 in one L1 step of 32
  EXPECT_EQ(k.body[1].body[2].trip.str(), "2");  // two L0 steps of 16
  EXPECT_EQ(k.l0_blocks_m, 1);
  EXPECT_EQ(k.l0_blocks_n, 3);  // n0 = 16 in an n1 = 48 block
}

// 100 columns in tiles of 32: the last tile's valid extent is the rest.
TEST(KernelBodyPass, TailTilesHaveValidExtents) {
  Recorder r("tail");
  int x = r.AddParam("x", {16, 100}, DataType::FP32, false);
  r.SetVecTileShapes({8, 32});
  r.Return({r.Unary("exp", x)});
  Tiles t = Expanded(r.Finish());
  Kernel k = BuildKernelBody(t.g.fn, 0, t.ops, "");
  EXPECT_EQ(ShapeStr(k.grid), "(2, 4)");
  EXPECT_EQ(k.bufs[0].shape, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(ShapeStr(k.bufs[0].valid), "(8, min((-32*$c1 + 100), 32))");
}
