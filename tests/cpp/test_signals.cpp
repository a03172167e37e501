// The signals of distributed programs (TNOTIFY / TWAIT, pypto/dist_signal.hpp) through the
// whole pipeline: each is a kernel of its own marked as a fence, it sets / adds / waits on one
// int32 cell, and it orders the launches around it. Two calls running at once on two threads
// stand in for two ranks sharing memory: the writer's store is seen by the reader after its wait.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "frontend/recorder.h"
#include "passes/pipeline.h"
#include "runtime/runtime.h"

using namespace pypto;

namespace {

// A wait gives up after 2 s here (read once per process, before the first wait).
const bool kShortTimeout = [] { return setenv("PYPTO_DIST_TIMEOUT", "2", 1) == 0; }();

void Notify(Recorder& r, int sig, int64_t row, int64_t value, NotifyOp op) {
  Attrs a;
  a.set<int64_t>("value", value);
  a.set<int64_t>("op", static_cast<int64_t>(op));
  r.Op("notify", {r.View(sig, {Expr(row), Expr(0)}, {Expr(1), Expr(1)})}, a);
}

void Wait(Recorder& r, int sig, int64_t row, int64_t expected, bool consume) {
  Attrs a;
  a.set<int64_t>("expected", expected);
  a.set<int64_t>("cmp", static_cast<int64_t>(CmpMode::GE));
  a.set<int64_t>("consume", consume ? 1 : 0);
  r.Op("wait", {r.View(sig, {Expr(row), Expr(0)}, {Expr(1), Expr(1)})}, a);
}

std::shared_ptr<CompiledProgram> Build(Function f) { return std::make_shared<CompiledProgram>(Compile(f, {})); }

}  // namespace

TEST(Signals, EachIsAFenceKernelAndTheyCountRight) {
  ASSERT_TRUE(kShortTimeout);
  Recorder r("signals");
  int x = r.AddParam("x", {Expr(64)}, DataType::FP32, false);
  int sig = r.AddParam("sig", {Expr(4), Expr(1)}, DataType::INT32, false);
  int out = r.AddParam("out", {Expr(64)}, DataType::FP32, true);
  r.Assemble(r.BinaryScalar("add", x, 1.0), {Expr(0)}, out);
  Notify(r, sig, 2, 3, NotifyOp::AtomicAdd);
  Wait(r, sig, 2, 3, /*consume=*/true);
  Notify(r, sig, 0, 7, NotifyOp::Set);
  auto p = Build(r.Finish());
  int fences = 0;
  for (auto& k : p->block_graph.kernels) fences += k.fence ? 1 : 0;
  EXPECT_EQ(fences, 3);
  std::string text = PrintBlockGraph(p->block_graph);
  EXPECT_NE(text.find("TWAIT"), std::string::npos) << text;
  EXPECT_NE(text.find("consume"), std::string::npos) << text;
  for (const char* mode : {"interp", "cpu"}) {
    std::vector<float> xv(64), ov(64, -1.f);
    for (int i = 0; i < 64; ++i) xv[i] = static_cast<float>(i);
    std::vector<int32_t> sv = {5, 0, 0, 0};
    Runtime rt(p);
    RunOptions o;
    o.run_mode = ParseRunMode(mode);
    o.workers = 2;
    rt.Run({{xv.data(), DataType::FP32, {64}, {}},
            {sv.data(), DataType::INT32, {4, 1}, {}},
            {ov.data(), DataType::FP32, {64}, {}}},
           {}, o);
    EXPECT_EQ(sv[2], 0) << mode << ": the wait takes the 3 it waited for";
    EXPECT_EQ(sv[0], 7) << mode;
    for (int i = 0; i < 64; ++i) ASSERT_EQ(ov[i], xv[i] + 1.f) << mode;
  }
}

TEST(Signals, AWaitNoOneSignalsTimesOutNamingTheLine) {
  ASSERT_TRUE(kShortTimeout);
  Recorder r("lonely");
  int sig = r.AddParam("sig", {Expr(2), Expr(1)}, DataType::INT32, false);
  Wait(r, sig, 1, 1, false);
  auto p = Build(r.Finish());
  for (const char* mode : {"interp", "cpu"}) {
    std::vector<int32_t> sv = {0, 0};
    Runtime rt(p);
    RunOptions o;
    o.run_mode = ParseRunMode(mode);
    try {
      rt.Run({{sv.data(), DataType::INT32, {2, 1}, {}}}, {}, o);
      FAIL() << mode << ": the wait returned";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("timed out after 2 s"), std::string::npos) << mode << ": " << e.what();
    }
  }
}

// Two calls at once, on memory both see: the writer stores data then notifies; the reader waits,
// then copies the data. Without the fences the reader's copy could run before its wait (it does
// not touch the signal) and the writer's notify before its store.
TEST(Signals, OrderTheMemoryTwoCallsShare) {
  ASSERT_TRUE(kShortTimeout);
  const int64_t n = 1 << 16;
  Recorder w("writer");
  int wx = w.AddParam("x", {Expr(n)}, DataType::FP32, false);
  int wdata = w.AddParam("data", {Expr(n)}, DataType::FP32, true);
  int wsig = w.AddParam("sig", {Expr(2), Expr(1)}, DataType::INT32, false);
  w.Assemble(w.BinaryScalar("mul", wx, 2.0), {Expr(0)}, wdata);
  Notify(w, wsig, 0, 1, NotifyOp::AtomicAdd);
  auto writer = Build(w.Finish());

  Recorder rd("reader");
  int rdata = rd.AddParam("data", {Expr(n)}, DataType::FP32, false);
  int rsig = rd.AddParam("sig", {Expr(2), Expr(1)}, DataType::INT32, false);
  int rout = rd.AddParam("out", {Expr(n)}, DataType::FP32, true);
  Wait(rd, rsig, 0, 1, true);
  rd.Assemble(rd.BinaryScalar("add", rdata, 0.0), {Expr(0)}, rout);
  auto reader = Build(rd.Finish());

  for (const char* mode : {"interp", "cpu"}) {
    for (int round = 0; round < 3; ++round) {
      std::vector<float> x(n), data(n, 0.f), out(n, -1.f);
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000) + round;
      std::vector<int32_t> sig = {0, 0};
      RunOptions o;
      o.run_mode = ParseRunMode(mode);
      // One worker: each call runs on its own thread. (Calls with several workers take the
      // process's one worker pool in turn, so two of them in one process cannot wait for each
      // other; ranks are processes.)
      o.workers = 1;
      std::thread t([&] {
        Runtime rt(reader);
        rt.Run({{data.data(), DataType::FP32, {n}, {}},
                {sig.data(), DataType::INT32, {2, 1}, {}},
                {out.data(), DataType::FP32, {n}, {}}},
               {}, o);
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(round * 20));  // the reader waits first, or not
      Runtime rt(writer);
      rt.Run({{x.data(), DataType::FP32, {n}, {}},
              {data.data(), DataType::FP32, {n}, {}},
              {sig.data(), DataType::INT32, {2, 1}, {}}},
             {}, o);
      t.join();
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.f * x[i]) << mode << " round " << round << " at " << i;
      EXPECT_EQ(sig[0], 0) << mode;
    }
  }
}

// An atomic-add store (CANN's shmem_put with AtomicType.ADD): two calls adding into one buffer at
// once lose no update, in every dtype it takes.
TEST(Signals, AtomicAddStoresFromTwoCallsAtOnceLoseNothing) {
  const int64_t n = 4096, rounds = 64;
  for (DataType dt : {DataType::FP32, DataType::INT32}) {
    Recorder r("adder");
    int x = r.AddParam("x", {Expr(n)}, dt, false);
    int acc = r.AddParam("acc", {Expr(n)}, dt, true);
    Expr i = r.BeginLoop("i", "L", 0, rounds, 1);
    (void)i;
    r.Assemble(x, {Expr(0)}, acc, {}, /*atomic_add=*/true);
    r.EndLoop();
    auto p = Build(r.Finish());
    EXPECT_NE(PrintBlockGraph(p->block_graph).find("atomic add"), std::string::npos);
    for (const char* mode : {"interp", "cpu"}) {
      std::vector<float> xf(n, 1.f), af(n, 0.f);
      std::vector<int32_t> xi(n, 1), ai(n, 0);
      void* xp = dt == DataType::FP32 ? static_cast<void*>(xf.data()) : static_cast<void*>(xi.data());
      void* ap = dt == DataType::FP32 ? static_cast<void*>(af.data()) : static_cast<void*>(ai.data());
      RunOptions o;
      o.run_mode = ParseRunMode(mode);
      o.workers = 1;
      auto run = [&] {
        Runtime rt(p);
        rt.Run({{xp, dt, {n}, {}}, {ap, dt, {n}, {}}}, {}, o);
      };
      std::thread t(run);
      run();
      t.join();
      for (int64_t k = 0; k < n; ++k) {
        double got = dt == DataType::FP32 ? af[k] : ai[k];
        ASSERT_EQ(got, 2.0 * rounds) << mode << " " << DataTypeName(dt) << " at " << k;
      }
    }
  }
}

// A scalar read of an element the function computes (a phased call): the loop's trip count is an
// element of x + 1, known only once the kernel computing it has run; under several workers too.
TEST(PhasedCalls, AReadOfAComputedElementWaitsForItsKernel) {
  Recorder r("phased");
  int x = r.AddParam("x", {Expr(4)}, DataType::INT32, false);
  int out = r.AddParam("out", {Expr(8)}, DataType::FP32, true);
  int y = r.BinaryScalar("add", x, 1.0);  // computed: 1 + x
  Expr n = r.ReadScalar(y, {Expr(2)});    // y[2], read once the add has run
  Expr i = r.BeginLoop("i", "L", 0, n, 1);
  Attrs a;
  a.set<std::vector<Expr>>("shape", {Expr(1)});
  a.set<double>("value", 3.0);
  a.set<DataType>("dtype", DataType::FP32);
  r.Assemble(r.Op("full", {}, a), {i}, out);
  r.EndLoop();  // (the read's scope closes with the function)
  auto p = Build(r.Finish());
  for (const char* mode : {"interp", "cpu"})
    for (int workers : {1, 2}) {
      std::vector<int32_t> xv = {0, 0, 4, 0};  // y[2] = 5: out[0:5] = 3
      std::vector<float> ov(8, -1.f);
      Runtime rt(p);
      RunOptions o;
      o.run_mode = ParseRunMode(mode);
      o.workers = workers;
      rt.Run({{xv.data(), DataType::INT32, {4}, {}}, {ov.data(), DataType::FP32, {8}, {}}}, {}, o);
      for (int k = 0; k < 8; ++k) EXPECT_EQ(ov[k], k < 5 ? 3.f : -1.f) << mode << " workers " << workers << " at " << k;
    }
}
