// The native path of pypto.asc: recorded element-level streams replayed without Python.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/element_replay.h"

namespace pypto::rt {
namespace {

ElemInstr I(ElemOp op, ElemType t, int64_t dm, int64_t doff, int64_t am, int64_t aoff, int64_t bm, int64_t boff,
            int64_t n, double s = 0) {
  return {op, t, t, dm, doff, am, aoff, bm, boff, n, -1, -1, -1, -1, 0, 0, s};
}

ElemStream S(std::vector<ElemInstr> instrs, std::vector<std::vector<int64_t>> lists = {}) {
  return {std::move(instrs), std::move(lists)};
}

// Per block: x, y -> UB, add (and a scalar chain), -> z. Memories: 0 x, 1 y, 2 z, 3 UB.
TEST(ElementReplay, VaddBlocksInParallelMatchScalarCode) {
  const int blocks = 6, n = 1000;
  std::vector<float> x(blocks * n), y(blocks * n), z(blocks * n, -1.f);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(static_cast<float>(i));
    y[i] = static_cast<float>(i % 7) - 3.f;
  }
  std::vector<ElemStream> streams;
  for (int b = 0; b < blocks; ++b) {
    int64_t off = int64_t{b} * n * 4;
    streams.push_back(S({I(ElemOp::Copy, ElemType::F32, 3, 0, 0, off, -1, 0, n),
                         I(ElemOp::Copy, ElemType::F32, 3, 4096, 1, off, -1, 0, n),
                         I(ElemOp::Add, ElemType::F32, 3, 8192, 3, 0, 3, 4096, n),
                         I(ElemOp::MulS, ElemType::F32, 3, 8192, 3, 8192, -1, 0, n, 0.5),
                         I(ElemOp::MaxS, ElemType::F32, 3, 8192, 3, 8192, -1, 0, n, -1.0),
                         I(ElemOp::Copy, ElemType::F32, 2, off, 3, 8192, -1, 0, n)}));
  }
  std::vector<char*> gm = {reinterpret_cast<char*>(x.data()), reinterpret_cast<char*>(y.data()),
                           reinterpret_cast<char*>(z.data())};
  RunElementBlocks(streams, gm, 196608, 3);
  for (size_t i = 0; i < z.size(); ++i) EXPECT_EQ(z[i], std::max((x[i] + y[i]) * 0.5f, -1.f)) << i;
}

TEST(ElementReplay, MaxAndMinPropagateNanAsNumpyAndAbsClearsTheSign) {
  float in[4] = {std::numeric_limits<float>::quiet_NaN(), 1.f, -0.f, -3.f};
  float other[4] = {0.f, std::numeric_limits<float>::quiet_NaN(), 0.f, 2.f};
  float out[4], mx[4];
  std::vector<char*> gm = {reinterpret_cast<char*>(in), reinterpret_cast<char*>(other), reinterpret_cast<char*>(out),
                           reinterpret_cast<char*>(mx)};
  RunElementBlocks(
      {S({I(ElemOp::Abs, ElemType::F32, 2, 0, 0, 0, -1, 0, 4), I(ElemOp::Max, ElemType::F32, 3, 0, 0, 0, 1, 0, 4)})},
      gm, 1024, 1);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 1.f);
  EXPECT_FALSE(std::signbit(out[2]));
  EXPECT_EQ(out[3], 3.f);
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[3], 2.f);
}

// The repeat form: index lists pick the elements; bf16 computes in fp32 and rounds once; a
// scalar register loaded from memory feeds a later instruction.
TEST(ElementReplay, IndexListsBf16AndScalarRegisters) {
  std::vector<uint16_t> x = {0x3f80, 0x4000, 0x4040, 0x4080};  // bf16 1 2 3 4
  std::vector<uint16_t> z(4, 0);
  std::vector<float> scale = {0.5f};
  std::vector<char*> gm = {reinterpret_cast<char*>(x.data()), reinterpret_cast<char*>(z.data()),
                           reinterpret_cast<char*>(scale.data())};
  ElemInstr load = I(ElemOp::ScalarLoad, ElemType::F32, -1, 0, 2, 0, -1, 0, 1);
  load.aux = 0;  // register 0
  ElemInstr muls = I(ElemOp::MulS, ElemType::BF16, 1, 0, 0, 0, -1, 0, 2);
  muls.sreg = 0;
  muls.dst_idx = 0;  // z[3], z[1] = x[0], x[2] * 0.5
  muls.src0_idx = 1;
  std::vector<double> regs;
  ElemStream s = S({load, muls}, {{3, 1}, {0, 2}});
  RunElementStream(s, gm.data(), regs);
  EXPECT_EQ(z[3], 0x3f00);  // 0.5
  EXPECT_EQ(z[1], 0x3fc0);  // 1.5
  EXPECT_EQ(z[0], 0);
  EXPECT_EQ(z[2], 0);
}

}  // namespace
}  // namespace pypto::rt
