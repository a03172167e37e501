// Reference reductions, expands and fused broadcast-binary instructions.
#include <cmath>
#include <limits>
#include <random>

#include "test_util.hpp"

namespace {
using namespace pto_test;
namespace ref = pto::ref;

TEST(PtoRefAxis, HandComputed) {
  Buf<float> s(3, 4, 2, 3), rd(3, 1, 2, 1), cd(1, 4, 1, 3);
  const float v[2][3] = {{1, -2, 3}, {4, 5, -6}};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) s(r, c) = v[r][c];
  ref::TROWSUM(rd.ref(), s.ref());
  EXPECT_EQ(rd(0, 0), 2);
  EXPECT_EQ(rd(1, 0), 3);
  ref::TROWMAX(rd.ref(), s.ref());
  EXPECT_EQ(rd(0, 0), 3);
  EXPECT_EQ(rd(1, 0), 5);
  ref::TROWMIN(rd.ref(), s.ref());
  EXPECT_EQ(rd(0, 0), -2);
  EXPECT_EQ(rd(1, 0), -6);
  ref::TCOLSUM(cd.ref(), s.ref());
  EXPECT_EQ(cd(0, 0), 5);
  EXPECT_EQ(cd(0, 1), 3);
  EXPECT_EQ(cd(0, 2), -3);
  ref::TCOLMAX(cd.ref(), s.ref());
  EXPECT_EQ(cd(0, 2), 3);
  ref::TCOLMIN(cd.ref(), s.ref());
  EXPECT_EQ(cd(0, 1), -2);
  EXPECT_TRUE(rd.padding_untouched());
  EXPECT_TRUE(cd.padding_untouched());

  Buf<float> d(3, 4, 2, 3);
  rd(0, 0) = 10, rd(1, 0) = 20;
  cd(0, 0) = 1, cd(0, 1) = 2, cd(0, 2) = 4;
  ref::TROWEXPAND(d.ref(), rd.ref());
  EXPECT_EQ(d(1, 2), 20);
  ref::TCOLEXPAND(d.ref(), cd.ref());
  EXPECT_EQ(d(1, 2), 4);
  ref::TROWEXPANDADD(d.ref(), s.ref(), rd.ref());
  EXPECT_EQ(d(1, 2), 14);
  ref::TROWEXPANDSUB(d.ref(), s.ref(), rd.ref());
  EXPECT_EQ(d(0, 1), -12);
  ref::TROWEXPANDMUL(d.ref(), s.ref(), rd.ref());
  EXPECT_EQ(d(1, 1), 100);
  ref::TROWEXPANDDIV(d.ref(), s.ref(), rd.ref());
  EXPECT_EQ(d(1, 0), 0.2f);
  ref::TROWEXPANDMAX(d.ref(), s.ref(), rd.ref());
  EXPECT_EQ(d(0, 0), 10);
  ref::TROWEXPANDMIN(d.ref(), s.ref(), rd.ref());
  EXPECT_EQ(d(1, 2), -6);
  ref::TCOLEXPANDADD(d.ref(), s.ref(), cd.ref());
  EXPECT_EQ(d(1, 2), -2);
  ref::TCOLEXPANDSUB(d.ref(), s.ref(), cd.ref());
  EXPECT_EQ(d(1, 1), 3);
  ref::TCOLEXPANDMUL(d.ref(), s.ref(), cd.ref());
  EXPECT_EQ(d(0, 2), 12);
  ref::TCOLEXPANDDIV(d.ref(), s.ref(), cd.ref());
  EXPECT_EQ(d(0, 1), -1);
  ref::TCOLEXPANDMAX(d.ref(), s.ref(), cd.ref());
  EXPECT_EQ(d(0, 0), 1);
  ref::TCOLEXPANDMIN(d.ref(), s.ref(), cd.ref());
  EXPECT_EQ(d(1, 0), 1);
  EXPECT_TRUE(d.padding_untouched());
}

TEST(PtoRefAxis, AliasingSources) {
  // TCOLEXPANDADD with src1 being dst's own first row: every row must see the original row.
  Buf<int32_t> t(3, 2);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) t(r, c) = r + 1;
  ref::TCOLEXPANDADD(t.ref(), t.ref(), t.ref());
  EXPECT_EQ(t(0, 0), 2);
  EXPECT_EQ(t(2, 1), 4);
  // TCOLSUM writing into the first row of its own source.
  Buf<int32_t> u(3, 2);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) u(r, c) = r + 1;
  auto row0 = u.ref();
  row0.valid_rows = 1;
  ref::TCOLSUM(row0, u.ref());
  EXPECT_EQ(u(0, 0), 6);
  EXPECT_EQ(u(0, 1), 6);
}

TEST(PtoRefAxis, NaNAndIntegers) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buf<float> s(1, 3), d(1, 1);
  s(0, 0) = 1, s(0, 1) = nan, s(0, 2) = 3;
  ref::TROWMAX(d.ref(), s.ref());
  EXPECT_TRUE(std::isnan(d(0, 0)));
  Buf<int8_t> i(2, 3), id(2, 1);
  for (int c = 0; c < 3; ++c) i(0, c) = 100, i(1, c) = int8_t(-100 + c);
  ref::TROWSUM(id.ref(), i.ref());
  EXPECT_EQ(id(0, 0), int8_t(300 - 256));  // wraps like the elementwise adds
  ref::TROWMIN(id.ref(), i.ref());
  EXPECT_EQ(id(1, 0), -100);
  Buf<uint8_t> u(2, 2), ud(1, 2);
  u(0, 0) = 200, u(1, 0) = 100, u(0, 1) = 3, u(1, 1) = 4;
  ref::TCOLMAX(ud.ref(), u.ref());
  EXPECT_EQ(ud(0, 0), 200);
  ref::TCOLSUM(ud.ref(), u.ref());
  EXPECT_EQ(ud(0, 0), 44);
}

template <class T>
class PtoRefAxisTyped : public ::testing::Test {};
using Types = ::testing::Types<float, half, bfloat16, int32_t, int16_t>;
TYPED_TEST_SUITE(PtoRefAxisTyped, Types);

TYPED_TEST(PtoRefAxisTyped, RandomWithTails) {
  using T = TypeParam;
  std::mt19937 rng(7);
  for (int iter = 0; iter < 30; ++iter) {
    const int rows = 1 + rng() % 12, cols = 1 + rng() % 70;
    const int vr = 1 + rng() % rows, vc = 1 + rng() % cols;
    Buf<T> s(rows, cols, vr, vc), rd(rows, 1, vr, 1), cd(1, cols, 1, vc);
    fill_random(s, rng, -20, 20);
    ref::TROWSUM(rd.ref(), s.ref());
    for (int r = 0; r < vr; ++r) {
      double want = 0;
      for (int c = 0; c < vc; ++c) want += dbl(s(r, c));
      ASSERT_TRUE(same(rd(r, 0), pto::elem::from_double<T>(want)));
    }
    ref::TCOLMAX(cd.ref(), s.ref());
    for (int c = 0; c < vc; ++c) {
      double want = -1e300;
      for (int r = 0; r < vr; ++r) want = std::max(want, dbl(s(r, c)));
      ASSERT_EQ(dbl(cd(0, c)), want);
    }
    ref::TROWMIN(rd.ref(), s.ref());
    for (int r = 0; r < vr; ++r) {
      double want = 1e300;
      for (int c = 0; c < vc; ++c) want = std::min(want, dbl(s(r, c)));
      ASSERT_EQ(dbl(rd(r, 0)), want);
    }
    Buf<T> d(rows, cols, vr, vc);
    ref::TROWEXPANDSUB(d.ref(), s.ref(), rd.ref());
    for (int r = 0; r < vr; ++r)
      for (int c = 0; c < vc; ++c)
        ASSERT_TRUE(same(d(r, c), pto::elem::sub(s(r, c), rd(r, 0))));
    ASSERT_TRUE(d.padding_untouched());
    ASSERT_TRUE(rd.padding_untouched());
    ASSERT_TRUE(cd.padding_untouched());
  }
}

}  // namespace
