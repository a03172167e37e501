// CANN PyPTO's C++ idioms of assignment and branches, on both backends: `out = expr` writes
// into an output, IF / ELSE bodies each start from the handles before the IF and merge after
// it, ELSE IF chains guard their last ELSE by every condition before it, conditions known now
// decide at once. Each checked against a plain C++ reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "pypto/pypto.h"

using namespace pypto;

namespace {

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

class AssignTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    config::ResetOptions();
    config::SetRuntimeOption("run_mode", GetParam());
  }
  void TearDown() override { config::ResetOptions(); }
};

TEST_P(AssignTest, AssigningToAnOutputWritesIt) {
  Tensor a(DT_FP32, {6, 16}, "a"), b(DT_FP32, {6, 16}, "b"), out(DT_FP32, {6, 16}, "out");
  FUNCTION("AssignOut", {a, b}, {out}) {
    TileShape::Current().SetVecTile(2, 16);
    out = Add(a, b);
  }
  auto ha = Random(96, 1), hb = Random(96, 2);
  std::vector<float> ho(96, -7.0f);
  pypto::Run("AssignOut", {HostTensor(ha.data(), DT_FP32, {6, 16}), HostTensor(hb.data(), DT_FP32, {6, 16})},
             {HostTensor(ho.data(), DT_FP32, {6, 16})});
  for (int i = 0; i < 96; ++i) ASSERT_EQ(ho[i], ha[i] + hb[i]) << i;
}

// An output passed by reference to a helper and assigned there, then read and assigned again.
void Scale(const Tensor& x, Tensor& out) {
  out = Mul(x, Element(DT_FP32, 3.0));
  out = Sub(out, x);  // reads the value just written: 2x
}

TEST_P(AssignTest, AnOutputAssignedTwiceHoldsTheLastValue) {
  Tensor x(DT_FP32, {4, 8}, "x"), y(DT_FP32, {4, 8}, "y");
  FUNCTION("AssignTwice", {x}, {y}) {
    TileShape::Current().SetVecTile(4, 8);
    Scale(x, y);
  }
  auto hx = Random(32, 3);
  std::vector<float> hy(32);
  pypto::Run("AssignTwice", {HostTensor(hx.data(), DT_FP32, {4, 8})}, {HostTensor(hy.data(), DT_FP32, {4, 8})});
  for (int i = 0; i < 32; ++i) ASSERT_FLOAT_EQ(hy[i], hx[i] * 3.0f - hx[i]) << i;
}

// CANN's TestHybridLoopIf2: r0 rebound in both bodies, read after them; out assigned per iteration.
// Each iteration also writes its r0 into a row of `rows`, so every path is checked.
TEST_P(AssignTest, IfElseBodiesStartFromTheValuesBeforeTheIf) {
  const int s = 8, loops = 8;
  Tensor t0(DT_FP32, {s, s}, "t0"), t1(DT_FP32, {s, s}, "t1"), t2(DT_FP32, {s, s}, "t2"),
      t3(DT_FP32, {s, s}, "t3"), t4(DT_FP32, {s, s}, "t4"), out(DT_FP32, {s, s}, "out"),
      rows(DT_FP32, {loops * s, s}, "rows");
  FUNCTION("HybridLoopIf", {t0, t1, t2, t3, t4}, {out, rows}) {
    TileShape::Current().SetVecTile(s, s);
    LOOP("L0", FunctionType::DYNAMIC_LOOP, i, LoopRange(loops)) {
      auto r0 = Add(t0, t1);
      r0 = Mul(r0, t1);
      IF(i < 6) { r0 = Sub(r0, t2); }
      ELSE { r0 = Sub(r0, t3); }
      out = Add(r0, t4);
      Assemble(r0, {i * s, 0}, rows);
    }
  }
  std::vector<float> h0(s * s, 11), h1(s * s, 20), h2(s * s, 30), h3(s * s, 40), h4(s * s, 50);
  std::vector<float> ho(s * s, 0), hr(loops * s * s, -1);
  auto in = [&](std::vector<float>& v) { return HostTensor(v.data(), DT_FP32, {s, s}); };
  pypto::Run("HybridLoopIf", {in(h0), in(h1), in(h2), in(h3), in(h4)},
             {in(ho), HostTensor(hr.data(), DT_FP32, {loops * s, s})});
  for (float v : ho) ASSERT_EQ(v, (11 + 20) * 20 - 40 + 50);  // the last iteration took the ELSE
  for (int i = 0; i < loops; ++i)
    for (int j = 0; j < s * s; ++j) ASSERT_EQ(hr[i * s * s + j], (11 + 20) * 20 - (i < 6 ? 30 : 40)) << i;
}

// A handle only the IF rebinds keeps its old value on the other path.
TEST_P(AssignTest, AHandleOnlyTheIfRebindsKeepsItsValueOtherwise) {
  Tensor x(DT_FP32, {5, 8}, "x"), y(DT_FP32, {5, 8}, "y");
  FUNCTION("IfOnly", {x}, {y}) {
    TileShape::Current().SetVecTile(1, 8);
    LOOP("L", FunctionType::DYNAMIC_LOOP, i, LoopRange(5)) {
      auto v = Abs(View(x, {1, 8}, {i, 0}));
      IF(i % 2 == 0) { v = Neg(v); }
      Assemble(v, {i, 0}, y);
    }
  }
  auto hx = Random(40, 5);
  std::vector<float> hy(40, 9);
  pypto::Run("IfOnly", {HostTensor(hx.data(), DT_FP32, {5, 8})}, {HostTensor(hy.data(), DT_FP32, {5, 8})});
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 8; ++j) ASSERT_EQ(hy[i * 8 + j], (i % 2 == 0 ? -1 : 1) * std::abs(hx[i * 8 + j])) << i;
}

// IF(a) {A} ELSE IF(b) {B} ELSE IF(c) {C} ELSE {D}: the last ELSE runs only when none holds.
TEST_P(AssignTest, AnElseIfChainGuardsItsLastElseByEveryCondition) {
  const int n = 7;
  Tensor x(DT_FP32, {n, 8}, "x"), y(DT_FP32, {n, 8}, "y"), z(DT_FP32, {n, 8}, "z");
  FUNCTION("Chain", {x}, {y, z}) {
    TileShape::Current().SetVecTile(1, 8);
    LOOP("L", FunctionType::DYNAMIC_LOOP, i, LoopRange(n)) {
      auto row = View(x, {1, 8}, {i, 0});
      auto v = Mul(row, Element(DT_FP32, 1.0));
      IF(i < 2) { Assemble(Mul(row, Element(DT_FP32, 2.0)), {i, 0}, y); }
      ELSE IF(i < 4) { Assemble(Mul(row, Element(DT_FP32, 3.0)), {i, 0}, y); }
      ELSE IF(i == 4) {
        Assemble(Mul(row, Element(DT_FP32, 4.0)), {i, 0}, y);
        v = Add(v, Element(DT_FP32, 100.0));
      }
      ELSE {
        Assemble(Mul(row, Element(DT_FP32, 5.0)), {i, 0}, y);
        v = Add(v, Element(DT_FP32, 1000.0));
      }
      Assemble(v, {i, 0}, z);
    }
  }
  auto hx = Random(n * 8, 6);
  std::vector<float> hy(n * 8, -1), hz(n * 8, -1);
  pypto::Run("Chain", {HostTensor(hx.data(), DT_FP32, {n, 8})},
             {HostTensor(hy.data(), DT_FP32, {n, 8}), HostTensor(hz.data(), DT_FP32, {n, 8})});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 8; ++j) {
      float f = i < 2 ? 2 : i < 4 ? 3 : i == 4 ? 4 : 5;
      ASSERT_EQ(hy[i * 8 + j], hx[i * 8 + j] * f) << i;
      ASSERT_EQ(hz[i * 8 + j], hx[i * 8 + j] + (i == 4 ? 100.0f : i > 4 ? 1000.0f : 0.0f)) << i;
    }
}

// Conditions known now (C++ bools, as CANN's tests pass flags) decide at once, chains included.
TEST_P(AssignTest, ConditionsKnownNowDecideAsCppIf) {
  Tensor x(DT_FP32, {4, 8}, "x"), y(DT_FP32, {4, 8}, "y");
  for (int pick = 0; pick < 3; ++pick) {
    bool first = pick == 0, second = pick == 1;
    FUNCTION("Flags", {x}, {y}) {
      TileShape::Current().SetVecTile(4, 8);
      IF(first) { y = Mul(x, Element(DT_FP32, 2.0)); }
      ELSE IF(second) { y = Mul(x, Element(DT_FP32, 3.0)); }
      ELSE { y = Mul(x, Element(DT_FP32, 4.0)); }
    }
    auto hx = Random(32, 7);
    std::vector<float> hy(32, -1);
    pypto::Run("Flags", {HostTensor(hx.data(), DT_FP32, {4, 8})}, {HostTensor(hy.data(), DT_FP32, {4, 8})});
    for (int i = 0; i < 32; ++i) ASSERT_EQ(hy[i], hx[i] * (pick + 2.0f)) << pick;
    EXPECT_EQ(Compile("Flags").NumKernels(), 1) << "a decided IF records one body";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AssignTest, ::testing::Values("cpu", "interp"));

std::string RecordError(const std::function<void()>& record) {
  try {
    record();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(AssignErrors, AnOutputTakesOnlyAValueOfItsShapeAndDtype) {
  config::ResetOptions();
  Tensor x(DT_FP32, {4, 8}, "x"), h(DT_FP16, {4, 8}, "h"), y(DT_FP32, {4, 8}, "y");
  std::string e = RecordError([&] {
    FUNCTION("BadShape", {x}, {y}) {
      y = Sum(x, -1, true);  // SHAPE LINE
    }
  });
  EXPECT_NE(e.find("'y' = "), std::string::npos) << e;
  EXPECT_NE(e.find("(4, 8)"), std::string::npos) << e;
  EXPECT_NE(e.find("(4, 1)"), std::string::npos) << e;
  EXPECT_NE(e.find("// SHAPE LINE"), std::string::npos) << e;
  e = RecordError([&] {
    FUNCTION("BadDtype", {x, h}, {y}) { y = Abs(h); }
  });
  EXPECT_NE(e.find("fp16(4, 8)"), std::string::npos) << e;
  EXPECT_NE(e.find("Cast(value, DT_FP32)"), std::string::npos) << e;
}

TEST(AssignErrors, AHandleTheOtherPathLeavesEmptyIsAnErrorWhenUsed) {
  config::ResetOptions();
  Tensor x(DT_FP32, {4, 8}, "x"), y(DT_FP32, {4, 8}, "y");
  std::string e = RecordError([&] {
    FUNCTION("Unset", {x}, {y}) {
      LOOP("L", FunctionType::DYNAMIC_LOOP, i, LoopRange(3)) {
        Tensor v;
        IF(i < 1) { v = Abs(x); }
        y = v;  // USE LINE
      }
    }
  });
  EXPECT_NE(e.find("holds no value of the function when the IF is not taken"), std::string::npos) << e;
  // Paths that disagree in shape cannot merge: using the handle says so.
  e = RecordError([&] {
    FUNCTION("Disagree", {x}, {y}) {
      LOOP("L", FunctionType::DYNAMIC_LOOP, i, LoopRange(3)) {
        auto v = Abs(x);
        IF(i < 1) { v = Sum(x, -1, true); }
        y = v;
      }
    }
  });
  EXPECT_NE(e.find("depends on the path taken"), std::string::npos) << e;
  EXPECT_NE(RecordError([&] {
              FUNCTION("Orphan", {x}, {y}) { ELSE { y = Abs(x); } }
            }).find("ELSE without an IF"),
            std::string::npos);
}

}  // namespace
