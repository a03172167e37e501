// Fast-vs-reference differential tests (complex, layout, indexed memory), AVX2 + FMA + F16C
// build of the fast layer, whatever the flags of the rest of the binary.
#pragma GCC target("avx2,fma,f16c")
#define PTO_SIMD_AVX2 1
#define FAST_SUITE(x) PtoFastAvx2##x
#define FAST_ISA "avx2"
#include "fast_diff_complex.inc"
