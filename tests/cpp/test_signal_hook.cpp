// The signal hook a distributed engine sets (src/runtime/signal_hook.h): before each signal kernel
// runs, the hook sees its cell (at the address the kernel computes), value and kind; answering
// true carries the signal itself (the kernel is skipped), false lets the kernel run, and a throw
// fails the call. In both run modes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#include "frontend/recorder.h"
#include "passes/pipeline.h"
#include "runtime/runtime.h"
#include "runtime/signal_hook.h"

using namespace pypto;

namespace {

struct HookGuard {  // removes the hook at the end of a test, whatever happens
  ~HookGuard() { rt::SetSignalHook({}); }
};

std::shared_ptr<CompiledProgram> NotifyThenWait() {
  Recorder r("hooked");
  int sig = r.AddParam("sig", {Expr(4), Expr(1)}, DataType::INT32, false);
  int x = r.AddParam("x", {Expr(16)}, DataType::FP32, false);
  int out = r.AddParam("out", {Expr(16)}, DataType::FP32, true);
  r.Assemble(r.BinaryScalar("mul", x, 2.0), {Expr(0)}, out);
  Attrs n;
  n.set<int64_t>("value", 5);
  n.set<int64_t>("op", static_cast<int64_t>(NotifyOp::AtomicAdd));
  r.Op("notify", {r.View(sig, {Expr(3), Expr(0)}, {Expr(1), Expr(1)})}, n);
  Attrs w;
  w.set<int64_t>("expected", 0);
  w.set<int64_t>("cmp", static_cast<int64_t>(CmpMode::GE));
  w.set<int64_t>("consume", 0);
  r.Op("wait", {r.View(sig, {Expr(1), Expr(0)}, {Expr(1), Expr(1)})}, w);
  return std::make_shared<CompiledProgram>(Compile(r.Finish(), {}));
}

}  // namespace

TEST(SignalHook, SeesEachSignalsCellAndMayCarryIt) {
  HookGuard guard;
  auto p = NotifyThenWait();
  for (const char* mode : {"interp", "cpu"}) {
    for (bool carry : {true, false}) {
      std::vector<int32_t> sv = {0, 0, 0, 0};
      std::vector<float> xv(16, 1.5f), ov(16, 0.f);
      std::vector<rt::SignalEvent> seen;
      rt::SetSignalHook([&](const rt::SignalEvent& e) {
        seen.push_back(e);
        return carry && e.kind == rt::SignalKind::Notify;
      });
      Runtime run(p);
      RunOptions o;
      o.run_mode = ParseRunMode(mode);
      o.workers = 2;
      run.Run({{sv.data(), DataType::INT32, {4, 1}, {}},
               {xv.data(), DataType::FP32, {16}, {}},
               {ov.data(), DataType::FP32, {16}, {}}},
              {}, o);
      ASSERT_EQ(seen.size(), 2u) << mode;
      EXPECT_EQ(seen[0].kind, rt::SignalKind::Notify);
      EXPECT_EQ(seen[0].cell, sv.data() + 3) << mode << ": the cell the kernel would touch";
      EXPECT_EQ(seen[0].value, 5);
      EXPECT_EQ(seen[0].op, static_cast<int>(NotifyOp::AtomicAdd));
      EXPECT_EQ(seen[1].kind, rt::SignalKind::Wait);
      EXPECT_EQ(seen[1].cell, sv.data() + 1);
      EXPECT_EQ(sv[3], carry ? 0 : 5) << mode << (carry ? ": carried by the hook, not run" : ": run");
      for (float v : ov) ASSERT_EQ(v, 3.0f) << mode << ": the launch before the signal ran";
    }
  }
}

TEST(SignalHook, AThrowFailsTheCall) {
  HookGuard guard;
  auto p = NotifyThenWait();
  rt::SetSignalHook([](const rt::SignalEvent& e) -> bool {
    if (e.kind == rt::SignalKind::Notify) throw UserError("the engine refused the notify");
    return false;
  });
  std::vector<int32_t> sv = {0, 0, 0, 0};
  std::vector<float> xv(16, 1.f), ov(16, 0.f);
  Runtime run(p);
  RunOptions o;
  o.run_mode = RunMode::Native;
  EXPECT_THROW(run.Run({{sv.data(), DataType::INT32, {4, 1}, {}},
                        {xv.data(), DataType::FP32, {16}, {}},
                        {ov.data(), DataType::FP32, {16}, {}}},
                       {}, o),
               UserError);
  rt::SetSignalHook({});
  EXPECT_FALSE(rt::HasSignalHook());
}
