// Rounding, sign and copysign of pto/simd_math.hpp (include that header, not this one).
// All exact; -0 and NaN are kept, values of magnitude >= 2^23 (already integers) unchanged.
#pragma once

#include "pto/simd_math/common.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {
namespace math {

#ifdef PTO_SIMD_AVX2
inline vf rint(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline vf floor(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
inline vf ceil(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
inline vf trunc(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
#else
// Round half to even: |x| + 2^23 has no fraction bits left, so the addition rounds (in the
// default nearest-even mode); NaN and |x| >= 2^23 fail the test and pass through.
inline vf rint(vf x) {
  using namespace detail;
  const vf a = vabs(x);
  return sel(a < 0x1p23f, vcopysign((a + 0x1p23f) - 0x1p23f, x), x);
}
inline vf floor(vf x) {
  const vf r = rint(x);
  return detail::sel(r > x, r - 1.0f, r);  // -0 stays -0: r > x is false
}
inline vf ceil(vf x) {
  const vf r = rint(x);
  return detail::vcopysign(detail::sel(r < x, r + 1.0f, r), x);  // (-1, 0) gives -0
}
inline vf trunc(vf x) {
  using namespace detail;
  return sel(vabs(x) < 0x1p23f, vcopysign(to_float(to_int(x)), x), x);
}
#endif

// numpy.sign: -1, +1, +0 for either zero, NaN stays NaN.
inline vf sign(vf x) {
  using namespace detail;
  const vf r = as_f((as_i(cf(1.0f)) & (x > 0.0f)) | (as_i(cf(-1.0f)) & (x < 0.0f)));
  return sel(x != x, x, r);
}
// Magnitude of x, sign bit of y (also of a NaN y), as std::copysign.
inline vf copysign(vf x, vf y) { return detail::vcopysign(x, y); }

}  // namespace math
}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
