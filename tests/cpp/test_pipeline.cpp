// The C++ frontend path: record a softmax with the Recorder, compile it with the default
// pipeline, check each level's text, and run it on host buffers against a scalar reference.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>

#include "frontend/recorder.h"
#include "passes/pipeline.h"
#include "runtime/runtime.h"

using namespace pypto;

namespace {

Function RecordSoftmax(int64_t n1, int64_t dim, std::vector<int64_t> tile, bool dynamic_batch, int64_t b = 2) {
  Recorder r("softmax");
  Expr batch = dynamic_batch ? r.AddDynamicVar("b") : Expr(b);
  int x = r.AddParam("x", {batch, n1, dim}, DataType::FP32, false);
  int out = r.CreateTensor({batch, n1, dim}, DataType::FP32, "out");
  r.SetVecTileShapes(tile);
  Expr i = r.BeginLoop("i", "L0", 0, batch, 1);
  int v = r.View(x, {i, 0, 0}, {1, n1, dim});
  int m = r.Reduce("amax", v, -1, true);
  int e = r.Unary("exp", r.Binary("sub", v, m));
  int y = r.Binary("div", e, r.Reduce("sum", e, -1, true));
  r.Assemble(y, {i, 0, 0}, out);
  r.EndLoop();
  r.Return({out});
  return r.Finish();
}

std::vector<float> RunProgram(const CompiledProgram& p, std::vector<float>& x, std::vector<int64_t> shape, int workers,
                              const std::string& mode = "interp") {
  auto prog = std::make_shared<CompiledProgram>(p);
  Runtime rt(prog);
  HostTensor in{x.data(), DataType::FP32, shape, {}};
  std::vector<float> y(x.size(), -1.f);
  HostTensor out{y.data(), DataType::FP32, shape, {}};
  RunOptions o;
  o.workers = workers;
  o.run_mode = ParseRunMode(mode);
  rt.Run({in}, {out}, o);
  return y;
}

void CheckSoftmax(const std::vector<float>& x, const std::vector<float>& y, int64_t rows, int64_t dim) {
  for (int64_t r = 0; r < rows; ++r) {
    double m = -1e30, s = 0;
    for (int64_t c = 0; c < dim; ++c) m = std::max(m, double(x[r * dim + c]));
    for (int64_t c = 0; c < dim; ++c) s += std::exp(double(x[r * dim + c]) - m);
    for (int64_t c = 0; c < dim; ++c) {
      double want = std::exp(double(x[r * dim + c]) - m) / s;
      ASSERT_NEAR(y[r * dim + c], want, 1e-5 * want + 1e-7) << "row " << r << " col " << c;
    }
  }
}

}  // namespace

TEST(Pipeline, SoftmaxFusesAndRuns) {
  CompiledProgram p = Compile(RecordSoftmax(6, 64, {1, 4, 64}, false), {});
  ASSERT_EQ(p.block_graph.kernels.size(), 1u);
  EXPECT_NE(PrintBlockGraph(p.block_graph).find("TROWEXPANDEXPDIF"), std::string::npos);
  EXPECT_NE(PrintExecGraph(p.exec_graph).find("loop i in range(0, 2, 1)"), std::string::npos);
  ASSERT_EQ(p.dumps.size(), PipelineStepNames().size());
  for (size_t i = 0; i < p.dumps.size(); ++i)  // the exported list is the pipeline's order
    EXPECT_NE(p.dumps[i].first.find(PipelineStepNames()[i]), std::string::npos) << p.dumps[i].first;
  std::vector<float> x(2 * 6 * 64);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (auto& v : x) v = nd(rng);
  for (int workers : {1, 2, 3}) {
    CheckSoftmax(x, RunProgram(p, x, {2, 6, 64}, workers, "interp"), 12, 64);
    CheckSoftmax(x, RunProgram(p, x, {2, 6, 64}, workers, "cpu"), 12, 64);
  }
}

TEST(Pipeline, DynamicBatchAndSplitReduction) {
  // dim 100 with a 32-wide tile: the reductions span 4 tiles with a tail of 4.
  CompiledProgram p = Compile(RecordSoftmax(5, 100, {1, 2, 32}, true), {});
  EXPECT_GT(p.block_graph.kernels.size(), 1u);
  for (int64_t b : {1, 3, 7}) {
    std::vector<float> x(b * 5 * 100);
    for (size_t k = 0; k < x.size(); ++k) x[k] = std::sin(0.37f * k) * 5;
    CheckSoftmax(x, RunProgram(p, x, {b, 5, 100}, 2, "interp"), b * 5, 100);
    CheckSoftmax(x, RunProgram(p, x, {b, 5, 100}, 2, "cpu"), b * 5, 100);
  }
}

// An op whose result nothing reads is not expanded (Function::LiveOps); the one result still
// comes out right, and the tile graph keeps the ids of the ops it left out.
TEST(Pipeline, OpsWhoseResultsAreNeverReadAreNotComputed) {
  Recorder r("dead");
  int x = r.AddParam("x", {Expr(4), Expr(32)}, DataType::FP32, false);
  int out = r.CreateTensor({Expr(4), Expr(32)}, DataType::FP32, "out");
  r.SetVecTileShapes({4, 32});
  int unused = r.Unary("exp", x);
  r.Binary("add", unused, x);  // reads a dead result, and is dead itself
  int y = r.Unary("abs", x);
  r.Assemble(y, {0, 0}, out);
  r.Return({out});
  Function fn = r.Finish();
  EXPECT_EQ(fn.LiveOps().size(), 2u);  // abs, assemble
  CompiledProgram p = Compile(fn, {});
  EXPECT_EQ(p.tile_graph.dead_ops.size(), 2u);
  int tile_ops = 0;
  p.tile_graph.body.ForEach([&](const TileOp&) { ++tile_ops; });
  EXPECT_EQ(tile_ops, 2);
  std::vector<float> in(4 * 32);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) - 60.f;
  std::vector<float> got = RunProgram(p, in, {4, 32}, 2);
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(got[i], std::fabs(in[i])) << i;
}

TEST(Pipeline, WrongInputShapeNamesTheParameter) {
  CompiledProgram p = Compile(RecordSoftmax(6, 64, {1, 4, 64}, false), {});
  std::vector<float> x(2 * 6 * 32);
  try {
    RunProgram(p, x, {2, 6, 32}, 1);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'x' expects shape fp32(2, 6, 64), got (2, 6, 32)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Pipeline, TileTooLargeForUbIsAUserError) {
  EXPECT_THROW(Compile(RecordSoftmax(512, 1024, {1, 512, 1024}, false), {}), UserError);
}

// Two nested loops whose indices are both called "i" are two symbols (issue 19): the recorder
// names the inner one i_1, and both backends write every element, not just the diagonal.
TEST(Pipeline, NestedLoopsWithTheSameIndexName) {
  const int64_t n = 4;
  Recorder r("nested");
  int a = r.AddParam("a", {n, n}, DataType::FP32, false);
  int y = r.AddParam("y", {n, n}, DataType::FP32, true);
  r.SetVecTileShapes({1, 1});
  Expr i = r.BeginLoop("i", "", 0, n, 1);
  Expr j = r.BeginLoop("i", "", 0, n, 1);
  EXPECT_EQ(i.str(), "i");
  EXPECT_EQ(j.str(), "i_1");
  r.Assemble(r.BinaryScalar("add", r.View(a, {i, j}, {1, 1}), 1.0), {i, j}, y);
  r.EndLoop();
  r.EndLoop();
  auto prog = std::make_shared<CompiledProgram>(Compile(r.Finish(), {}));
  Runtime rt(prog);
  for (std::string mode : {"interp", "cpu"}) {
    std::vector<float> av(n * n), yv(n * n, 0.f);
    for (size_t k = 0; k < av.size(); ++k) av[k] = float(k);
    RunOptions o;
    o.run_mode = ParseRunMode(mode);
    rt.Run({HostTensor{av.data(), DataType::FP32, {n, n}, {}}, HostTensor{yv.data(), DataType::FP32, {n, n}, {}}}, {},
           o);
    for (size_t k = 0; k < yv.size(); ++k) EXPECT_EQ(yv[k], av[k] + 1.f) << mode << " element " << k;
  }
}

// A frontend that binds one name twice is caught before any pass relies on names.
TEST(Pipeline, ALoopIndexBoundTwiceIsAnInternalError) {
  Recorder r("twice");
  int a = r.AddParam("a", {4, 4}, DataType::FP32, false);
  int y = r.AddParam("y", {4, 4}, DataType::FP32, true);
  Expr i = r.BeginLoop("i", "", 0, 4, 1);
  r.Assemble(r.View(a, {i, 0}, {1, 4}), {i, 0}, y);
  r.EndLoop();
  Function f = r.Finish();
  LoopInfo& outer = f.body.entries[0].loop->info;
  // Wrap the loop in another loop over the same symbol.
  Function g = f;
  g.body.entries.clear();
  LoopRegion<OpCall>& l = g.body.AddLoop(outer);
  *l.body = f.body;
  try {
    Compile(g, {});
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("loop index i"), std::string::npos) << e.what();
  }
}

// Cancellation (Ctrl-C from Python, or the timeout option) stops a running call with several
// workers, in the control-program walk or between tasks, and the runtime runs the next call.
TEST(Pipeline, CancelledCallsStopAndTheRuntimeStaysUsable) {
  const int64_t n = 64;
  for (int64_t iterations : {int64_t(1) << 40, int64_t(200000)}) {  // walk-bound; task-bound
    Recorder r("long");
    int x = r.AddParam("x", {n, n}, DataType::FP32, false);
    int y = r.AddParam("y", {n, n}, DataType::FP32, true);
    r.SetVecTileShapes({8, n});
    r.BeginLoop("i", "", 0, iterations, 1);
    r.Assemble(r.Binary("add", r.Unary("exp", x), y), {0, 0}, y);
    r.EndLoop();
    auto prog = std::make_shared<CompiledProgram>(Compile(r.Finish(), {}));
    Runtime rt(prog);
    std::vector<float> xv(n * n, 0.f), yv(n * n, 0.f);
    std::vector<HostTensor> args = {HostTensor{xv.data(), DataType::FP32, {n, n}, {}},
                                    HostTensor{yv.data(), DataType::FP32, {n, n}, {}}};
    for (std::string mode : {"cpu", "interp"}) {
      RunOptions o;
      o.workers = 2;
      o.run_mode = ParseRunMode(mode);
      // Timed from the first poll: the first "cpu" call compiles its kernels before it runs (seconds
      // with a cold kernel cache), which is not what this measures.
      std::optional<std::chrono::steady_clock::time_point> t0;
      o.interrupted = [&] {
        auto now = std::chrono::steady_clock::now();
        if (!t0) t0 = now;
        return now - *t0 > std::chrono::milliseconds(200);
      };
      EXPECT_THROW(rt.Run(args, {}, o), Interrupted) << mode;
      ASSERT_TRUE(t0.has_value()) << mode;
      EXPECT_LT(std::chrono::steady_clock::now() - *t0, std::chrono::seconds(2)) << mode;
      RunOptions t;
      t.workers = 2;
      t.run_mode = ParseRunMode(mode);
      t.timeout_s = 0.2;
      EXPECT_THROW(rt.Run(args, {}, t), UserError) << mode;
    }
  }
  // The runtime and the pool work after cancelled calls.
  CompiledProgram p = Compile(RecordSoftmax(6, 64, {1, 4, 64}, false), {});
  std::vector<float> x(2 * 6 * 64);
  for (size_t k = 0; k < x.size(); ++k) x[k] = std::sin(0.1f * k);
  CheckSoftmax(x, RunProgram(p, x, {2, 6, 64}, 2, "cpu"), 12, 64);
}
