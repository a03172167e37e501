// InferShapes alone, on the graph as recorded: it leaves a consistent graph as it is, fills in
// result types a frontend left out, and refuses types and symbols that do not add up.
#include "pass_test_util.h"
#include "passes/infer_shapes.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

// The recorded tensor graph (the input of infer_shapes).
Function Recorded(Function fn) { return Through(std::move(fn), "tensor_graph").tensor_graph; }

void Infer(Function& fn) {
  PassContext ctx(CompileOptions{});
  InferShapes(fn, ctx);
}

// The value the op with output name `name` makes.
Value& Result(Function& fn, const std::string& name) {
  for (Value& v : fn.values)
    if (v.name == name) return v;
  throw std::runtime_error("no value " + name);
}

std::string InternalErrorOf(Function fn) {
  try {
    Infer(fn);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(InferShapesPass, ConsistentGraphsAreLeftAsRecorded) {
  for (Function (*make)() : {Chain, RowLoop, SwapHalves, Branch, +[] { return MatmulRelu(); }}) {
    Function fn = Recorded(make());
    const std::string before = PrintTensorGraph(fn);
    Infer(fn);
    EXPECT_EQ(PrintTensorGraph(fn), before);
  }
}

TEST(InferShapesPass, SoftmaxAfterThePass) {
  Function fn = Recorded(Softmax());
  Infer(fn);
  EXPECT_EQ(PrintTensorGraph(fn),
            "tensor_graph @softmax(%x: fp32(16, 64)) -> (%out: fp32(16, 64)) {\n"
            "  output %out: fp32(16, 64)\n"
            "  %t0: fp32(16, 1) = amax(%x) {dim=1, keepdim=1} tile=[8, 64]\n"
            "  %t1: fp32(16, 64) = sub(%x, %t0) tile=[8, 64]\n"
            "  %t2: fp32(16, 64) = exp(%t1) tile=[8, 64]\n"
            "  %t3: fp32(16, 1) = sum(%t2) {dim=1, keepdim=1} tile=[8, 64]\n"
            "  %t4: fp32(16, 64) = div(%t2, %t3) tile=[8, 64]\n"
            "  assemble(%t4, %out) {offsets=[0, 0]} tile=[8, 64]\n"
            "}\n");
}

// A frontend that records no result shapes gets them from the registry: the graph after the
// pass is the one the recorder (which infers as it records) made.
TEST(InferShapesPass, FillsInResultShapesAFrontendLeftOut) {
  Function fn = Recorded(Softmax());
  const std::string recorded = PrintTensorGraph(fn);
  for (const char* name : {"t0", "t1", "t2", "t3", "t4"}) Result(fn, name).shape.clear();
  EXPECT_NE(PrintTensorGraph(fn), recorded);
  Infer(fn);
  EXPECT_EQ(PrintTensorGraph(fn), recorded);
  EXPECT_EQ(ShapeStr(Result(fn, "t0").shape), "(16, 1)");  // the reduced row keeps its dim
}

TEST(InferShapesPass, ReductionWithoutKeepdimAndMatmulShapes) {
  Recorder r("shapes");
  int a = r.AddParam("a", {64, 32}, DataType::FP32, false);
  int b = r.AddParam("b", {32, 48}, DataType::FP32, false);
  int c = r.Matmul(a, b, -1, false, false);
  int s = r.Reduce("sum", c, 0, false);
  int t = r.Remap(a, {1, 0});  // a permute
  r.Return({s, t});
  Function fn = Recorded(r.Finish());
  for (int v : {c, s, t}) fn.value(v).shape.clear();
  Infer(fn);
  EXPECT_EQ(ShapeStr(fn.value(c).shape), "(64, 48)");
  EXPECT_EQ(ShapeStr(fn.value(s).shape), "(48,)");
  EXPECT_EQ(ShapeStr(fn.value(t).shape), "(32, 64)");
}

TEST(InferShapesPass, AWrongRecordedTypeIsAnInternalError) {
  Function dtype = Recorded(Softmax());
  Result(dtype, "t0").dtype = DataType::FP16;
  EXPECT_NE(InternalErrorOf(dtype).find(
                "shape inference disagrees with the recorded type of %t0: fp32(16, 1) vs fp16(16, 1)"),
            std::string::npos)
      << InternalErrorOf(dtype);
  Function shape = Recorded(Softmax());
  Result(shape, "t3").shape = {Expr(16), Expr(64)};
  EXPECT_NE(InternalErrorOf(shape).find("recorded type of %t3: fp32(16, 1) vs fp32(16, 64)"), std::string::npos)
      << InternalErrorOf(shape);
}

// A loop index used outside its loop: the assemble of RowLoop moved in front of the loop.
TEST(InferShapesPass, ASymbolUsedOutOfScopeIsAnInternalError) {
  Function fn = Recorded(RowLoop());
  ASSERT_EQ(fn.body.entries.size(), 1u);
  auto& body = fn.body.entries[0].loop->body->entries;
  fn.body.entries.insert(fn.body.entries.begin(), body.back());
  body.pop_back();
  EXPECT_NE(InternalErrorOf(fn).find("symbol i in pypto.assemble of @rows is not bound where it is used"),
            std::string::npos)
      << InternalErrorOf(fn);
}

TEST(InferShapesPass, ASymbolBoundTwiceIsAnInternalError) {
  Recorder r("dyn");
  Expr n = r.AddDynamicVar("n");
  int x = r.AddParam("x", {n, 8}, DataType::FP32, false);
  r.Return({r.Unary("exp", x)});
  Function fn = Recorded(r.Finish());
  EXPECT_EQ(InternalErrorOf(fn), "no error");
  fn.dynamic_vars.push_back(n.var_name());
  EXPECT_NE(InternalErrorOf(fn).find("a dynamic dim of @dyn is bound twice"), std::string::npos);
  // A branch index is a symbol too: the else branch reusing the if's.
  Function br = Recorded(Branch());
  auto& inner = br.body.entries[0].loop->body->entries;
  ASSERT_EQ(inner.size(), 2u);
  EXPECT_EQ(inner[0].loop->info.var, "if");
  EXPECT_EQ(inner[1].loop->info.var, "else");
  inner[1].loop->info.var = "if";
  EXPECT_NE(InternalErrorOf(br).find("loop index if of loop \"ELSE_0\" in @branch is already bound"), std::string::npos)
      << InternalErrorOf(br);
}

// The pass's output has the property the table says it produces; a dim left undefined breaks it.
TEST(InferShapesPass, ProducesShapesInferred) {
  CompiledProgram p = Through(Softmax(), "tensor_graph");
  Infer(p.tensor_graph);
  const MachineModel& m = GetMachine("cpu");
  EXPECT_NO_THROW(CheckProperty(IRProperty::ShapesInferred, p, m, "infer_shapes"));
  Result(p.tensor_graph, "t2").shape[1] = Expr();
  try {
    CheckProperty(IRProperty::ShapesInferred, p, m, "infer_shapes");
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "after pass infer_shapes: property shapes_inferred does not hold: dim 1 of %t2 is not inferred"),
              std::string::npos)
        << e.what();
  }
}
