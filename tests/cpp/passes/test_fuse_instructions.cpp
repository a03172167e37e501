// FuseInstructions alone, on the output of partition: the peepholes it applies (sub + exp into
// one instruction, stores sunk below row reductions, division by a reciprocal when asked) and
// the kernels it must leave alone.
#include "pass_test_util.h"
#include "passes/fuse_instructions.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

BlockGraph Partitioned(Function fn) { return Through(std::move(fn), "partition").block_graph; }

BlockGraph Fuse(BlockGraph g, bool reciprocal_division = false) {
  CompileOptions o;
  o.reciprocal_division = reciprocal_division;
  PassContext ctx(o);
  FuseInstructions(g, ctx);
  return g;
}

// x - amax(x, dim) then exp, over fp32 [16, 64] with the whole reduced dim in one tile.
Function SubExp(int64_t dim, bool keep_sub) {
  Recorder r("subexp");
  int x = r.AddParam("x", {16, 64}, DataType::FP32, false);
  r.SetVecTileShapes({16, 64});
  int d = r.Binary("sub", x, r.Reduce("amax", x, dim, true));
  int e = r.Unary("exp", d);
  r.Return(keep_sub ? std::vector<int>{e, r.Unary("abs", d)} : std::vector<int>{e});
  return r.Finish();
}

}  // namespace

TEST(FuseInstructionsPass, SubThenExpBecomesOneInstruction) {
  BlockGraph before = Partitioned(Softmax());
  EXPECT_EQ(Opcodes(before.kernels[0].body), "TLOAD TROWMAX TROWEXPANDSUB TEXP TROWSUM TROWEXPANDDIV TSTORE");
  BlockGraph after = Fuse(before);
  EXPECT_EQ(PrintBlockGraph(after),
            "block_graph @softmax {\n"
            "kernel k0_amax_sub_exp_sum_div_assemble [AIV] grid=(2, 1) ub=0B {\n"
            "  # new kernel at amax#0: first op of the region\n"
            "  param0 r %x: fp32(16, 64)\n"
            "  param1 w %out_win5: fp32(16, 64) = %out(0, 0)\n"
            "  tile %x#0: Vec fp32[8, 64] valid=(8, 64)\n"
            "  tile %t0#1: Vec fp32[8, 1] valid=(8, 1)\n"
            "  tile %t1#2: Vec fp32[8, 64] valid=(8, 64)\n"
            "  tile %t2#3: Vec fp32[8, 64] valid=(8, 64)\n"
            "  tile %t3#4: Vec fp32[8, 1] valid=(8, 1)\n"
            "  tile %t4#5: Vec fp32[8, 64] valid=(8, 64)\n"
            "  %x#0 = TLOAD(param0((8*$c0), (64*$c1)))\n"
            "  %t0#1 = TROWMAX(%x#0)\n"
            "  %t2#3 = TROWEXPANDEXPDIF(%x#0, %t0#1)\n"
            "  %t3#4 = TROWSUM(%t2#3)\n"
            "  %t4#5 = TROWEXPANDDIV(%t2#3, %t3#4)\n"
            "  TSTORE(%t4#5, param1((8*$c0), (64*$c1)))\n"
            "}\n"
            "program {\n"
            "  launch#0 k0_amax_sub_exp_sum_div_assemble\n"
            "}\n"
            "}\n");
}

TEST(FuseInstructionsPass, AColumnBroadcastFusesToo) {
  BlockGraph before = Partitioned(SubExp(0, false));
  EXPECT_EQ(Opcodes(before.kernels[0].body), "TLOAD TCOLMAX TCOLEXPANDSUB TEXP TSTORE");
  EXPECT_EQ(Opcodes(Fuse(before).kernels[0].body), "TLOAD TCOLMAX TCOLEXPANDEXPDIF TSTORE");
  EXPECT_EQ(Opcodes(Fuse(Partitioned(SubExp(1, false))).kernels[0].body), "TLOAD TROWMAX TROWEXPANDEXPDIF TSTORE");
}

// The difference is read again (abs): it must exist, so nothing fuses.
TEST(FuseInstructionsPass, ADifferenceReadTwiceIsKept) {
  BlockGraph before = Partitioned(SubExp(1, true));
  ASSERT_EQ(before.kernels.size(), 1u);
  EXPECT_EQ(Opcodes(before.kernels[0].body), "TLOAD TROWMAX TROWEXPANDSUB TEXP TABS TSTORE TSTORE");
  EXPECT_EQ(PrintBlockGraph(Fuse(before)), PrintBlockGraph(before));
}

// out1 = e; s = sum(e): the store of e moves below the reduction reading it.
TEST(FuseInstructionsPass, AStoreSinksBelowTheRowReductionOfItsTile) {
  Recorder r("sink");
  int x = r.AddParam("x", {16, 64}, DataType::FP32, false);
  int out = r.CreateTensor({16, 64}, DataType::FP32, "out");
  r.SetVecTileShapes({8, 64});
  int e = r.Unary("exp", x);
  r.Assemble(e, {0, 0}, out);
  r.Return({out, r.Reduce("sum", e, -1, true)});
  BlockGraph before = Partitioned(r.Finish());
  ASSERT_EQ(before.kernels.size(), 1u);
  EXPECT_EQ(Opcodes(before.kernels[0].body), "TLOAD TEXP TSTORE TROWSUM TSTORE");
  BlockGraph after = Fuse(before);
  EXPECT_EQ(Opcodes(after.kernels[0].body), "TLOAD TEXP TROWSUM TSTORE TSTORE");
  // The sunk store is still the one of e, to out.
  const Kernel& k = after.kernels[0];
  EXPECT_EQ(k.body[3].srcs, (std::vector<int>{k.body[1].dst}));
  EXPECT_EQ(after.fn.value(k.params[k.body[3].param].value).name, "out_win1");
}

// Division by a row value becomes a reciprocal and a multiply only with the option.
TEST(FuseInstructionsPass, ReciprocalDivisionOnlyWhenAsked) {
  BlockGraph before = Partitioned(Softmax());
  EXPECT_EQ(Opcodes(Fuse(before).kernels[0].body), "TLOAD TROWMAX TROWEXPANDEXPDIF TROWSUM TROWEXPANDDIV TSTORE");
  BlockGraph after = Fuse(before, true);
  const Kernel& k = after.kernels[0];
  EXPECT_EQ(Opcodes(k.body), "TLOAD TROWMAX TROWEXPANDEXPDIF TROWSUM TRECIP TROWEXPANDMUL TSTORE");
  ASSERT_EQ(k.bufs.size(), before.kernels[0].bufs.size() + 1);
  const TileBuf& recip = k.bufs.back();
  EXPECT_EQ(recip.name, "t3_recip");
  EXPECT_EQ(recip.shape, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(recip.value, -1);  // scratch, not a value of the program
  EXPECT_EQ(k.body[4].srcs, (std::vector<int>{k.body[3].dst}));
  EXPECT_EQ(k.body[4].dst, recip.id);
  EXPECT_EQ(k.body[5].srcs[1], recip.id);
}

// 2 / x: the scalar over a tile becomes 1 / x times 2.
TEST(FuseInstructionsPass, AScalarOverATileBecomesAReciprocalTimesTheScalar) {
  Recorder r("sdiv");
  int x = r.AddParam("x", {8, 32}, DataType::FP32, false);
  r.SetVecTileShapes({8, 32});
  r.Return({r.BinaryScalar("div", x, 2.0, {}, true)});
  BlockGraph before = Partitioned(r.Finish());
  EXPECT_EQ(Opcodes(before.kernels[0].body), "TLOAD TDIVS TSTORE");
  EXPECT_EQ(Opcodes(Fuse(before).kernels[0].body), "TLOAD TDIVS TSTORE");
  const Kernel k = Fuse(before, true).kernels[0];
  EXPECT_EQ(Opcodes(k.body), "TLOAD TRECIP TMULS TSTORE");
  EXPECT_FALSE(k.body[2].scalar_first);
  EXPECT_EQ(k.body[2].scalar, 2.0);
  // x / 2 (tile over scalar) is left to TDIVS: only a tile divisor has a reciprocal.
  Recorder q("div2");
  int y = q.AddParam("y", {8, 32}, DataType::FP32, false);
  q.SetVecTileShapes({8, 32});
  q.Return({q.BinaryScalar("div", y, 2.0)});
  EXPECT_EQ(Opcodes(Fuse(Partitioned(q.Finish()), true).kernels[0].body), "TLOAD TDIVS TSTORE");
}

TEST(FuseInstructionsPass, KernelsWithNothingToFuseAreLeftAlone) {
  for (Function (*make)() : {Chain, RowLoop, SwapHalves, Branch, +[] { return MatmulRelu(); }}) {
    BlockGraph before = Partitioned(make());
    EXPECT_EQ(PrintBlockGraph(Fuse(before, true)), PrintBlockGraph(before));
  }
}

// Every kernel is rewritten: of a 4-tile softmax, the sub + exp kernel fuses, the reduction loops stay.
TEST(FuseInstructionsPass, FusesInEveryKernel) {
  BlockGraph after = Fuse(Partitioned(Softmax(64, 16)));
  ASSERT_EQ(after.kernels.size(), 4u);
  EXPECT_EQ(Opcodes(after.kernels[1].body), "TLOAD TLOAD TROWEXPANDEXPDIF TSTORE");
  EXPECT_EQ(Opcodes(after.kernels[0].body), "TLOAD TROWMAX LOOP{TLOAD TROWMAX TMAX} TSTORE");
}
