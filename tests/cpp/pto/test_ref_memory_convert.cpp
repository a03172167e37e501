// Reference TLOAD / TSTORE over strided 5-D views, and TCVT with round modes and saturation.
#include <cmath>
#include <limits>
#include <numeric>

#include "pto/dyn/call.hpp"
#include "test_util.hpp"

namespace {
using namespace pto_test;
using pto::RoundMode;
namespace ref = pto::ref;

TEST(PtoRefMemory, LoadStore5D) {
  // A 2x3x4x5x6 tensor; load the sub-view [1, 0:3:2, 1:3, 0:5, 1:5] -> rows 1*2*2*5 = 20, cols 4.
  const int64_t dims[5] = {2, 3, 4, 5, 6};
  std::vector<int32_t> g(2 * 3 * 4 * 5 * 6);
  std::iota(g.begin(), g.end(), 0);
  const int64_t st[5] = {360, 120, 30, 6, 1};
  pto::GlobalRef<int32_t> view{g.data() + 1 * st[0] + 0 * st[1] + 1 * st[2] + 0 * st[3] + 1,
                               {1, 2, 2, 5, 4},
                               {st[0], 2 * st[1], st[2], st[3], st[4]}};
  (void)dims;
  Buf<int32_t> t(24, 8, 20, 4);
  ref::TLOAD(t.ref(), view);
  for (int i1 = 0; i1 < 2; ++i1)
    for (int i2 = 0; i2 < 2; ++i2)
      for (int i3 = 0; i3 < 5; ++i3)
        for (int i4 = 0; i4 < 4; ++i4) {
          const int r = (i1 * 2 + i2) * 5 + i3;
          ASSERT_EQ(t(r, i4), g[360 + 2 * i1 * 120 + (1 + i2) * 30 + i3 * 6 + 1 + i4]);
        }
  EXPECT_TRUE(t.padding_untouched());
  // Store back negated into a fresh copy, then check only the view changed.
  std::vector<int32_t> h(g.size(), 0);
  pto::GlobalRef<int32_t> hv = view;
  hv.data = h.data() + (view.data - g.data());
  ref::TNEG(t.ref(), t.ref());
  ref::TSTORE(hv, t.ref());
  int changed = 0;
  for (size_t i = 0; i < h.size(); ++i)
    if (h[i] != 0) {
      ++changed;
      EXPECT_EQ(h[i], -g[i]);
    }
  EXPECT_EQ(changed, 80 - (g[view.data - g.data()] == 0));
  // Shape mismatch is an error.
  auto small = t.ref();
  small.valid_rows = 19;
  EXPECT_THROW(ref::TLOAD(small, view), pto::Error);
}

TEST(PtoRefMemory, Dense2D) {
  std::vector<half> g(5 * 7);
  for (size_t i = 0; i < g.size(); ++i) g[i] = half(float(i) * 0.5f);
  Buf<half> t(8, 8, 5, 7);
  ref::TLOAD(t.ref(), pto::make_global_2d(g.data(), 5, 7, 7));
  EXPECT_EQ(float(t(4, 6)), 17.0f);
  EXPECT_TRUE(t.padding_untouched());
}

TEST(PtoRefConvert, FloatToIntModesAndSaturation) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float in[] = {2.5f, -2.5f, 3.5f, -0.5f, 1.7f, -1.7f, 1e10f, -1e10f, nan, inf, -inf, 127.5f};
  Buf<float> s(1, 12);
  for (int i = 0; i < 12; ++i) s(0, i) = in[i];
  Buf<int32_t> d(1, 12);
  struct Case {
    RoundMode m;
    int32_t want[6];
  } cases[] = {{RoundMode::RINT, {2, -2, 4, 0, 2, -2}},   {RoundMode::ROUND, {3, -3, 4, -1, 2, -2}},
               {RoundMode::FLOOR, {2, -3, 3, -1, 1, -2}}, {RoundMode::CEIL, {3, -2, 4, 0, 2, -1}},
               {RoundMode::TRUNC, {2, -2, 3, 0, 1, -1}}};
  for (const auto& cs : cases) {
    ref::TCVT(d.ref(), s.ref(), cs.m);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(d(0, i), cs.want[i]) << int(cs.m) << " " << in[i];
    EXPECT_EQ(d(0, 6), std::numeric_limits<int32_t>::max());
    EXPECT_EQ(d(0, 7), std::numeric_limits<int32_t>::min());
    EXPECT_EQ(d(0, 8), 0);
    EXPECT_EQ(d(0, 9), std::numeric_limits<int32_t>::max());
    EXPECT_EQ(d(0, 10), std::numeric_limits<int32_t>::min());
  }
  Buf<int8_t> d8(1, 12);
  ref::TCVT(d8.ref(), s.ref());
  EXPECT_EQ(d8(0, 11), 127);  // 127.5 rounds to 128, saturates
  EXPECT_EQ(d8(0, 6), 127);
  EXPECT_EQ(d8(0, 7), -128);
  Buf<uint8_t> du(1, 12);
  ref::TCVT(du.ref(), s.ref());
  EXPECT_EQ(du(0, 1), 0);
  EXPECT_EQ(du(0, 11), 128);
  Buf<int64_t> d64(1, 12);
  ref::TCVT(d64.ref(), s.ref());
  EXPECT_EQ(d64(0, 6), 10000000000LL);
  EXPECT_EQ(d64(0, 9), std::numeric_limits<int64_t>::max());
}

TEST(PtoRefConvert, IntToIntAndBool) {
  Buf<int32_t> s(1, 5);
  const int32_t v[] = {300, -300, 5, 0, -1};
  for (int i = 0; i < 5; ++i) s(0, i) = v[i];
  Buf<int8_t> d(1, 5);
  ref::TCVT(d.ref(), s.ref());
  EXPECT_EQ(d(0, 0), 127);
  EXPECT_EQ(d(0, 1), -128);
  EXPECT_EQ(d(0, 2), 5);
  Buf<uint8_t> du(1, 5);
  ref::TCVT(du.ref(), s.ref());
  EXPECT_EQ(du(0, 0), 255);
  EXPECT_EQ(du(0, 4), 0);
  Buf<bool> b(1, 5);
  ref::TCVT(b.ref(), s.ref());
  EXPECT_TRUE(b(0, 0) && b(0, 4) && !b(0, 3));
  Buf<float> f(1, 5);
  ref::TCVT(f.ref(), b.ref());
  EXPECT_EQ(f(0, 0), 1.0f);
  EXPECT_EQ(f(0, 3), 0.0f);
}

TEST(PtoRefConvert, Unsigned64BitsBothWays) {
  // uint64 past INT64_MAX converts to float without going through int64; float -> uint64
  // saturates at 2^64 (whose bound is not 1 << 64).
  Buf<uint64_t> u(1, 4);
  const uint64_t uv[] = {~uint64_t{0}, (uint64_t{1} << 63) + 1, uint64_t{1} << 40, 0};
  for (int i = 0; i < 4; ++i) u(0, i) = uv[i];
  Buf<float> f(1, 4);
  ref::TCVT(f.ref(), u.ref());
  EXPECT_EQ(f(0, 0), 18446744073709551616.0f);
  EXPECT_EQ(f(0, 1), 9223372036854775808.0f);
  EXPECT_EQ(f(0, 2), 1099511627776.0f);
  Buf<pto::half> h(1, 4);
  ref::TCVT(h.ref(), u.ref());
  EXPECT_TRUE(std::isinf(float(h(0, 0))));
  const float in[] = {2e19f, 1.5e19f, -3.0f, std::numeric_limits<float>::quiet_NaN()};
  Buf<float> s(1, 4);
  for (int i = 0; i < 4; ++i) s(0, i) = in[i];
  Buf<uint64_t> d(1, 4);
  ref::TCVT(d.ref(), s.ref(), RoundMode::TRUNC);
  EXPECT_EQ(d(0, 0), ~uint64_t{0});
  EXPECT_EQ(d(0, 1), uint64_t(1.5e19f));
  EXPECT_EQ(d(0, 2), 0u);
  EXPECT_EQ(d(0, 3), 0u);
  Buf<uint32_t> d32(1, 4);
  ref::TCVT(d32.ref(), s.ref());
  EXPECT_EQ(d32(0, 0), ~uint32_t{0});
  EXPECT_EQ(d32(0, 2), 0u);
  EXPECT_EQ(pto::dyn::parse_dtype("u64"), pto::DType::UINT64);
  EXPECT_EQ(pto::dyn::parse_dtype("uint16"), pto::DType::UINT16);
  EXPECT_EQ(pto::dtype_size(pto::DType::UINT32), 4u);
  EXPECT_EQ(pto::dtype_of<uint16_t>(), pto::DType::UINT16);
}

TEST(PtoRefConvert, ToHalfAndBf16) {
  Buf<float> s(1, 4);
  s(0, 0) = 1.0f + 0x1p-11f, s(0, 1) = 65520.0f, s(0, 2) = 0x1p-25f, s(0, 3) = -1e9f;
  Buf<pto::half> h(1, 4);
  ref::TCVT(h.ref(), s.ref());
  EXPECT_EQ(h(0, 0).bits, 0x3C00);
  EXPECT_EQ(h(0, 1).bits, 0x7C00);
  EXPECT_EQ(h(0, 2).bits, 0x0000);
  EXPECT_EQ(h(0, 3).bits, 0xFC00);
  ref::TCVT(h.ref(), s.ref(), RoundMode::CEIL);
  EXPECT_EQ(h(0, 0).bits, 0x3C01);
  EXPECT_EQ(h(0, 2).bits, 0x0001);
  EXPECT_EQ(h(0, 3).bits, 0xFBFF);
  Buf<bfloat16> b(1, 4);
  ref::TCVT(b.ref(), h.ref());  // half -> bf16 via exact float
  EXPECT_EQ(float(b(0, 0)), 1.0f);
  EXPECT_TRUE(std::isinf(float(b(0, 1))));
  Buf<int32_t> i(1, 2);
  i(0, 0) = 16777217, i(0, 1) = -2049;
  Buf<float> f(1, 2);
  ref::TCVT(f.ref(), i.ref());
  EXPECT_EQ(f(0, 0), 16777216.0f);  // tie -> even
  Buf<half> hi(1, 2);
  ref::TCVT(hi.ref(), i.ref(), RoundMode::TRUNC);
  EXPECT_EQ(hi(0, 0).bits, 0x7BFF);  // truncation saturates at the largest finite
  EXPECT_EQ(float(hi(0, 1)), -2048.0f);
  Buf<half> back(1, 4);
  Buf<float> fb(1, 4);
  ref::TCVT(fb.ref(), h.ref());
  ref::TCVT(back.ref(), fb.ref());
  for (int c = 0; c < 4; ++c) EXPECT_EQ(back(0, c).bits, h(0, c).bits);
}

}  // namespace
