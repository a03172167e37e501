// Reference elementwise instructions: binary (tile op tile), unary, tile-scalar, TEXPANDS.
#pragma once

#include <type_traits>

#include "pto/ref/common.hpp"

namespace pto::ref {

// dst = src0 op src1 on dst's valid region; sources must cover it. dst may alias a source.
#define PTO_REF_BINARY(NAME, FN)                                              \
  template <class T>                                                          \
  void NAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {               \
    detail::binary(dst, src0, src1, [](T x, T y) { return elem::FN(x, y); }); \
  }
PTO_REF_BINARY(TADD, add)
PTO_REF_BINARY(TSUB, sub)
PTO_REF_BINARY(TMUL, mul)
PTO_REF_BINARY(TDIV, div)
PTO_REF_BINARY(TMAX, max)
PTO_REF_BINARY(TMIN, min)
PTO_REF_BINARY(TREM, rem)
PTO_REF_BINARY(TAND, bit_and)
PTO_REF_BINARY(TOR, bit_or)
PTO_REF_BINARY(TXOR, bit_xor)
PTO_REF_BINARY(TSHL, shl)
PTO_REF_BINARY(TSHR, shr)
PTO_REF_BINARY(TPRELU, lrelu)  // src1 holds the per-element negative slope
#undef PTO_REF_BINARY

#define PTO_REF_UNARY(NAME, FN)                               \
  template <class T>                                          \
  void NAME(TileRef<T> dst, TileRef<T> src) {                 \
    detail::unary(dst, src, [](T x) { return elem::FN(x); }); \
  }
PTO_REF_UNARY(TEXP, exp)
PTO_REF_UNARY(TABS, abs)
PTO_REF_UNARY(TNEG, neg)
PTO_REF_UNARY(TSQRT, sqrt)
PTO_REF_UNARY(TRSQRT, rsqrt)
PTO_REF_UNARY(TRECIP, recip)
PTO_REF_UNARY(TRELU, relu)
PTO_REF_UNARY(TNOT, bit_not)
#undef PTO_REF_UNARY

// dst = src op scalar. The scalar takes no part in deduction: TADDS(t, t, 1) works for T = float.
// 16-bit tiles compute x op scalar in float and round once to T (scalar_t<T> is float).
#define PTO_REF_SCALAR(NAME, FN)                                                        \
  template <class T>                                                                    \
  void NAME(TileRef<T> dst, TileRef<T> src, std::type_identity_t<scalar_t<T>> scalar) { \
    detail::unary(dst, src, [scalar](T x) {                                             \
      if constexpr (std::is_same_v<scalar_t<T>, T>)                                     \
        return elem::FN(x, scalar);                                                     \
      else                                                                              \
        return elem::from_double<T>(double(elem::FN(float(x), scalar)));                \
    });                                                                                 \
  }
PTO_REF_SCALAR(TADDS, add)
PTO_REF_SCALAR(TSUBS, sub)
PTO_REF_SCALAR(TMULS, mul)
PTO_REF_SCALAR(TDIVS, div)
PTO_REF_SCALAR(TMAXS, max)
PTO_REF_SCALAR(TMINS, min)
PTO_REF_SCALAR(TREMS, rem)
PTO_REF_SCALAR(TANDS, bit_and)
PTO_REF_SCALAR(TORS, bit_or)
PTO_REF_SCALAR(TXORS, bit_xor)
PTO_REF_SCALAR(TSHLS, shl)
PTO_REF_SCALAR(TSHRS, shr)
PTO_REF_SCALAR(TLRELU, lrelu)  // scalar is the negative slope

// Scalar/tile forms (the second TSUBS / TDIVS overloads): dst = scalar op src.
#define PTO_REF_SCALAR_FIRST(NAME, FN)                                                  \
  template <class T>                                                                    \
  void NAME(TileRef<T> dst, std::type_identity_t<scalar_t<T>> scalar, TileRef<T> src) { \
    detail::unary(dst, src, [scalar](T x) {                                             \
      if constexpr (std::is_same_v<scalar_t<T>, T>)                                     \
        return elem::FN(T(scalar), x);                                                  \
      else                                                                              \
        return elem::from_double<T>(double(elem::FN(scalar, float(x))));                \
    });                                                                                 \
  }
PTO_REF_SCALAR_FIRST(TSUBS, sub)
PTO_REF_SCALAR_FIRST(TDIVS, div)
#undef PTO_REF_SCALAR_FIRST
#undef PTO_REF_SCALAR

// dst = scalar on dst's valid region.
template <class T>
void TEXPANDS(TileRef<T> dst, std::type_identity_t<scalar_t<T>> scalar) {
  // (An integer scalar is T already: through a double, int64 beyond 2^53 would round.)
  const T v = [&] {
    if constexpr (is_float_v<T>)
      return elem::from_double<T>(double(scalar));
    else
      return static_cast<T>(scalar);
  }();
  detail::for_each(dst, [v](int, int) { return v; });
}

// Ternary forms. TADDC = src0 + src1 + src2 and TSUBC = src0 - src1 + src2, each step rounded to
// T (they equal the two-instruction sequences). TFUSEDMULADD = src0 * src1 + src2, fused.
template <class T>
void TADDC(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, TileRef<T> src2) {
  detail::ternary(dst, src0, src1, src2, [](T a, T b, T c) { return elem::add(elem::add(a, b), c); });
}
template <class T>
void TSUBC(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, TileRef<T> src2) {
  detail::ternary(dst, src0, src1, src2, [](T a, T b, T c) { return elem::add(elem::sub(a, b), c); });
}
template <class T>
void TFUSEDMULADD(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, TileRef<T> src2) {
  detail::ternary(dst, src0, src1, src2, [](T a, T b, T c) { return elem::fma(a, b, c); });
}
// TADDSC = src0 + scalar + src1 and TSUBSC = src0 - scalar + src1, rounded after each step.
template <class T>
void TADDSC(TileRef<T> dst, TileRef<T> src0, std::type_identity_t<T> scalar, TileRef<T> src1) {
  detail::binary(dst, src0, src1, [scalar](T a, T b) { return elem::add(elem::add(a, scalar), b); });
}
template <class T>
void TSUBSC(TileRef<T> dst, TileRef<T> src0, std::type_identity_t<T> scalar, TileRef<T> src1) {
  detail::binary(dst, src0, src1, [scalar](T a, T b) { return elem::add(elem::sub(a, scalar), b); });
}
// TAXPY: dst = scalar * src + dst (fused, like BLAS axpy with y = dst).
template <class T>
void TAXPY(TileRef<T> dst, TileRef<T> src, std::type_identity_t<T> scalar) {
  detail::binary(dst, src, dst, [scalar](T x, T y) { return elem::fma(scalar, x, y); });
}

}  // namespace pto::ref
