// Accuracy and special-value tests of pto/simd_math.hpp, AVX2 + FMA + F16C build, whatever the
// flags of the rest of the binary.
#pragma GCC target("avx2,fma,f16c")
#define PTO_SIMD_AVX2 1
#define MATH_SUITE(x) PtoSimdMathAvx2##x
#define MATH_NEEDS_AVX2 1
#include "simd_math.inc"

namespace {
// Without AVX2/FMA/F16C the AVX2 build cannot run: filter its suites out (the tests also skip
// themselves, in case another file's check overwrites the filter).
struct SimdMathAvx2Check {
  SimdMathAvx2Check() {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
        !__builtin_cpu_supports("f16c")) {
      std::string& f = ::testing::GTEST_FLAG(filter);
      f += (f.find('-') == std::string::npos ? "-" : ":") + std::string("PtoSimdMathAvx2*");
    }
  }
} simd_math_avx2_check;
}  // namespace
