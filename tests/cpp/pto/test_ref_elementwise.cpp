// Reference elementwise / tile-scalar instructions: hand-computed values, random data with tails,
// every dtype, integer wrap-around and NaN handling.
#include <cmath>
#include <limits>
#include <random>

#include "test_util.hpp"

namespace {
using namespace pto_test;
namespace ref = pto::ref;

TEST(PtoRefElementwise, HandComputedFloat) {
  Buf<float> a(2, 3), b(2, 3), d(2, 3);
  const float av[] = {1, 2, 3, -4, 5, 6}, bv[] = {4, -5, 6, 2, 0.5f, -3};
  for (int i = 0; i < 6; ++i) a(i / 3, i % 3) = av[i], b(i / 3, i % 3) = bv[i];
  ref::TADD(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 0), 5);
  EXPECT_EQ(d(1, 2), 3);
  ref::TSUB(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 1), 7);
  ref::TMUL(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(1, 0), -8);
  ref::TDIV(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(1, 1), 10);
  ref::TMAX(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 1), 2);
  EXPECT_EQ(d(1, 0), 2);
  ref::TMIN(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(1, 2), -3);
  ref::TABS(d.ref(), a.ref());
  EXPECT_EQ(d(1, 0), 4);
  ref::TNEG(d.ref(), a.ref());
  EXPECT_EQ(d(0, 2), -3);
  ref::TRELU(d.ref(), a.ref());
  EXPECT_EQ(d(1, 0), 0);
  EXPECT_EQ(d(1, 1), 5);
  ref::TSQRT(d.ref(), b.ref());
  EXPECT_EQ(d(0, 0), 2);
  EXPECT_TRUE(std::isnan(d(0, 1)));
  ref::TRSQRT(d.ref(), b.ref());
  EXPECT_EQ(d(0, 0), 0.5f);
  ref::TRECIP(d.ref(), b.ref());
  EXPECT_EQ(d(1, 1), 2);
  ref::TEXP(d.ref(), a.ref());
  EXPECT_EQ(d(0, 0), float(std::exp(1.0)));
  ref::TLOG(d.ref(), b.ref());
  EXPECT_EQ(d(0, 0), float(std::log(4.0)));
  EXPECT_TRUE(std::isnan(d(0, 1)));
  ref::TADDS(d.ref(), a.ref(), 10.0f);
  EXPECT_EQ(d(1, 0), 6);
  ref::TSUBS(d.ref(), a.ref(), 1.0f);
  EXPECT_EQ(d(0, 0), 0);
  ref::TMULS(d.ref(), a.ref(), -2.0f);
  EXPECT_EQ(d(0, 2), -6);
  ref::TDIVS(d.ref(), a.ref(), 4.0f);
  EXPECT_EQ(d(0, 0), 0.25f);
  ref::TMAXS(d.ref(), a.ref(), 2.5f);
  EXPECT_EQ(d(0, 0), 2.5f);
  EXPECT_EQ(d(1, 1), 5);
  ref::TMINS(d.ref(), a.ref(), 2.5f);
  EXPECT_EQ(d(1, 0), -4);
  EXPECT_EQ(d(0, 2), 2.5f);
  ref::TEXPANDS(d.ref(), 7.5f);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(d(r, c), 7.5f);
  EXPECT_TRUE(d.padding_untouched());
}

TEST(PtoRefElementwise, NaNAndSignedZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buf<float> a(1, 4), b(1, 4), d(1, 4);
  const float av[] = {nan, 1, -0.0f, nan}, bv[] = {1, nan, 0.0f, -nan};
  for (int i = 0; i < 4; ++i) a(0, i) = av[i], b(0, i) = bv[i];
  ref::TMAX(d.ref(), a.ref(), b.ref());
  EXPECT_TRUE(std::isnan(d(0, 0)) && std::isnan(d(0, 1)) && std::isnan(d(0, 3)));
  ref::TMIN(d.ref(), a.ref(), b.ref());
  EXPECT_TRUE(std::isnan(d(0, 0)) && std::isnan(d(0, 1)));
  ref::TABS(d.ref(), a.ref());
  EXPECT_FALSE(std::signbit(d(0, 2)));
  ref::TNEG(d.ref(), b.ref());
  EXPECT_TRUE(std::signbit(d(0, 2)));
  ref::TRELU(d.ref(), a.ref());
  EXPECT_TRUE(std::isnan(d(0, 0)));
  EXPECT_EQ(d(0, 1), 1);
}

TEST(PtoRefElementwise, IntegerWrapAndDivision) {
  Buf<int8_t> a(1, 6), b(1, 6), d(1, 6);
  const int8_t av[] = {127, -128, 100, -7, 7, -128}, bv[] = {1, -1, 3, 2, 0, -1};
  for (int i = 0; i < 6; ++i) a(0, i) = av[i], b(0, i) = bv[i];
  ref::TADD(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 0), -128);  // wraps
  EXPECT_EQ(d(0, 1), 127);
  ref::TMUL(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 2), 44);  // 300 mod 256
  ref::TDIV(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 3), -3);    // truncates toward zero
  EXPECT_EQ(d(0, 4), 0);     // x / 0 := 0
  EXPECT_EQ(d(0, 5), -128);  // MIN / -1 wraps
  ref::TABS(d.ref(), a.ref());
  EXPECT_EQ(d(0, 1), -128);
  EXPECT_EQ(d(0, 3), 7);
  ref::TNEG(d.ref(), a.ref());
  EXPECT_EQ(d(0, 0), -127);
  ref::TRELU(d.ref(), a.ref());
  EXPECT_EQ(d(0, 3), 0);
  EXPECT_EQ(d(0, 4), 7);

  Buf<int64_t> x(1, 2), y(1, 2), z(1, 2);
  x(0, 0) = std::numeric_limits<int64_t>::max(), x(0, 1) = (int64_t(1) << 62) + 1;
  y(0, 0) = 1, y(0, 1) = int64_t(1) << 62;
  ref::TADD(z.ref(), x.ref(), y.ref());
  EXPECT_EQ(z(0, 0), std::numeric_limits<int64_t>::min());
  ref::TMAX(z.ref(), x.ref(), y.ref());  // exact ordering beyond double precision
  EXPECT_EQ(z(0, 1), (int64_t(1) << 62) + 1);
  ref::TMINS(z.ref(), x.ref(), int64_t(5));
  EXPECT_EQ(z(0, 0), 5);
}

// Independent expectation: arithmetic in the type's natural float path (not the reference's
// double path), rounded with the storage type's float constructor.
template <class T>
T via_float(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return T(v);
}

template <class T>
class PtoRefBinaryTyped : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, half, bfloat16>;
TYPED_TEST_SUITE(PtoRefBinaryTyped, FloatTypes);

TYPED_TEST(PtoRefBinaryTyped, RandomWithTails) {
  using T = TypeParam;
  std::mt19937 rng(42);
  for (int iter = 0; iter < 30; ++iter) {
    const int rows = 1 + rng() % 9, cols = 1 + rng() % 40;
    const int vr = 1 + rng() % rows, vc = 1 + rng() % cols;
    Buf<T> a(rows, cols, vr, vc), b(rows, cols, vr, vc), d(rows, cols, vr, vc);
    fill_random(a, rng, -100, 100);
    fill_random(b, rng, 0.5, 50);
    auto check = [&](auto op, auto fn) {
      op(d.ref(), a.ref(), b.ref());
      for (int r = 0; r < vr; ++r)
        for (int c = 0; c < vc; ++c) {
          const T want = via_float<T>(fn(float(a(r, c)), float(b(r, c))));
          ASSERT_TRUE(same(d(r, c), want)) << r << "," << c << ": " << dbl(d(r, c)) << " vs "
                                           << dbl(want);
        }
      ASSERT_TRUE(d.padding_untouched());
    };
    check([](auto... t) { ref::TADD(t...); }, [](float x, float y) { return x + y; });
    check([](auto... t) { ref::TSUB(t...); }, [](float x, float y) { return x - y; });
    check([](auto... t) { ref::TMUL(t...); }, [](float x, float y) { return x * y; });
    check([](auto... t) { ref::TDIV(t...); }, [](float x, float y) { return x / y; });
    check([](auto... t) { ref::TMAX(t...); }, [](float x, float y) { return std::max(x, y); });
    check([](auto... t) { ref::TMIN(t...); }, [](float x, float y) { return std::min(x, y); });
    const T s = via_float<T>(1.75f);
    check([s](auto d, auto a, auto) { ref::TADDS(d, a, s); },
          [](float x, float) { return x + 1.75f; });
    check([s](auto d, auto a, auto) { ref::TDIVS(d, a, s); },
          [](float x, float) { return x / 1.75f; });
    check([](auto d, auto, auto b) { ref::TSQRT(d, b); },
          [](float, float y) { return std::sqrt(y); });
    // exp/log: compare with float libm, allowing one ulp of the result type.
    ref::TEXP(d.ref(), b.ref());
    for (int r = 0; r < vr; ++r)
      for (int c = 0; c < vc; ++c) {
        const double want = std::exp(dbl(b(r, c))), got = dbl(d(r, c));
        const double ulp = std::is_same_v<T, float>  ? 0x1p-23
                           : std::is_same_v<T, half> ? 0x1p-10
                                                     : 0x1p-7;
        if (std::isinf(got)) continue;
        ASSERT_LE(std::fabs(got - want), ulp * std::fabs(want));
      }
  }
}

TEST(PtoRefElementwise, HalfRoundsPerInstruction) {
  Buf<half> a(1, 2), b(1, 2), d(1, 2);
  a(0, 0) = half(1.0f), b(0, 0) = half(0x1p-11f);    // 1 + 2^-11 is a tie -> 1.0
  a(0, 1) = half(65504.0f), b(0, 1) = half(16.0f);   // 65520 -> inf
  ref::TADD(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 0).bits, 0x3C00);
  EXPECT_EQ(d(0, 1).bits, 0x7C00);
  Buf<bfloat16> x(1, 1), y(1, 1);
  x(0, 0) = bfloat16(3.0f);
  ref::TRECIP(y.ref(), x.ref());
  EXPECT_EQ(y(0, 0).bits, bfloat16(1.0f / 3.0f).bits);
}

TEST(PtoRefElementwise, InPlaceAndShapeErrors) {
  Buf<int32_t> a(3, 5), b(3, 5, 2, 4);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) a(r, c) = r * 10 + c;
  ref::TADD(a.ref(), a.ref(), a.ref());
  EXPECT_EQ(a(2, 4), 48);
  // Source b does not cover a 3x5 destination.
  EXPECT_THROW(ref::TADD(a.ref(), a.ref(), b.ref()), pto::Error);
  // A smaller destination is fine: only its valid region is computed.
  Buf<int32_t> d(3, 5, 2, 4);
  ref::TSUB(d.ref(), a.ref(), b.ref());
  EXPECT_TRUE(d.padding_untouched());
  auto bad = a.ref();
  bad.valid_cols = 6;
  EXPECT_THROW(ref::TEXPANDS(bad, 1), pto::Error);
}

}  // namespace
