// Which returned tensors a call writes whole (runtime/output_coverage.h): those buffers are not
// zeroed before the call, so a wrong "whole" would leave garbage where a program wrote nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "frontend/recorder.h"
#include "passes/pipeline.h"
#include "runtime/output_coverage.h"
#include "runtime/runtime.h"

using namespace pypto;

namespace {

// out[rows_lo:rows_hi] = x[rows_lo:rows_hi] * 2 in a runtime loop over blocks of `block` rows
// (or one assemble when block is 0); the rest of out is never written.
CompiledProgram RowBlocks(Expr rows, int64_t cols, int64_t lo, Expr hi, int64_t block, std::vector<int64_t> tile,
                          Recorder* recorder = nullptr) {
  Recorder own("blocks");
  Recorder& r = recorder ? *recorder : own;
  int x = r.AddParam("x", {rows, cols}, DataType::FP32, false);
  int out = r.CreateTensor({rows, cols}, DataType::FP32, "out");
  r.SetVecTileShapes(tile);
  if (block == 0) {
    int v = r.View(x, {lo, 0}, {hi - lo, cols});
    r.Assemble(r.BinaryScalar("mul", v, 2.0), {lo, 0}, out);
  } else {
    Expr i = r.BeginLoop("i", "L0", lo, hi, block);
    int v = r.View(x, {i, 0}, {block, cols});
    r.Assemble(r.BinaryScalar("mul", v, 2.0), {i, 0}, out);
    r.EndLoop();
  }
  r.Return({out});
  return Compile(r.Finish(), {});
}

bool Whole(const CompiledProgram& p, SymEnv env = {}) { return ReturnsWrittenWhole(p.exec_graph, env).at(0); }

}  // namespace

TEST(OutputCoverage, OneLaunchOverTheWholeResultWithTails) {
  EXPECT_TRUE(Whole(RowBlocks(64, 48, 0, 64, 0, {8, 48})));
  EXPECT_TRUE(Whole(RowBlocks(61, 45, 0, 61, 0, {8, 16})));  // tails in both dims
}

TEST(OutputCoverage, PartOfTheResultIsNotWhole) {
  EXPECT_FALSE(Whole(RowBlocks(64, 48, 8, 24, 0, {8, 48})));
  EXPECT_FALSE(Whole(RowBlocks(64, 48, 0, 63, 0, {8, 48})));  // one row short
}

TEST(OutputCoverage, SlabsOfALoopTogether) {
  EXPECT_TRUE(Whole(RowBlocks(64, 48, 0, 64, 4, {2, 16})));
  EXPECT_FALSE(Whole(RowBlocks(64, 48, 0, 32, 4, {2, 16})));
  EXPECT_FALSE(Whole(RowBlocks(64, 48, 4, 64, 4, {2, 16})));
}

TEST(OutputCoverage, DynamicDimsAreEvaluatedPerCall) {
  Recorder r("dyn");
  Expr b = r.AddDynamicVar("b");
  CompiledProgram p = RowBlocks(b, 32, 0, b, 1, {1, 32}, &r);
  const std::string name = b.var_name();
  EXPECT_TRUE(Whole(p, {{name, 5}}));
  EXPECT_TRUE(Whole(p, {{name, 1}}));
}

TEST(OutputCoverage, AControlProgramTooLongToWalkProvesNothingQuickly) {
  Recorder r("long");
  Expr b = r.AddDynamicVar("b");
  CompiledProgram p = RowBlocks(b, 8, 0, b, 1, {1, 8}, &r);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(Whole(p, {{b.var_name(), 5000000}}));  // five million launches: not walked
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_TRUE(Whole(p, {{b.var_name(), 1000}}));
}

TEST(OutputCoverage, TheRuntimeAnswersPerSetOfDims) {
  // The Python binding asks before it allocates the results: a partial one is zeroed.
  auto p = std::make_shared<CompiledProgram>(RowBlocks(16, 24, 4, 12, 0, {4, 24}));
  Runtime rt(p);
  std::vector<float> x(16 * 24, 1.f);
  HostTensor in{x.data(), DataType::FP32, {16, 24}, {}};
  SymEnv env = rt.BindShapes({in});
  EXPECT_FALSE(rt.ReturnsWrittenWhole(env).at(0));
  EXPECT_FALSE(rt.ReturnsWrittenWhole(env).at(0));  // (the remembered answer)
}
