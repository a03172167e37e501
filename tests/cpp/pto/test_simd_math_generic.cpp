// Accuracy and special-value tests of pto/simd_math.hpp, portable (SSE2, no FMA) build.
#define PTO_SIMD_GENERIC 1
#define MATH_SUITE(x) PtoSimdMathGeneric##x
#include "simd_math.inc"
