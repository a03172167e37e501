// Fast-vs-reference differential tests (elementwise), AVX2 + FMA + F16C build of
// the fast layer, whatever the flags of the rest of the binary.
#pragma GCC target("avx2,fma,f16c")
#define PTO_SIMD_AVX2 1
#define FAST_SUITE(x) PtoFastAvx2##x
#define FAST_ISA "avx2"
#include "fast_diff_elementwise.inc"

namespace {
// Without AVX2/FMA/F16C the AVX2 build cannot run: filter its suites out.
struct Avx2Check {
  Avx2Check() {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
        !__builtin_cpu_supports("f16c"))
      ::testing::GTEST_FLAG(filter) = "-PtoFastAvx2*";
  }
} avx2_check;
}  // namespace
