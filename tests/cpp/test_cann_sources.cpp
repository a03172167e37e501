// C++ written as CANN PyPTO's operator sources are (its headers, namespace npu::tile_fwk, its
// accessor and enum names, `x = Cast(x, ...)` on a parameter, a dynamic LOOP with an empty unroll
// list and submitBeforeLoop), through include/cann: recorded, run on both backends and checked
// against plain C++ references. scripts/run_cann_cpp.py compiles CANN's own sources the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "interface/inner/tilefwk.h"
#include "tilefwk/tilefwk.h"

using namespace npu::tile_fwk;

namespace npu::tile_fwk {

// Softmax over the last dim, computed in fp32 whatever the input dtype.
Tensor TestSoftmax(const Tensor& operand) {
  auto dtype = operand.GetStorage()->Datatype();
  Tensor x = operand;
  if (dtype != DataType::DT_FP32) x = Cast(operand, DataType::DT_FP32);
  auto e = Exp(Sub(x, RowMaxExpand(x)));
  auto y = Div(e, RowSumExpand(e));
  if (dtype != y.GetStorage()->Datatype()) y = Cast(y, dtype);
  return y;
}

void TestSoftmaxDynamic(Tensor& input, Tensor& output) {
  FUNCTION("CANN_SOFTMAX", {input}, {output}) {
    SymbolicScalar b = GetInputShape(input, 0);
    int n = input.GetShape()[1], dim = input.GetShape()[2];
    LOOP("L0", FunctionType::DYNAMIC_LOOP, bIdx, LoopRange(0, b, 1), {}, true) {
      TileShape::Current().SetVecTile({1, 4, 64});
      std::vector<SymbolicScalar> offset = {bIdx, 0, 0};
      auto view = View(input, {1, n, dim}, offset);
      Assemble(TestSoftmax(view), offset, output);
    }
  }
}

// RMS norm with a gamma of the last dim, the reciprocal through Full and Div.
Tensor TestRmsNorm(const Tensor& operand, const Tensor& gamma, float epsilon) {
  auto x = Cast(operand, DataType::DT_FP32);
  int rank = operand.GetShape().size();
  std::vector<int64_t> shape(rank, 1);
  shape[rank - 1] = gamma.GetShape()[0];
  auto g = Cast(Reshape(gamma, shape), DataType::DT_FP32);
  auto y = Mul(x, x);
  y = Mul(y, Element(DataType::DT_FP32, 1.0f / operand.GetShape()[rank - 1]));
  y = Sum(y, -1, true);
  y = Add(y, Element(DataType::DT_FP32, epsilon));
  y = Sqrt(y);
  Element one(DataType::DT_FP32, 1.0f);
  y = Div(Full(one, DT_FP32, y.GetShape()), y);
  y = Mul(g, Mul(x, y));
  return Cast(y, operand.GetStorage()->Datatype());
}

// The sigmoid assigns to its (reference) parameter: a handle rebound, the input never written.
Tensor TestSigmoid(Tensor& input) {
  auto dtype = input.GetStorage()->Datatype();
  if (dtype != DT_FP32) input = Cast(input, DataType::DT_FP32);
  auto res = Add(Exp(Mul(input, Element(DataType::DT_FP32, -1.0))), Element(DataType::DT_FP32, 1.0));
  res = Div(Full(Element(DataType::DT_FP32, 1.0f), DataType::DT_FP32, res.GetShape()), res);
  if (dtype != DT_FP32) res = Cast(res, dtype);
  return res;
}

}  // namespace npu::tile_fwk

namespace {

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

class CannSourceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    config::ResetOptions();
    config::SetRuntimeOption("run_mode", GetParam());
  }
  void TearDown() override { config::ResetOptions(); }
};

TEST_P(CannSourceTest, SoftmaxWithADynamicBatch) {
  Tensor in(DataType::DT_FP32, {DYNAMIC, 4, 64}, "in"), out(DataType::DT_FP32, {DYNAMIC, 4, 64}, "out");
  TestSoftmaxDynamic(in, out);
  for (int64_t b : {3, 1}) {
    auto hx = Random(b * 4 * 64, 11);
    std::vector<float> hy(hx.size(), -1);
    pypto::Run("CANN_SOFTMAX", {HostTensor(hx.data(), DT_FP32, {b, 4, 64})}, {HostTensor(hy.data(), DT_FP32, {b, 4, 64})});
    for (int64_t row = 0; row < b * 4; ++row) {
      const float* x = &hx[row * 64];
      double m = *std::max_element(x, x + 64), s = 0;
      for (int j = 0; j < 64; ++j) s += std::exp(double(x[j]) - m);
      for (int j = 0; j < 64; ++j) ASSERT_NEAR(hy[row * 64 + j], std::exp(double(x[j]) - m) / s, 2e-7) << row;
    }
  }
}

TEST_P(CannSourceTest, RmsNormWithGamma) {
  Tensor x(DT_FP32, {8, 32}, "x"), gamma(DT_FP32, {32}, "gamma"), y(DT_FP32, {8, 32}, "y");
  FUNCTION("CANN_RMSNORM", {x, gamma}, {y}) {
    TileShape::Current().SetVecTile({4, 32});
    y = TestRmsNorm(x, gamma, 1e-6f);  // CANN's assignment into the output
  }
  auto hx = Random(8 * 32, 12), hg = Random(32, 13);
  std::vector<float> hy(8 * 32, -1);
  pypto::Run("CANN_RMSNORM", {HostTensor(hx.data(), DT_FP32, {8, 32}), HostTensor(hg.data(), DT_FP32, {32})},
      {HostTensor(hy.data(), DT_FP32, {8, 32})});
  for (int i = 0; i < 8; ++i) {
    double ms = 0;
    for (int j = 0; j < 32; ++j) ms += double(hx[i * 32 + j]) * hx[i * 32 + j] / 32;
    double r = 1 / std::sqrt(ms + 1e-6);
    for (int j = 0; j < 32; ++j) ASSERT_NEAR(hy[i * 32 + j], hg[j] * hx[i * 32 + j] * r, 1e-5) << i;
  }
}

TEST_P(CannSourceTest, SigmoidAssignsItsParameterNotTheInput) {
  Tensor x(DT_FP32, {4, 16}, "x"), y(DT_FP32, {4, 16}, "y");
  FUNCTION("CANN_SIGMOID", {x}, {y}) {
    TileShape::Current().SetVecTile({4, 16});
    Tensor in = x;
    Assemble(TestSigmoid(in), {0, 0}, y);
  }
  auto hx = Random(64, 14), keep = hx;
  std::vector<float> hy(64);
  pypto::Run("CANN_SIGMOID", {HostTensor(hx.data(), DT_FP32, {4, 16})}, {HostTensor(hy.data(), DT_FP32, {4, 16})});
  for (int i = 0; i < 64; ++i) {
    ASSERT_NEAR(hy[i], 1 / (1 + std::exp(-double(hx[i]))), 1e-6) << i;
    ASSERT_EQ(hx[i], keep[i]);
  }
}

TEST_P(CannSourceTest, CastModesRoundAsCanns) {
  Tensor x(DT_FP32, {1, 16}, "x"), y(DT_INT32, {6, 16}, "y"), z(DT_FP32, {1, 16}, "z");
  FUNCTION("CANN_CAST", {x}, {y, z}) {
    TileShape::Current().SetVecTile({1, 16});
    int row = 0;
    for (CastMode m : {CAST_NONE, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC})
      Assemble(Cast(x, DataType::DT_INT32, m, SaturationMode::ON), {row++, 0}, y);
    z = Cast(x, DataType::DT_FP32, CAST_ROUND);  // to its own dtype: to an integer, ties away
  }
  std::vector<float> hx = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, -2.7f, 2.7f,
                           0.0f,  -0.0f, 3.49f, -3.51f, 1e10f, -1e10f, 7.5f, -7.5f};
  std::vector<int32_t> hy(96);
  std::vector<float> hz(16);
  pypto::Run("CANN_CAST", {HostTensor(hx.data(), DT_FP32, {1, 16})},
      {HostTensor(hy.data(), DT_INT32, {6, 16}), HostTensor(hz.data(), DT_FP32, {1, 16})});
  auto sat = [](double v) { return static_cast<int32_t>(std::max(-2147483648.0, std::min(2147483647.0, v))); };
  for (int j = 0; j < 16; ++j) {
    double v = hx[j];
    double away = std::trunc(v) + (std::abs(v - std::trunc(v)) >= 0.5 ? (v > 0 ? 1 : -1) : 0);
    ASSERT_EQ(hy[0 * 16 + j], sat(std::trunc(v))) << "CAST_NONE truncates into an integer, " << v;
    ASSERT_EQ(hy[1 * 16 + j], sat(std::nearbyint(v))) << v;
    ASSERT_EQ(hy[2 * 16 + j], sat(away)) << v;
    ASSERT_EQ(hy[3 * 16 + j], sat(std::floor(v))) << v;
    ASSERT_EQ(hy[4 * 16 + j], sat(std::ceil(v))) << v;
    ASSERT_EQ(hy[5 * 16 + j], sat(std::trunc(v))) << v;
    ASSERT_EQ(hz[j], static_cast<float>(away)) << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CannSourceTest, ::testing::Values("cpu", "interp"));

}  // namespace
