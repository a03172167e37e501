// The cube path from C++: record a matmul + epilogue with the Recorder, check the levels (an
// AIC kernel through Mat/Left/Right/Acc tiles, a separate AIV kernel, point-wise links), and
// run it on both backends with tails in M, N and K against a scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <pto/pto.hpp>
#include <random>

#include "frontend/recorder.h"
#include "passes/pipeline.h"
#include "runtime/runtime.h"

using namespace pypto;

namespace {

// relu(a @ b), with the cube tile m=[16,16] k=[8,24] n=[32,32] so K has L0 and L1 tails.
Function RecordLinearRelu(int64_t M, int64_t K, int64_t N) {
  Recorder r("linear_relu");
  int a = r.AddParam("a", {M, K}, DataType::FP32, false);
  int b = r.AddParam("b", {K, N}, DataType::FP32, false);
  r.SetCubeTileShapes({16, 16}, {8, 24}, {32, 32});
  int c = r.Matmul(a, b, -1, false, false);
  r.SetVecTileShapes({16, 32});
  int y = r.Unary("relu", c);
  r.Return({y});
  return r.Finish();
}

std::vector<float> RunLinear(const CompiledProgram& p, std::vector<float>& a, std::vector<float>& b, int64_t M,
                             int64_t K, int64_t N, const std::string& mode, int workers) {
  Runtime rt(std::make_shared<CompiledProgram>(p));
  std::vector<float> y(M * N, -1.f);
  RunOptions o;
  o.run_mode = ParseRunMode(mode);
  o.workers = workers;
  rt.Run({{a.data(), DataType::FP32, {M, K}, {}}, {b.data(), DataType::FP32, {K, N}, {}}},
         {{y.data(), DataType::FP32, {M, N}, {}}}, o);
  return y;
}

}  // namespace

TEST(Matmul, LowersThroughCubeTiles) {
  CompiledProgram p = Compile(RecordLinearRelu(40, 50, 70), {});
  std::string block = PrintBlockGraph(p.block_graph);
  EXPECT_NE(block.find("[AIC]"), std::string::npos) << block;
  EXPECT_NE(block.find("[AIV]"), std::string::npos) << block;
  for (const char* s : {"Mat fp32", "Left fp32", "Right fp32", "Acc fp32", "TEXTRACT", "TMATMUL_ACC", "for $s"})
    EXPECT_NE(block.find(s), std::string::npos) << s << "\n" << block;
  // relu's tile equals the matmul's output block: it reads the result point by point.
  std::string exec = PrintExecGraph(p.exec_graph);
  EXPECT_NE(exec.find("pointwise(#0)"), std::string::npos) << exec;
}

TEST(Matmul, MatchesReferenceOnBothBackends) {
  const int64_t M = 40, K = 50, N = 70;
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<float> a(M * K), b(K * N);
  for (auto& v : a) v = d(rng);
  for (auto& v : b) v = d(rng);
  CompiledProgram p = Compile(RecordLinearRelu(M, K, N), {});
  for (const char* mode : {"interp", "cpu"})
    for (int workers : {1, 2, 3}) {
      std::vector<float> y = RunLinear(p, a, b, M, K, N, mode, workers);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k) s += double(a[i * K + k]) * b[k * N + j];
          ASSERT_NEAR(y[i * N + j], std::max(s, 0.0), 1e-4) << mode << " w=" << workers << " at " << i << "," << j;
        }
    }
}

TEST(Matmul, InnerDimMismatchIsAUserError) {
  Recorder r("bad");
  int a = r.AddParam("a", {8, 5}, DataType::FP32, false);
  int b = r.AddParam("b", {6, 4}, DataType::FP32, false);
  EXPECT_THROW(r.Matmul(a, b, -1, false, false), UserError);
}

// dst may alias a source (docs/isa.md): TMATMUL_ACC with C sharing A's bytes, and with C
// sharing B's, against a product computed from copies.
TEST(Matmul, PtoTmatmulWithDstAliasingASource) {
  const int n = 40;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1, 1);
  for (int which = 0; which < 2; ++which) {
    std::vector<float> x(n * n), y(n * n);
    for (auto& v : x) v = d(rng);
    for (auto& v : y) v = d(rng);
    std::vector<float> a0 = which == 0 ? x : y, b0 = which == 0 ? y : x;  // A, B before
    std::vector<float> want(n * n);
    const std::vector<float>& c0 = x;  // C is x: it aliases A (which 0) or B (which 1)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = c0[i * n + j];
        for (int k = 0; k < n; ++k) s += double(a0[i * n + k]) * b0[k * n + j];
        want[i * n + j] = float(s);
      }
    pto::TileRef<float> tx{x.data(), n, n, n, n, n}, ty{y.data(), n, n, n, n, n};
    if (which == 0)
      pto::TMATMUL_ACC(tx, tx, ty);
    else
      pto::TMATMUL_ACC(tx, ty, tx);
    for (int i = 0; i < n * n; ++i) ASSERT_NEAR(x[i], want[i], 1e-4) << "which " << which << " at " << i;
  }
}

// A loop of matmul + state update, as attention's key-block loop: the launches of successive
// iterations wait for each other point by point, the workspace between the cube and the vector
// kernel has one buffer, and workers keep their own continuations (stealing the others').
// Run with 1-3 workers on both backends (and under TSan in the sanitizer build).
TEST(Matmul, LoopOfMatmulAndStateUpdateLinksIterations) {
  const int64_t H = 6, R = 16, K = 8, C = 24, S = 5;
  Recorder r("state_loop");
  int x = r.AddParam("x", {H, S * R, K}, DataType::FP32, false);
  int w = r.AddParam("w", {H, K, C}, DataType::FP32, false);
  int acc = r.AddParam("acc", {H, R, 1}, DataType::FP32, false);
  Expr j = r.BeginLoop("j", "LOOP_s", 0, S, 1);
  r.SetCubeTileShapes({R, R}, {K, K}, {C, C});
  int s = r.Matmul(r.View(x, {0, j * R, 0}, {H, R, K}), w, -1, false, false);
  r.SetVecTileShapes({1, R, C});
  int t = r.Reduce("sum", r.BinaryScalar("mul", s, 0.5), -1, true);
  r.Assemble(r.Binary("add", acc, t), {0, 0, 0}, acc);
  r.EndLoop();
  CompiledProgram p = Compile(r.Finish(), {});
  EXPECT_FALSE(p.exec_graph.single_buffer.empty()) << PrintExecGraph(p.exec_graph);

  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  std::vector<float> xs(H * S * R * K), ws(H * K * C);
  for (auto& v : xs) v = d(rng);
  for (auto& v : ws) v = d(rng);
  std::vector<double> want(H * R, 0.0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S * R; ++i)
      for (int64_t c = 0; c < C; ++c) {
        double dot = 0;
        for (int64_t k = 0; k < K; ++k) dot += double(xs[(h * S * R + i) * K + k]) * ws[(h * K + k) * C + c];
        want[h * R + i % R] += 0.5 * dot;
      }
  Runtime rt(std::make_shared<CompiledProgram>(p));
  for (const char* mode : {"interp", "cpu"})
    for (int workers : {1, 2, 3}) {
      std::vector<float> a(H * R, 0.f);
      RunOptions o;
      o.run_mode = ParseRunMode(mode);
      o.workers = workers;
      RunStats st = rt.Run({{xs.data(), DataType::FP32, {H, S * R, K}, {}},
                            {ws.data(), DataType::FP32, {H, K, C}, {}},
                            {a.data(), DataType::FP32, {H, R, 1}, {}}},
                           {}, o);
      EXPECT_GE(st.pointwise_links, 2 * S - 1) << mode << " w=" << workers;
      EXPECT_EQ(st.control_overlapped, workers > 1) << "10 launches: the walk runs beside the workers";
      for (int64_t i = 0; i < H * R; ++i) ASSERT_NEAR(a[i], want[i], 1e-3) << mode << " w=" << workers << " at " << i;
    }
}
