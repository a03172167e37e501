#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/access_index.h"

using namespace pypto;

namespace {
Access Box(int alloc, std::vector<int64_t> lo, std::vector<int64_t> hi, bool write) { return {alloc, lo, hi, write}; }
std::vector<int> Deps(const AccessIndex& ix, const Access& a) {
  std::vector<int> d;
  ix.Conflicts(a, d);
  std::sort(d.begin(), d.end());
  return d;
}
}  // namespace

TEST(AccessIndex, ReadAfterWriteWriteAfterReadAndDisjointWindows) {
  AccessIndex ix;
  ix.Add(Box(0, {0, 0}, {4, 8}, true), 1);                                       // rows 0-3 written by 1
  ix.Add(Box(0, {4, 0}, {8, 8}, true), 2);                                       // rows 4-7 written by 2
  ix.Add(Box(0, {2, 0}, {6, 8}, false), 3);                                      // rows 2-5 read by 3
  EXPECT_EQ(Deps(ix, Box(0, {3, 0}, {4, 8}, false)), (std::vector<int>{1}));     // RAW only
  EXPECT_EQ(Deps(ix, Box(0, {5, 0}, {6, 8}, true)), (std::vector<int>{2, 3}));   // WAW + WAR
  EXPECT_EQ(Deps(ix, Box(0, {8, 0}, {9, 8}, true)), (std::vector<int>{}));       // disjoint
  EXPECT_EQ(Deps(ix, Box(1, {0, 0}, {4, 8}, true)), (std::vector<int>{}));       // other alloc
  EXPECT_EQ(Deps(ix, Box(0, {0, 4}, {8, 5}, false)), (std::vector<int>{1, 2}));  // a column
}

TEST(AccessIndex, CoveringWriteRetiresOlderEntries) {
  AccessIndex ix;
  ix.Add(Box(0, {0}, {4}, true), 1);
  ix.Add(Box(0, {0}, {4}, false), 2);
  ix.Add(Box(0, {0}, {10}, true), 3);  // covers both
  EXPECT_EQ(Deps(ix, Box(0, {1}, {2}, false)), (std::vector<int>{3}));
  EXPECT_EQ(Deps(ix, Box(0, {1}, {2}, true)), (std::vector<int>{3}));
}

TEST(AccessIndex, WideEntriesAreFoundFromFarStarts) {
  AccessIndex ix;
  ix.Add(Box(0, {0}, {1000}, true), 1);
  for (int i = 0; i < 100; ++i) ix.Add(Box(0, {1000 + i}, {1001 + i}, true), 10 + i);
  EXPECT_EQ(Deps(ix, Box(0, {999}, {1000}, false)), (std::vector<int>{1}));
  EXPECT_EQ(Deps(ix, Box(0, {1050}, {1051}, false)), (std::vector<int>{60}));
}

TEST(AccessIndex, BlockWritesCutTheWholeReadsTheyOverlap) {
  // A [32, 32] buffer read whole, then written in four [16, 16] blocks, many times over: each
  // block write depends on the reads since the last write of that block, and the reads it
  // overlaps keep only their parts outside it, so nothing gathers.
  AccessIndex ix;
  int owner = 0;
  for (int round = 0; round < 50; ++round) {
    int reader = ++owner;
    ix.Add(Box(0, {0, 0}, {32, 32}, false), reader);
    for (int b = 0; b < 4; ++b) {
      int64_t r = (b / 2) * 16, c = (b % 2) * 16;
      Access w = Box(0, {r, c}, {r + 16, c + 16}, true);
      std::vector<int> want = {reader};
      if (round > 0) want.insert(want.begin(), reader - 4 + b);  // the same block's last writer
      EXPECT_EQ(Deps(ix, w), want) << "round " << round << " block " << b;
      ix.Add(w, ++owner);
    }
  }
  // A read of the bottom-right corner needs only its last writer.
  EXPECT_EQ(Deps(ix, Box(0, {20, 20}, {21, 21}, false)), (std::vector<int>{owner}));
  // A write across the middle needs the four blocks' last writers.
  EXPECT_EQ(Deps(ix, Box(0, {15, 15}, {17, 17}, true)), (std::vector<int>{owner - 3, owner - 2, owner - 1, owner}));
}
