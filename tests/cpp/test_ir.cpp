// IR construction, shape inference and printing of each level.
#include <gtest/gtest.h>

#include "frontend/recorder.h"
#include "ir/op_registry.h"
#include "passes/pipeline.h"

using namespace pypto;

TEST(ShapeInference, BroadcastsKeepdimAndRows) {
  Recorder r("f");
  Expr n = Expr::Var("n");
  int x = r.AddParam("x", {n, 64}, DataType::FP32, false);
  int row = r.AddParam("g", {1, 64}, DataType::FP32, false);
  int m = r.Reduce("amax", x, -1, true);
  EXPECT_EQ(ShapeStr(r.value(m).shape), "(n, 1)");
  EXPECT_EQ(ShapeStr(r.value(r.Binary("sub", x, m)).shape), "(n, 64)");
  EXPECT_EQ(ShapeStr(r.value(r.Binary("mul", row, x)).shape), "(n, 64)");
  EXPECT_EQ(ShapeStr(r.value(r.Reduce("sum", x, 0, false)).shape), "(64,)");
  EXPECT_EQ(r.value(r.Cast(x, DataType::FP16)).dtype, DataType::FP16);
}

TEST(ShapeInference, MismatchesAreUserErrorsWithTheLine) {
  Recorder r("f");
  int x = r.AddParam("x", {4, 64}, DataType::FP32, false);
  int y = r.AddParam("y", {4, 32}, DataType::FP32, false);
  int h = r.AddParam("h", {4, 64}, DataType::FP16, false);
  SourceLoc loc{"model.py", 12, 12, "        z = x + y"};
  try {
    r.Binary("add", x, y, loc);
    FAIL();
  } catch (const UserError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("pypto.add: operand shapes (4, 64) and (4, 32) do not broadcast"), std::string::npos) << m;
    EXPECT_NE(m.find("model.py\", line 12"), std::string::npos) << m;
    EXPECT_NE(m.find("z = x + y\n        ^"), std::string::npos) << m;
  }
  EXPECT_THROW(r.Binary("add", x, h), UserError);
  EXPECT_THROW(r.Reduce("sum", x, 2, true), UserError);
  EXPECT_THROW(r.Unary("exp", r.AddParam("i", {4}, DataType::INT32, false)), UserError);
  EXPECT_THROW(r.View(x, {0, 0}, {5, 64}), UserError);
}

TEST(Registry, EveryOpHasItsLowering) {
  for (const OpDef& d : AllOpDefs()) {
    EXPECT_TRUE(d.pto.has_value()) << d.name;
    if (d.kind == OpKind::Binary) {  // the fused broadcast forms are optional
      EXPECT_EQ(FormOf(*d.pto), InstrForm::Binary) << d.name;
      if (d.pto_row_expand) EXPECT_EQ(FormOf(*d.pto_row_expand), InstrForm::RowExpandBinary) << d.name;
      if (d.pto_col_expand) EXPECT_EQ(FormOf(*d.pto_col_expand), InstrForm::ColExpandBinary) << d.name;
      EXPECT_EQ(FormOf(*d.pto_scalar), InstrForm::Scalar) << d.name;
    }
    if (d.kind == OpKind::Unary) EXPECT_EQ(FormOf(*d.pto), InstrForm::Unary) << d.name;
    if (d.kind == OpKind::Reduce) {
      EXPECT_EQ(FormOf(*d.pto), InstrForm::RowReduce) << d.name;
      EXPECT_EQ(FormOf(*d.pto_col_reduce), InstrForm::ColReduce) << d.name;
      EXPECT_EQ(FormOf(*d.combine), InstrForm::Binary) << d.name;
    }
  }
  EXPECT_TRUE(HasOpDef("add_scalar"));
  // Opcodes and their names round-trip; the compiler's own instructions follow the list's.
  for (int i = 0; i <= static_cast<int>(Opcode::LOOP); ++i)
    EXPECT_EQ(ParseOpcode(OpcodeName(static_cast<Opcode>(i))), static_cast<Opcode>(i));
  EXPECT_EQ(ParseOpcode("TNOSUCH"), std::nullopt);
  EXPECT_THROW(GetOpDef("no_such_op"), InternalError);
}

TEST(Printer, EveryLevelPrints) {
  Recorder r("chain");
  int x = r.AddParam("x", {10, 40}, DataType::FP32, false);
  r.SetVecTileShapes({4, 16});
  int y = r.BinaryScalar("mul", r.Unary("abs", x), 2.0);
  r.Return({y});
  CompiledProgram p = Compile(r.Finish(), {});
  std::string t = PrintTensorGraph(p.tensor_graph);
  EXPECT_NE(t.find("tensor_graph @chain(%x: fp32(10, 40))"), std::string::npos) << t;
  EXPECT_NE(t.find("mul_scalar(%t"), std::string::npos) << t;
  std::string tg = PrintTileGraph(p.tile_graph);
  EXPECT_NE(tg.find("grid=(3, 3)"), std::string::npos) << tg;
  std::string bg = PrintBlockGraph(p.block_graph);
  EXPECT_NE(bg.find("TMULS"), std::string::npos) << bg;
  EXPECT_NE(bg.find("min((-4*$c0 + 10), 4)"), std::string::npos) << bg;  // the row tail
  EXPECT_NE(PrintExecGraph(p.exec_graph).find("task_group#0"), std::string::npos);
}
