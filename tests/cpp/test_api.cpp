// The C++ user API (include/pypto/pypto.h): FUNCTION / LOOP / IF / ELSE / UNROLL over Tensors,
// compiled and run on host buffers, against plain C++ references, on both backends.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "pypto/pypto.h"
#include "runtime/runtime.h"

using namespace pypto;

namespace {

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

class ApiTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    config::ResetOptions();
    config::SetRuntimeOption("run_mode", GetParam());
  }
  void TearDown() override { config::ResetOptions(); }
};

// The softmax: a dynamic batch, one loop iteration per batch row.
void SoftmaxCompute(Tensor& input, Tensor& output) {
  SymbolicScalar b = GetInputShape(input, 0);
  int n1 = static_cast<int>(input.GetShape()[1]), n2 = static_cast<int>(input.GetShape()[2]);
  int dim = static_cast<int>(input.GetShape()[3]);
  LOOP("L0_bIdx", FunctionType::DYNAMIC_LOOP, bIdx, LoopRange(0, b, 1)) {
    TileShape::Current().SetVecTile({1, 4, 1, 64});
    auto v = View(input, {1, n1, n2, dim}, {bIdx, 0, 0, 0});
    auto e = Exp(Sub(v, Amax(v, -1, true)));
    Assemble(Div(e, Sum(e, -1, true)), {bIdx, 0, 0, 0}, output);
  }
}

TEST_P(ApiTest, SoftmaxWithADynamicBatch) {
  Tensor x(DT_FP32, {DYNAMIC, 4, 8, 100}, "x"), y(DT_FP32, {DYNAMIC, 4, 8, 100}, "y");
  FUNCTION("Softmax", {x}, {y}) { SoftmaxCompute(x, y); }
  for (int64_t b : {3, 1}) {
    std::vector<float> hx = Random(b * 4 * 8 * 100, 7), hy(hx.size(), -1.0f);
    pypto::Run("Softmax", {HostTensor(hx.data(), DT_FP32, {b, 4, 8, 100})},
               {HostTensor(hy.data(), DT_FP32, {b, 4, 8, 100})});
    for (size_t row = 0; row < hx.size() / 100; ++row) {
      const float* in = &hx[row * 100];
      double m = *std::max_element(in, in + 100), s = 0;
      for (int j = 0; j < 100; ++j) s += std::exp(double(in[j]) - m);
      for (int j = 0; j < 100; ++j) ASSERT_NEAR(hy[row * 100 + j], std::exp(double(in[j]) - m) / s, 1e-6) << row;
    }
  }
}

TEST_P(ApiTest, MatmulWithAVectorEpilogueAndACompiledHandle) {
  const int64_t m = 40, k = 64, n = 48;
  Tensor a(DT_FP32, {m, k}, "a"), w(DT_FP32, {k, n}, "w"), bias(DT_FP32, {1, n}, "bias"), y(DT_FP32, {m, n}, "y");
  FUNCTION("Linear", {a, w, bias}, {y}) {
    TileShape::Current().SetCubeTile({32, 32}, {32, 64}, {16, 48});
    Tensor h = Matrix::Matmul(DT_FP32, a, w);
    TileShape::Current().SetVecTile(16, 48);
    Assemble(Maximum(h + bias, Element(DT_FP32, 0.0)), {0, 0}, y);
  }
  CompiledFunction f = Compile("Linear");
  EXPECT_GE(f.NumKernels(), 2);  // a cube kernel and a vector kernel
  for (unsigned seed : {1u, 2u}) {
    auto ha = Random(m * k, seed), hw = Random(k * n, seed + 10), hb = Random(n, seed + 20);
    std::vector<float> hy(m * n);
    f.Run({HostTensor(ha.data(), DT_FP32, {m, k}), HostTensor(hw.data(), DT_FP32, {k, n}),
           HostTensor(hb.data(), DT_FP32, {1, n})},
          {HostTensor(hy.data(), DT_FP32, {m, n})});
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = hb[j];
        for (int64_t t = 0; t < k; ++t) s += double(ha[i * k + t]) * hw[t * n + j];
        ASSERT_NEAR(hy[i * n + j], std::max(s, 0.0), 1e-4 * (1 + std::abs(s)));
      }
  }
}

TEST_P(ApiTest, IfElseAndReadElementsInALoop) {
  // Row i: x * 10 on the first iteration, x + (number in seq[i]) after, nothing when seq[i] < 0.
  Tensor x(DT_FP32, {6, 16}, "x"), seq(DT_INT32, {6}, "seq"), y(DT_FP32, {6, 16}, "y");
  FUNCTION("Branches", {x, seq}, {y}) {
    TileShape::Current().SetVecTile(1, 16);
    LOOP("L", FunctionType::DYNAMIC_LOOP, i, LoopRange(6)) {
      SymbolicScalar s = GetTensorData(seq, {i});
      auto row = View(x, {1, 16}, {i, 0});
      IF(IsLoopBegin(i, 0)) { Assemble(Mul(row, Element(DT_FP32, 10.0)), {i, 0}, y); }
      ELSE {
        IF(s >= 0) { Assemble(Add(row, Element(DT_FP32, 1.0)), {i, 0}, y); }
      }
    }
  }
  auto hx = Random(6 * 16, 3);
  std::vector<int32_t> hs = {5, 2, -1, 0, -7, 3};
  std::vector<float> hy(6 * 16, -5.0f);
  pypto::Run("Branches", {HostTensor(hx.data(), DT_FP32, {6, 16}), HostTensor(hs.data(), DT_INT32, {6})},
             {HostTensor(hy.data(), DT_FP32, {6, 16})});
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 16; ++j) {
      float want = i == 0 ? hx[i * 16 + j] * 10 : hs[i] >= 0 ? hx[i * 16 + j] + 1 : -5.0f;
      ASSERT_FLOAT_EQ(hy[i * 16 + j], want) << i << "," << j;
    }
}

TEST_P(ApiTest, UnrollCoversTheRangeGreedily) {
  // 11 rows with factors {4, 1}: two steps of 4 (UNROLL(4) writes 4 rows), then three of 1.
  Tensor x(DT_FP32, {11, 8}, "x"), y(DT_FP32, {11, 8}, "y");
  FUNCTION("Unrolled", {x}, {y}) {
    TileShape::Current().SetVecTile(4, 8);
    LOOP("L", FunctionType::DYNAMIC_LOOP, i, LoopRange(0, 11, 1), {4}) {
      UNROLL(4) { Assemble(Mul(View(x, {4, 8}, {i, 0}), Element(2.0)), {i, 0}, y); }
      UNROLL(1) { Assemble(Mul(View(x, {1, 8}, {i, 0}), Element(3.0)), {i, 0}, y); }
    }
  }
  auto hx = Random(11 * 8, 4);
  std::vector<float> hy(11 * 8);
  pypto::Run("Unrolled", {HostTensor(hx.data(), DT_FP32, {11, 8})}, {HostTensor(hy.data(), DT_FP32, {11, 8})});
  for (int i = 0; i < 11; ++i)
    for (int j = 0; j < 8; ++j) ASSERT_FLOAT_EQ(hy[i * 8 + j], hx[i * 8 + j] * (i < 8 ? 2.0f : 3.0f)) << i;
}

INSTANTIATE_TEST_SUITE_P(Backends, ApiTest, ::testing::Values("cpu", "interp"));

TEST(ApiErrors, NameTheUsersLineTheOpAndTheShapes) {
  config::ResetOptions();
  Tensor a(DT_FP32, {4, 8}, "a"), b(DT_FP32, {5, 8}, "b"), y(DT_FP32, {4, 8}, "y");
  try {
    FUNCTION("Bad", {a, b}, {y}) {
      Assemble(Add(a, b), {0, 0}, y);  // ERROR LINE
    }
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("add"), std::string::npos) << what;
    EXPECT_NE(what.find("(4, 8)"), std::string::npos) << what;
    EXPECT_NE(what.find("(5, 8)"), std::string::npos) << what;
    EXPECT_NE(what.find("test_api.cpp\", line"), std::string::npos) << what;
    EXPECT_NE(what.find("// ERROR LINE"), std::string::npos) << what;  // the caret shows the line
  }
  // A failed recording leaves nothing behind: the next FUNCTION works.
  FUNCTION("Good", {a}, {y}) { Assemble(Abs(a), {0, 0}, y); }
  EXPECT_NO_THROW(Compile("Good"));
}

TEST(ApiErrors, MisuseIsAClearError) {
  config::ResetOptions();
  Tensor a(DT_FP32, {4, 8}, "a"), y(DT_FP32, {4, 8}, "y"), other(DT_FP32, {4, 8}, "other");
  EXPECT_THROW(Exp(a), UserError);  // outside FUNCTION
  try {
    FUNCTION("Stranger", {a}, {y}) { Assemble(Exp(other), {0, 0}, y); }
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'other' is not part of the function 'Stranger'"), std::string::npos)
        << e.what();
  }
  try {
    pypto::Run("NoSuchFunction", {}, {});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no function named 'NoSuchFunction'"), std::string::npos);
  }
  FUNCTION("Count", {a}, {y}) { Assemble(Neg(a), {0, 0}, y); }
  std::vector<float> buf(32);
  EXPECT_THROW(pypto::Run("Count", {HostTensor(buf.data(), DT_FP32, {4, 8})}, {}), UserError);
  std::vector<float> small(8);
  try {
    pypto::Run("Count", {HostTensor(small.data(), DT_FP32, {1, 8})}, {HostTensor(buf.data(), DT_FP32, {4, 8})});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(config::SetPassOption("no_such_key", 1), UserError);
  EXPECT_THROW(config::SetRuntimeOption("run_mode", "gpu"), UserError);
  EXPECT_NO_THROW(config::SetPassOption("nbuffer_merge_mode", 0));  // PyPTO's NPU key: recorded
  config::ResetOptions();
}

TEST(ApiOptions, RunAndSchedModesAreParsedOnceByName) {
  EXPECT_EQ(ParseRunMode("cpu"), RunMode::Native);
  EXPECT_EQ(ParseRunMode("interp"), RunMode::Interp);
  EXPECT_EQ(ParseSchedMode("lifo"), SchedMode::Lifo);
  EXPECT_STREQ(RunModeName(RunMode::Interp), "interp");
  EXPECT_STREQ(SchedModeName(SchedMode::Fifo), "fifo");
  try {
    config::SetRuntimeOption("run_mode", "npu");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("runtime option run_mode=\"npu\" is not a run mode"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseSchedMode("random"), UserError);
  config::ResetOptions();
}

TEST(ApiSymbols, ArithmeticAndComparisonsArePredicates) {
  SymbolicScalar i(Expr::Var("i")), n(Expr::Var("n"));
  EXPECT_EQ((SymbolicScalar(7) / 2).Concrete(), 3);
  EXPECT_EQ((SymbolicScalar(-7) / 2).Concrete(), -4);  // floor division, as loop bounds want
  EXPECT_EQ(CeilDiv(SymbolicScalar(7), 2).Concrete(), 4);
  EXPECT_EQ((SymbolicScalar(3) < 4).Concrete(), 1);
  EXPECT_EQ((SymbolicScalar(3) == 4).Concrete(), 0);
  EXPECT_EQ((!(SymbolicScalar(3) == 4) && (SymbolicScalar(1) || 0)).Concrete(), 1);
  EXPECT_FALSE((i < n).IsConcrete());
  EXPECT_THROW((i + 1).Concrete(), UserError);
  EXPECT_EQ((i * 2 + 1 - i - i).Concrete(), 1);
}

}  // namespace
