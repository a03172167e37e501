// ExpandTiles alone, on the output of infer_shapes: one tile op per live tensor op, with the
// tile shape chosen (and why), the accesses of its operands, and the loop structure kept.
#include "pass_test_util.h"
#include "passes/expand_tiles.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

TileGraph Expand(Function fn, const std::string& machine = "cpu") {
  CompileOptions o;
  o.machine = machine;
  Function in = Through(std::move(fn), "infer_shapes", o).tensor_graph;
  PassContext ctx(o);
  return ExpandTiles(in, ctx);
}

// Copies: the graph may be a temporary.
std::vector<TileOp> Ops(const TileGraph& g) {
  std::vector<TileOp> v;
  g.body.ForEach([&](const TileOp& t) { v.push_back(t); });
  return v;
}

// x fp32 `shape` -> exp, under the vec tile `tile` (none: automatic).
Function Exp(std::vector<Expr> shape, std::vector<int64_t> tile) {
  Recorder r("exp");
  int x = r.AddParam("x", shape, DataType::FP32, false);
  if (!tile.empty()) r.SetVecTileShapes(tile);
  r.Return({r.Unary("exp", x)});
  return r.Finish();
}

}  // namespace

TEST(ExpandTilesPass, ChainTakesTheUserTile) {
  EXPECT_EQ(PrintTileGraph(Expand(Chain())),
            "tile_graph @chain {\n"
            "  tile_op#0 %t0: fp32(16, 64) = add(%x, %y)\n"
            "      over (16, 64) tile=[8, 64] grid=(2, 1)  # tile: set_vec_tile_shapes(8, 64)\n"
            "  tile_op#1 %t1: fp32(16, 64) = exp(%t0)\n"
            "      over (16, 64) tile=[8, 64] grid=(2, 1)  # tile: set_vec_tile_shapes(8, 64)\n"
            "  tile_op#2 %t2: fp32(16, 64) = mul_scalar(%t1) {scalar=2}\n"
            "      over (16, 64) tile=[8, 64] grid=(2, 1)  # tile: set_vec_tile_shapes(8, 64)\n"
            "  tile_op#3 %out_win3: fp32(16, 64) = assemble(%t2) {offsets=[0, 0]}\n"
            "      over (16, 64) tile=[8, 64] grid=(2, 1)  # tile: set_vec_tile_shapes(8, 64)\n"
            "}\n");
}

// A reduction iterates its input; its row result is read broadcast along the reduced dim.
TEST(ExpandTilesPass, ReductionIteratesItsInputAndIsReadBroadcast) {
  TileGraph g = Expand(Softmax());
  auto ops = Ops(g);
  ASSERT_EQ(ops.size(), 6u);
  const TileOp& amax = ops[0];
  EXPECT_EQ(amax.op, "amax");
  EXPECT_EQ(ShapeStr(amax.extent), "(16, 64)");
  EXPECT_EQ(amax.reduce_axis, 1);
  EXPECT_EQ(amax.output_tile(), (std::vector<int64_t>{8, 1}));
  EXPECT_FALSE(amax.splits_reduction());
  const TileOp& sub = ops[1];
  ASSERT_EQ(sub.inputs.size(), 2u);
  EXPECT_EQ(sub.inputs[0].broadcast, (std::vector<bool>{false, false}));
  EXPECT_EQ(sub.inputs[1].broadcast, (std::vector<bool>{false, true}));
  EXPECT_EQ(sub.input_tile(1), (std::vector<int64_t>{8, 1}));
}

TEST(ExpandTilesPass, AReductionAxisOfSeveralTilesSplits) {
  TileGraph g = Expand(Softmax(64, 16));
  auto ops = Ops(g);
  EXPECT_TRUE(ops[0].splits_reduction());
  EXPECT_EQ(ShapeStr(ops[0].counts()), "(2, 4)");
  EXPECT_TRUE(ops[3].splits_reduction());  // sum
  EXPECT_FALSE(ops[1].splits_reduction());
}

TEST(ExpandTilesPass, MatmulTakesTheCubeTileAndItsStoreTheOutputBlock) {
  TileGraph g = Expand(MatmulRelu(false));
  auto ops = Ops(g);
  ASSERT_EQ(ops.size(), 2u);
  const TileOp& mm = ops[0];
  ASSERT_TRUE(mm.is_matmul());
  EXPECT_EQ(mm.cube, (std::vector<int64_t>{32, 32, 16, 32, 16, 48}));
  EXPECT_EQ(mm.k_extent.str(), "32");
  EXPECT_EQ(mm.tile, (std::vector<int64_t>{32, 48}));
  EXPECT_EQ(mm.input_tile(0), (std::vector<int64_t>{32, 32}));  // A's L1 tile m1 x k1
  EXPECT_EQ(mm.input_tile(1), (std::vector<int64_t>{32, 48}));  // B's k1 x n1
  EXPECT_EQ(ops[1].op, "assemble");
  EXPECT_EQ(ops[1].tile, mm.tile);
  EXPECT_EQ(ops[1].tile_reason, "the output block (32, 48) of the matmul it stores");
  // A relu between them takes the vec tile in force instead.
  auto relu = Ops(Expand(MatmulRelu(true)));
  EXPECT_EQ(relu[1].tile_reason, "set_vec_tile_shapes(32, 48)");
}

TEST(ExpandTilesPass, CubeTilesAreClippedToTheMatrix) {
  Recorder r("mm");
  int a = r.AddParam("a", {64, 32}, DataType::FP32, false);
  int b = r.AddParam("b", {32, 48}, DataType::FP32, false);
  r.SetCubeTileShapes({128, 128}, {64, 64}, {128, 128});
  r.Return({r.Matmul(a, b, -1, false, false)});
  auto ops = Ops(Expand(r.Finish()));
  EXPECT_EQ(ops[0].cube, (std::vector<int64_t>{64, 64, 32, 32, 48, 48}));
  EXPECT_EQ(ops[0].tile, (std::vector<int64_t>{64, 48}));
}

TEST(ExpandTilesPass, AutomaticTilesWithoutSetVecTileShapes) {
  auto small = Ops(Expand(Exp({16, 64}, {})));
  EXPECT_EQ(small[0].tile, (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(small[0].tile_reason,
            "automatic (16, 64): no set_vec_tile_shapes in force; whole last dim up to 4096, rows up to 16 KiB");
  // 4096 fp32 columns fill 16 KiB with one row.
  auto wide = Ops(Expand(Exp({300, 8192}, {})));
  EXPECT_EQ(wide[0].tile, (std::vector<int64_t>{1, 4096}));
  EXPECT_EQ(ShapeStr(wide[0].counts()), "(300, 2)");
}

TEST(ExpandTilesPass, ATileLargerThanTheTensorIsClipped) {
  auto ops = Ops(Expand(Exp({16, 64}, {32, 128})));
  EXPECT_EQ(ops[0].tile, (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(ops[0].tile_reason, "set_vec_tile_shapes(32, 128), clipped to the extent -> (16, 64)");
}

// Dynamic extents keep the user's tile; the grid is symbolic (tails are valid shapes later).
TEST(ExpandTilesPass, ADynamicDimHasASymbolicGrid) {
  Recorder r("dyn");
  Expr n = r.AddDynamicVar("n");
  int x = r.AddParam("x", {n, 100}, DataType::FP32, false);
  r.SetVecTileShapes({8, 32});
  r.Return({r.Unary("exp", x)});
  auto ops = Ops(Expand(r.Finish()));
  EXPECT_EQ(ops[0].tile, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(ShapeStr(ops[0].counts()), "(((n + 7) // 8), 4)");
}

TEST(ExpandTilesPass, ALoopBodyStaysALoop) {
  TileGraph g = Expand(RowLoop());
  ASSERT_EQ(g.body.entries.size(), 1u);
  ASSERT_TRUE(g.body.entries[0].loop);
  const LoopRegion<TileOp>& l = *g.body.entries[0].loop;
  EXPECT_EQ(l.info.name, "L0");
  EXPECT_EQ(l.info.stop.str(), "4");
  ASSERT_EQ(l.body->entries.size(), 3u);
  const TileOp& store = *l.body->entries[2].item;
  EXPECT_EQ(store.op, "assemble");
  // The written window is a view of the result at the loop index.
  const Value& w = g.fn.value(store.output);
  EXPECT_EQ(w.kind, ValueKind::View);
  EXPECT_EQ(g.fn.value(w.base).name, "out");
  EXPECT_EQ(ShapeStr(w.offsets), "(i, 0)");
  EXPECT_EQ(ShapeStr(w.shape), "(1, 32)");
}

TEST(ExpandTilesPass, AssemblesWriteViewsOfTheirWindows) {
  TileGraph g = Expand(SwapHalves());
  auto ops = Ops(g);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(TileShapes(g), (std::vector<std::string>{"add_scalar:[8, 32]", "assemble:[8, 32]", "assemble:[8, 32]"}));
  const Value& w1 = g.fn.value(ops[1].output);
  const Value& w2 = g.fn.value(ops[2].output);
  EXPECT_EQ(w1.name, "out_win1");
  EXPECT_EQ(ShapeStr(w1.offsets), "(0, 0)");
  EXPECT_EQ(w2.name, "out_win2");
  EXPECT_EQ(ShapeStr(w2.offsets), "(8, 0)");
  EXPECT_EQ(w1.base, w2.base);
  // The copy reads the view of x's first half.
  EXPECT_EQ(ShapeStr(g.fn.value(ops[2].inputs[0].value).offsets), "(0, 0)");
}

TEST(ExpandTilesPass, BranchesKeepTheirRegions) {
  TileGraph g = Expand(Branch());
  auto& in_loop = g.body.entries.at(0).loop->body->entries;
  ASSERT_EQ(in_loop.size(), 2u);
  EXPECT_EQ(in_loop[0].loop->info.name, "IF_0");
  EXPECT_EQ(in_loop[1].loop->info.name, "ELSE_0");
  EXPECT_EQ(in_loop[0].loop->body->entries.at(0).item->op, "exp");
  EXPECT_EQ(in_loop[1].loop->body->entries.at(0).item->op, "mul_scalar");
  EXPECT_EQ(TileShapes(g),
            (std::vector<std::string>{"exp:[1, 16]", "assemble:[1, 16]", "mul_scalar:[1, 16]", "assemble:[1, 16]"}));
}

// Dead ops are left out (and listed); a loop left empty goes too.
TEST(ExpandTilesPass, DeadOpsAndEmptyLoopsAreLeftOut) {
  Recorder r("dead");
  int x = r.AddParam("x", {4, 32}, DataType::FP32, false);
  int out = r.CreateTensor({4, 32}, DataType::FP32, "out");
  r.SetVecTileShapes({4, 32});
  r.BeginLoop("i", "L0", 0, 2, 1);
  r.Unary("exp", x);  // never read
  r.EndLoop();
  r.Assemble(r.Unary("abs", x), {0, 0}, out);
  r.Return({out});
  TileGraph g = Expand(r.Finish());
  EXPECT_EQ(g.dead_ops, (std::vector<int>{0}));
  EXPECT_EQ(g.body.entries.size(), 2u);  // abs, assemble: no loop
  for (auto& e : g.body.entries) EXPECT_TRUE(e.item);
  EXPECT_NE(PrintTileGraph(g).find("# not computed, their results are never read:"), std::string::npos);
}

TEST(ExpandTilesPass, ATileOfLowerRankIsAUserError) {
  EXPECT_THROW(Expand(Exp({16, 64}, {64})), UserError);
  // The NPU needs whole 32-byte rows: 7 fp32 are 28 bytes.
  EXPECT_NO_THROW(Expand(Exp({16, 64}, {8, 7})));
  EXPECT_THROW(Expand(Exp({16, 64}, {8, 7}), "a2a3"), UserError);
}

TEST(ExpandTilesPass, ProducesTilesExpanded) {
  CompiledProgram p = Through(Softmax(), "infer_shapes");
  PassContext ctx(CompileOptions{});
  p.tile_graph = ExpandTiles(p.tensor_graph, ctx);
  EXPECT_NO_THROW(CheckProperty(IRProperty::TilesExpanded, p, ctx.machine(), "expand_tiles"));
  p.tile_graph.body.entries[2].item->tile = {8};
  try {
    CheckProperty(IRProperty::TilesExpanded, p, ctx.machine(), "expand_tiles");
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("after pass expand_tiles: property tiles_expanded does not hold: tile_op#2 "
                                         "(exp) has tile (8) over (16, 64)"),
              std::string::npos)
        << e.what();
  }
}
