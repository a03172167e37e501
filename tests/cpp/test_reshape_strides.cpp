// ReshapeStrides (src/runtime/reshape_strides.h): the strides of an in-place reshape of a strided
// tensor, or none, as numpy decides.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/reshape_strides.h"

namespace pypto::rt {
namespace {

using V = std::vector<int64_t>;

TEST(ReshapeStrides, DenseIsDense) {
  EXPECT_EQ(ReshapeStrides(V{4, 6}, V{6, 1}, V{24}), (V{1}));
  EXPECT_EQ(ReshapeStrides(V{4, 6}, V{6, 1}, V{2, 2, 3, 2}), (V{12, 6, 2, 1}));
}

TEST(ReshapeStrides, ACacheWithItsLastDimCutMergesItsLeadingDims) {
  // kv_cache[..., :512] of a [blocks, 128, 1, 576] cache, as [blocks * 128, 512].
  EXPECT_EQ(ReshapeStrides(V{8, 128, 1, 512}, V{128 * 576, 576, 576, 1}, V{8 * 128, 512}), (V{576, 1}));
  // and back (a unit dim takes any stride).
  EXPECT_EQ(ReshapeStrides(V{8 * 128, 512}, V{576, 1}, V{8, 128, 1, 512}), (V{128 * 576, 576, 512, 1}));
}

TEST(ReshapeStrides, MergingACutDimNeedsACopy) {
  EXPECT_TRUE(ReshapeStrides(V{8, 512}, V{576, 1}, V{8 * 512}).empty());
  EXPECT_TRUE(ReshapeStrides(V{4, 6}, V{1, 4}, V{24}).empty());  // a transpose
}

TEST(ReshapeStrides, UnitDimsAnywhere) {
  EXPECT_EQ(ReshapeStrides(V{1, 4, 1, 6}, V{99, 12, 7, 2}, V{4, 6, 1}), (V{12, 2, 2}));
  EXPECT_EQ(ReshapeStrides(V{1}, V{5}, V{1, 1}), (V{1, 1}));
}

}  // namespace
}  // namespace pypto::rt
