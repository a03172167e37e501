// erf and erfc of pto/simd_math.hpp (include that header, not this one).
#pragma once

#include "pto/simd_math/exp_log.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace simd {
namespace math {

// erf in float. |x| < 0.921875: |x| + |x| P(x^2), minimax P of degree 6 (relative error 2^-31).
// Above: 1 - e^(-x^2) R(|x|), R a minimax of erfc(x) e^(x^2) on [0.921875, 3.9375] of degree 8 in
// x - 2.4375 (error 0.07 ulp of the result); x^2 is split exactly (fma) so its rounding does not
// reach the exponential. erfc is at most 0.19 there, so float's exp is accurate enough.
// |x| >= 3.92 rounds to +-1.
inline vf erf(vf x) {
  using namespace detail;
  const vf a = vabs(x);
  const vf z = a * a;
  const vf ps = horner(z, 8.370097202714533e-05f, -0.0008142703445628285f, 0.005201032385230064f,
                       -0.026859398931264877f, 0.11283695697784424f, -0.37612634897232056f, 0.12837916612625122f);
  const vf small = mla(a, ps, a);
  const vf ab = sel(a > 3.9375f, cf(3.9375f), a);  // NaN stays
  const vf zb = ab * ab;
  const vf zl = fma(ab, ab, -zb);
  const vf rb = horner(ab - 2.4375f, 0.00012800800323020667f, 0.0002738059847615659f, 0.0006299053784459829f,
                       -0.0007519888458773494f, 0.002491604769602418f, -0.008809728547930717f,
                       0.026472920551896095f, -0.07755308598279953f, 0.2155541032552719f);
  const vf erfc_b = exp(-zb) * (rb - rb * zl);  // e^(-zb - zl) ~ e^(-zb) (1 - zl)
  const vf big = 1.0f - erfc_b;
  return xor_sign(sel(a < 0.921875f, small, big), sign_bit(x));
}

// erfc in double: for x >= 0, erfc(x) = t exp(-x^2 + g(t)) with t = 1 / (1 + x/2) and g a
// minimax polynomial of degree 12 in t on [0, 10.125] (absolute error 2^-32.6, so relative error
// of erfc); erfc(-x) = 2 - erfc(x). Results down to the subnormal range come out of the one
// double -> float rounding; x > 10.06 rounds to 0.
inline vf erfc(vf x) {
  using namespace detail;
  return via_double(x, [&](vd v) {
    const vd a = clamp(vabs(v), 0.0, 10.125);
    const vd t = 1.0 / mla(a, cd(0.5), cd(1.0));
    const vd g = horner(t, 0.18325679596934317, -1.354019973759064, 4.3322123725132816, -7.7540713636203763,
                        8.3765439009643866, -5.610670254008906, 2.5743573123892883, -1.0329415673072118,
                        0.12293049281962097, 0.049559569867197259, 0.37857021729185975, 0.99977852604325382,
                        -1.2655060290070453);
    const vd e = t * exp_d(mla(-a, a, g));
    return sel(v < 0.0, 2.0 - e, e);
  });
}

}  // namespace math
}  // namespace simd
}  // namespace PTO_ISA_NS
}  // namespace pto
