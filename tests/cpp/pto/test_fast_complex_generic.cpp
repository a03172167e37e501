// Fast-vs-reference differential tests (complex, layout, indexed memory),
// portable (no explicit SIMD) build of the fast layer.
#define PTO_SIMD_GENERIC 1
#define FAST_SUITE(x) PtoFastGeneric##x
#define FAST_ISA "generic"
#include "fast_diff_complex.inc"
