// Vectorized single-precision math on pto::simd::vf (8 lanes under AVX2, 4 in the generic build),
// called by the fast math instructions (pto/fast/math.hpp) and generated kernels:
//   exp exp2 expm1 log log2 log10 log1p  sin cos tan asin acos atan atan2(y, x)
//   sinh cosh tanh asinh acosh atanh  erf erfc cbrt pow(x, y) hypot(x, y)
//   floor ceil trunc rint (half to even)  sign copysign(x, y)
//
// Semantics are those of C99 / numpy for fp32, special inputs included: NaN in gives NaN out,
// signed zeros and infinities as C99 specifies (pow's special table, atan2's quadrants, ...).
// Results are within 2 ulp of the correctly rounded value over the whole float range, subnormal
// inputs and outputs included (1 ulp in all tests so far); results exact in mathematics (exp(0),
// log(1), sin(-0), tanh(inf), acosh(1), 2^k, ...) are exact, and the rounding functions are exact.
// Branch-free, except that sin / cos / tan test once whether any lane exceeds 2^17 and then take a
// slower path (double-precision reduction, scalar library beyond 2^28).
//
// Implementation: most functions evaluate in float with Cody-Waite reductions and minimax
// polynomials, using fused multiply-add where a product or residual has to be exact (the generic
// build, which has no FMA, forms those few through double). Where float cannot reach the
// accuracy cheaply (pow, hypot, cbrt, erfc, sinh, cosh, asinh, acosh, atanh) the function runs
// in double on the two halves of the vector and rounds once. math::exp is simd::exp_vec under
// AVX2, so that every exp of the library gives the same bits.
//
//   simd_math/common.hpp      lane helpers, fma, float <-> double halves, rounding to integers
//   simd_math/rounding.hpp    floor ceil trunc rint sign copysign
//   simd_math/exp_log.hpp     exp exp2 expm1 log log2 log10 log1p (+ the double kernels)
//   simd_math/pow.hpp         pow hypot cbrt
//   simd_math/trig.hpp        sin cos tan asin acos atan atan2
//   simd_math/hyperbolic.hpp  sinh cosh tanh asinh acosh atanh
//   simd_math/erf.hpp         erf erfc
//
// All of it lives in pto::PTO_ISA_NS::simd::math (pto::simd::math for users), each part opening
// the namespaces itself; the parts are not meant to be included on their own.
#pragma once

#include "pto/simd_math/common.hpp"
#include "pto/simd_math/rounding.hpp"
#include "pto/simd_math/exp_log.hpp"
#include "pto/simd_math/pow.hpp"
#include "pto/simd_math/trig.hpp"
#include "pto/simd_math/hyperbolic.hpp"
#include "pto/simd_math/erf.hpp"
