// Call plans (src/runtime/call_plan.cpp): the second and later calls of a program with the same
// dims replay the first call's instances with their views pointed into the new buffers. Each
// replay must give a fresh walk's answer, also with calls from two threads on one Runtime (one
// replays, the other walks) and under the sanitizers.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <thread>

#include "frontend/recorder.h"
#include "passes/pipeline.h"
#include "runtime/runtime.h"

using namespace pypto;

namespace {

// y[i] = softmax(x[i]) * 2 over a loop of row blocks, through a created tensor (zeroed per call).
std::shared_ptr<CompiledProgram> Program(int64_t rows, int64_t cols) {
  Recorder r("planned");
  int x = r.AddParam("x", {rows, cols}, DataType::FP32, false);
  int y = r.AddParam("y", {rows, cols}, DataType::FP32, true);
  int t = r.CreateTensor({rows, cols}, DataType::FP32, "t");
  r.SetVecTileShapes({4, cols});
  Expr i = r.BeginLoop("i", "L", 0, rows / 8, 1);
  int v = r.View(x, {i * 8, 0}, {8, cols});
  int e = r.Unary("exp", r.Binary("sub", v, r.Reduce("amax", v, -1, true)));
  r.Assemble(r.Binary("div", e, r.Reduce("sum", e, -1, true)), {i * 8, 0}, t);
  r.EndLoop();
  r.Assemble(r.BinaryScalar("mul", t, 2.0), {0, 0}, y);
  return std::make_shared<CompiledProgram>(Compile(r.Finish(), {}));
}

void Check(const std::vector<float>& x, const std::vector<float>& y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double m = -1e30, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) s += std::exp(double(x[r * cols + c]) - m);
    for (int64_t c = 0; c < cols; ++c) {
      double want = 2 * std::exp(double(x[r * cols + c]) - m) / s;
      ASSERT_NEAR(y[r * cols + c], want, 1e-5 * want + 1e-7) << "row " << r << " col " << c;
    }
  }
}

RunStats Call(const Runtime& rt, int64_t rows, int64_t cols, int seed, int workers) {
  std::vector<float> x(rows * cols), y(rows * cols, -1.f);
  for (size_t k = 0; k < x.size(); ++k) x[k] = std::sin(0.37f * float(k) + float(seed));
  RunOptions o;
  o.workers = workers;
  o.run_mode = RunMode::Native;
  RunStats s = rt.Run(
      {HostTensor{x.data(), DataType::FP32, {rows, cols}, {}}, HostTensor{y.data(), DataType::FP32, {rows, cols}, {}}},
      {}, o);
  Check(x, y, rows, cols);
  return s;
}

}  // namespace

TEST(CallPlans, ReplaysGiveTheAnswerOfAFreshWalk) {
  Runtime rt(Program(64, 40));
  for (int workers : {1, 2}) {
    for (int call = 0; call < 6; ++call) {
      RunStats s = Call(rt, 64, 40, call, workers);
      if (call > 0) EXPECT_EQ(s.control_ms, 0.0) << "call " << call << " replays the plan";
    }
  }
}

TEST(CallPlans, TwoThreadsOnOneRuntime) {
  Runtime rt(Program(128, 24));
  Call(rt, 128, 24, 0, 2);
  auto many = [&](int seed) {
    for (int k = 0; k < 20; ++k) Call(rt, 128, 24, seed + k, 2);
  };
  std::thread a(many, 100), b(many, 200);
  a.join();
  b.join();
}
