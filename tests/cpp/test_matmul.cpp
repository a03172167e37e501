// The cube path from C++: record a matmul + epilogue with the Recorder, check the levels (an
// AIC kernel through Mat/Left/Right/Acc tiles, a separate AIV kernel, point-wise links), and
// run it on both backends with tails in M, N and K against a scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include <pto/pto.hpp>

#include "frontend/recorder.h"
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

std::vector<float> RunLinear(const CompiledProgram& p, std::vector<float>& a, std::vector<float>& b, int64_t M, int64_t K,
                       int64_t N, const std::string& mode, int workers) {
  Runtime rt(std::make_shared<CompiledProgram>(p));
  std::vector<float> y(M * N, -1.f);
  RunOptions o;
  o.run_mode = mode;
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
    if (which == 0) pto::TMATMUL_ACC(tx, tx, ty);
    else pto::TMATMUL_ACC(tx, ty, tx);
    for (int i = 0; i < n * n; ++i) ASSERT_NEAR(x[i], want[i], 1e-4) << "which " << which << " at " << i;
  }
}
