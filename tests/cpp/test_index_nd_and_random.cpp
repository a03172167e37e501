// The compiler's own data-addressed and random instructions, shared by generated kernels and the
// interpreter: TGATHERND (include/pypto/index_nd.hpp) and TPHILOX (include/pypto/random.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "pypto/index_nd.hpp"
#include "pypto/random.hpp"

using namespace pypto_kernel;

namespace {
std::vector<float> Iota(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = float(i);
  return v;
}
}  // namespace

TEST(GatherND, RowsOfAStridedWindowByIndex) {
  // src: a [5, 3] window of a [5, 8] tensor (row stride 8); gather rows 4, 0, 4 of it.
  std::vector<float> base = Iota(40);
  const int64_t shape[] = {5, 3}, stride[] = {8, 1};
  const int32_t index[] = {4, 4, 4, 0, 0, 0, 4, 4, 4};
  const int64_t tile[] = {3, 3}, valid[] = {3, 3}, start[] = {0, 0};
  std::vector<float> dst(9, -1);
  GatherND<float, int32_t>(reinterpret_cast<char*>(dst.data()), reinterpret_cast<const char*>(base.data()), shape,
                           stride, 2, reinterpret_cast<const char*>(index), tile, valid, start, 0, "gather", "");
  EXPECT_EQ(dst, (std::vector<float>{32, 33, 34, 0, 1, 2, 32, 33, 34}));
}

TEST(GatherND, AlongTheLastDimAndAPartialTile) {
  std::vector<float> base = Iota(12);  // [3, 4]
  const int64_t shape[] = {3, 4}, stride[] = {4, 1};
  const int32_t index[] = {3, 0, 9, 9, 1, 1, 9, 9};  // tile [2, 4], valid [2, 2]: 9s are not read
  const int64_t tile[] = {2, 4}, valid[] = {2, 2}, start[] = {1, 0};
  std::vector<float> dst(8, -1);
  GatherND<float, int32_t>(reinterpret_cast<char*>(dst.data()), reinterpret_cast<const char*>(base.data()), shape,
                           stride, 2, reinterpret_cast<const char*>(index), tile, valid, start, 1, "gather", "");
  EXPECT_EQ(dst, (std::vector<float>{7, 4, -1, -1, 9, 9, -1, -1}));
}

TEST(GatherND, AnIndexOrPositionOutsideTheTensorThrowsAndReadsNothing) {
  std::vector<float> base = Iota(12);
  const int64_t shape[] = {3, 4}, stride[] = {4, 1};
  const int64_t tile[] = {1, 4}, valid[] = {1, 4}, start[] = {0, 0};
  std::vector<float> dst(4, -1);
  const int32_t bad[] = {3, 3, 3, 3};
  try {
    GatherND<float, int32_t>(reinterpret_cast<char*>(dst.data()), reinterpret_cast<const char*>(base.data()), shape,
                             stride, 2, reinterpret_cast<const char*>(bad), tile, valid, start, 0, "pypto.gather",
                             "line 7");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "pypto.gather: index 3 is out of range [0, 3) along dim 0\nline 7");
  }
  const int32_t ok[] = {1, 1, 1, 1};
  const int64_t wide[] = {1, 5}, late[] = {0, 0};
  auto wide_tile = [&] {  // a tile reaching past the tensor's columns
    GatherND<float, int32_t>(reinterpret_cast<char*>(dst.data()), reinterpret_cast<const char*>(base.data()), shape,
                             stride, 2, reinterpret_cast<const char*>(ok), wide, wide, late, 0, "g", "");
  };
  EXPECT_THROW(wide_tile(), std::invalid_argument);
  EXPECT_EQ(dst, (std::vector<float>(4, -1)));
}

TEST(Philox, WordsOfTheReferenceGenerator) {
  // Philox-4x32-10, counter (block 0, offset 1), key 1234: PyPTO's documented uniform example.
  uint32_t ctr[4] = {0, 0, 1, 0};
  Philox4x32x10(ctr, 1234, 0);
  EXPECT_EQ(ctr[0], 0xd115a128u);
  EXPECT_EQ(ctr[1], 0x52fc7c75u);
  EXPECT_EQ(ctr[2], 0xc7f33f17u);
  EXPECT_EQ(ctr[3], 0x0f1539dbu);
}

TEST(Philox, UniformValuesDependOnlyOnTheFlatIndex) {
  std::vector<float> whole(8), tail(5);
  PhiloxUniform<float>(reinterpret_cast<char*>(whole.data()), 8, 0, 1234, 1);
  PhiloxUniform<float>(reinterpret_cast<char*>(tail.data()), 5, 3, 1234, 1);  // starts mid-block
  EXPECT_FLOAT_EQ(whole[0], float(0xd115a128u & 0x7fffff) / 8388608.0f);
  EXPECT_FLOAT_EQ(whole[0], 0.1689806f);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(whole[3 + i], tail[i]) << i;
  // A key and offset past 2^63 (their bit patterns as int64): the second 64-bit halves matter.
  std::vector<pto::bfloat16> b(2);
  PhiloxUniform<pto::bfloat16>(reinterpret_cast<char*>(b.data()), 2, 0, int64_t(0xFFFFFFFFFFFFFFFBull),
                               int64_t((1ull << 40) + 3));
  EXPECT_EQ(float(b[0]), float(0x4cf43ce4u & 0x7f) / 128);
  EXPECT_EQ(float(b[1]), float(0x711e00c7u & 0x7f) / 128);
}
