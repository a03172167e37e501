// half / bfloat16 conversions: exhaustive round trips, an independent oracle, rounding edge cases.
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "test_util.hpp"

namespace {
using pto::bfloat16;
using pto::half;
using pto::RoundMode;

uint16_t hbits(float f) { return half(f).bits; }
uint16_t bbits(float f) { return bfloat16(f).bits; }

TEST(PtoHalf, KnownValues) {
  EXPECT_EQ(hbits(0.0f), 0x0000);
  EXPECT_EQ(hbits(-0.0f), 0x8000);
  EXPECT_EQ(hbits(1.0f), 0x3C00);
  EXPECT_EQ(hbits(-2.0f), 0xC000);
  EXPECT_EQ(hbits(65504.0f), 0x7BFF);
  EXPECT_EQ(hbits(0.333251953125f), 0x3555);
  EXPECT_EQ(hbits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(hbits(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(PtoHalf, TiesToEven) {
  EXPECT_EQ(hbits(1.0f + 0x1p-11f), 0x3C00);          // tie between 0x3C00 and 0x3C01 -> even
  EXPECT_EQ(hbits(1.0f + 3 * 0x1p-11f), 0x3C02);      // tie between 0x3C01 and 0x3C02 -> even
  EXPECT_EQ(hbits(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // just above the tie
  EXPECT_EQ(hbits(2049.0f), 0x6800);                  // 2049 -> 2048 (ulp 2)
  EXPECT_EQ(hbits(2051.0f), 0x6802);                  // 2051 -> 2052
}

TEST(PtoHalf, Overflow) {
  EXPECT_EQ(hbits(65519.996f), 0x7BFF);  // below the midpoint to 65536
  EXPECT_EQ(hbits(65520.0f), 0x7C00);    // exact midpoint, rounds to even = inf
  EXPECT_EQ(hbits(-1e6f), 0xFC00);
  EXPECT_EQ(hbits(3.4e38f), 0x7C00);
  EXPECT_EQ(half::convert(1e6f, RoundMode::TRUNC).bits, 0x7BFF);
  EXPECT_EQ(half::convert(-1e6f, RoundMode::CEIL).bits, 0xFBFF);
  EXPECT_EQ(half::convert(-1e6f, RoundMode::FLOOR).bits, 0xFC00);
  EXPECT_EQ(half::convert(65520.0f, RoundMode::ROUND).bits, 0x7C00);
}

TEST(PtoHalf, Subnormals) {
  EXPECT_EQ(hbits(0x1p-24f), 0x0001);
  EXPECT_EQ(hbits(0x1p-25f), 0x0000);             // tie between 0 and 1 ulp -> 0
  EXPECT_EQ(hbits(0x1p-25f * 1.0000001f), 0x0001);
  EXPECT_EQ(hbits(3 * 0x1p-25f), 0x0002);         // tie between 1 and 2 -> 2
  EXPECT_EQ(hbits(0x1p-14f), 0x0400);             // smallest normal
  EXPECT_EQ(hbits(0x1p-14f - 0x1p-25f), 0x0400);  // tie between 0x3FF and 0x400 -> even 0x400
  EXPECT_EQ(hbits(-0x1p-30f), 0x8000);
  EXPECT_EQ(hbits(1e-45f), 0x0000);               // float subnormal
  EXPECT_FLOAT_EQ(float(half::from_bits(0x0001)), 0x1p-24f);
  EXPECT_FLOAT_EQ(float(half::from_bits(0x83FF)), -1023 * 0x1p-24f);
}

TEST(PtoHalf, NaN) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(float(half(qnan))));
  EXPECT_TRUE(std::isnan(float(half(-qnan))));
  EXPECT_EQ(hbits(std::bit_cast<float>(0x7f800001u)) & 0x7C00, 0x7C00);  // tiny payload stays NaN
  EXPECT_NE(hbits(std::bit_cast<float>(0x7f800001u)) & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(float(half::from_bits(0x7C01))));
}

TEST(PtoHalf, ExhaustiveRoundTrip) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const half h = half::from_bits(uint16_t(b));
    const float f = h;
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float(half(f))));
      continue;
    }
    ASSERT_EQ(half(f).bits, b) << std::hex << b;
    ASSERT_EQ(half(double(f)).bits, b) << std::hex << b;  // generic path agrees
  }
}

#if defined(__FLT16_MAX__)
// GCC's _Float16 (libgcc soft conversion) is an independent correctly rounded oracle.
TEST(PtoHalf, MatchesFloat16Oracle) {
  std::mt19937 rng(1);
  auto check = [](float f) {
    const _Float16 o = static_cast<_Float16>(f);
    uint16_t ob;
    std::memcpy(&ob, &o, 2);
    if (std::isnan(f)) return;
    ASSERT_EQ(half(f).bits, ob) << f;
    ASSERT_EQ(half::convert(f, RoundMode::RINT).bits, ob) << f;
  };
  for (int i = 0; i < 2000000; ++i) check(std::bit_cast<float>(uint32_t(rng())));
  // Dense sweep over the half range and its subnormals, where all the rounding happens.
  for (uint32_t x = 0x33000000u; x < 0x47800000u; x += 97) {
    check(std::bit_cast<float>(x));
    check(-std::bit_cast<float>(x));
  }
}
#endif

// Brute-force nearest-even oracle for bf16: the two candidates around f, compared in double.
uint16_t bf16_oracle(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t lo = uint16_t(x >> 16);
  const uint16_t hi = uint16_t(lo + 1);
  const double dl = std::fabs(double(std::bit_cast<float>(uint32_t(lo) << 16)) - f);
  const double dh = std::fabs(double(std::bit_cast<float>(uint32_t(hi) << 16)) - f);
  if ((hi & 0x7f80) == 0x7f80 && (lo & 0x7f80) != 0x7f80) {
    // hi would be inf: compare against 2^128 (the next "value" in the format).
    const double dinf = std::ldexp(1.0, 128) - std::fabs(double(f));
    return dl < dinf || (dl == dinf && !(lo & 1)) ? lo : hi;
  }
  return dl < dh || (dl == dh && !(lo & 1)) ? lo : hi;
}

TEST(PtoBFloat16, KnownValues) {
  EXPECT_EQ(bbits(1.0f), 0x3F80);
  EXPECT_EQ(bbits(-0.0f), 0x8000);
  EXPECT_EQ(bbits(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(bbits(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(bbits(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(bbits(std::numeric_limits<float>::max()), 0x7F80);  // overflow -> inf
  EXPECT_EQ(bbits(std::bit_cast<float>(0x00008000u)), 0x0000);  // subnormal tie -> even 0
  EXPECT_EQ(bbits(std::bit_cast<float>(0x00018000u)), 0x0002);
  EXPECT_EQ(bfloat16::convert(std::numeric_limits<float>::max(), RoundMode::TRUNC).bits, 0x7F7F);
  const float nan_small = std::bit_cast<float>(0x7f800001u);  // payload only in low bits
  EXPECT_TRUE(std::isnan(float(bfloat16(nan_small))));
  EXPECT_TRUE(std::isnan(float(bfloat16::convert(nan_small, RoundMode::TRUNC))));
  EXPECT_EQ(bbits(std::bit_cast<float>(0xFFC12345u)) & 0xFFC1, 0xFFC1);  // sign + payload kept
}

TEST(PtoBFloat16, MatchesOracle) {
  std::mt19937 rng(2);
  for (int i = 0; i < 2000000; ++i) {
    const float f = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(bbits(f), bf16_oracle(f)) << std::hex << std::bit_cast<uint32_t>(f);
    ASSERT_EQ(bfloat16(double(f)).bits, bf16_oracle(f)) << std::hex << std::bit_cast<uint32_t>(f);
  }
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bfloat16::from_bits(uint16_t(b));
    if (!std::isnan(f)) ASSERT_EQ(bbits(f), b);
  }
}

TEST(PtoHalf, DirectedModes) {
  const float x = 1.0f + 0x1p-11f + 0x1p-13f;  // between 0x3C00 and 0x3C01, above the tie
  EXPECT_EQ(half::convert(x, RoundMode::RINT).bits, 0x3C01);
  EXPECT_EQ(half::convert(x, RoundMode::TRUNC).bits, 0x3C00);
  EXPECT_EQ(half::convert(x, RoundMode::FLOOR).bits, 0x3C00);
  EXPECT_EQ(half::convert(x, RoundMode::CEIL).bits, 0x3C01);
  EXPECT_EQ(half::convert(-x, RoundMode::FLOOR).bits, 0xBC01);
  EXPECT_EQ(half::convert(-x, RoundMode::CEIL).bits, 0xBC00);
  const float tie = 1.0f + 0x1p-11f;
  EXPECT_EQ(half::convert(tie, RoundMode::RINT).bits, 0x3C00);
  EXPECT_EQ(half::convert(tie, RoundMode::ROUND).bits, 0x3C01);
  EXPECT_EQ(half::convert(-tie, RoundMode::ROUND).bits, 0xBC01);
  // Integers round exactly once (no double rounding through float).
  EXPECT_EQ(half(int64_t(2049)).bits, 0x6800);
  EXPECT_EQ(half(int64_t(100000)).bits, 0x7C00);
  EXPECT_EQ(half::convert(int64_t(100000), RoundMode::TRUNC).bits, 0x7BFF);
  EXPECT_EQ(bfloat16(int64_t(0x7fffffffffffffffLL)).bits, 0x5F00);  // 2^63
  EXPECT_EQ(bfloat16(int64_t(257)).bits, bfloat16(256.0f).bits);    // tie -> even
  EXPECT_EQ(bfloat16(int64_t(259)).bits, bfloat16(260.0f).bits);
}

}  // namespace
