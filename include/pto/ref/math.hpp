// Reference math instructions, generated from PTO_MATH_UNARY / PTO_MATH_BINARY
// (pto/isa_list.hpp): each applies its pto::elem function to every element of dst's valid region.
#pragma once

#include <type_traits>

#include "pto/elem_math.hpp"
#include "pto/isa_list.hpp"
#include "pto/ref/common.hpp"

namespace pto::ref {

namespace detail {
// fp16/bf16 with a float scalar compute in float and round once, as the other tile-scalar
// instructions do.
template <class T, class F>
T with_scalar(T x, scalar_t<T> s, bool scalar_first, F f) {
  if constexpr (std::is_same_v<scalar_t<T>, T>) {
    return scalar_first ? f(s, x) : f(x, s);
  } else {
    const float a = float(x);
    return elem::from_double<T>(double(scalar_first ? f(s, a) : f(a, s)));
  }
}
}  // namespace detail

#define PTO_REF_MATH_UNARY(X, NAME, DTYPES, FN, IMPL)                     \
  template <class T>                                                      \
  void NAME(TileRef<T> dst, TileRef<T> src) {                             \
    detail::unary(dst, src, [](T x) { return elem::FN(x); });             \
  }
PTO_MATH_UNARY(PTO_REF_MATH_UNARY, _)
#undef PTO_REF_MATH_UNARY

// dst = FN(src0, src1); dst = FN(src, scalar); dst = FN(scalar, src) (the scalar-first form).
#define PTO_REF_MATH_BINARY(X, NAME, SNAME, DTYPES, FN, IMPL)                                        \
  template <class T>                                                                                 \
  void NAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {                                      \
    detail::binary(dst, src0, src1, [](T x, T y) { return elem::FN(x, y); });                        \
  }                                                                                                  \
  template <class T>                                                                                 \
  void SNAME(TileRef<T> dst, TileRef<T> src, std::type_identity_t<scalar_t<T>> scalar) {             \
    detail::unary(dst, src, [scalar](T x) {                                                          \
      return detail::with_scalar(x, scalar, false, [](auto a, auto b) { return elem::FN(a, b); });   \
    });                                                                                              \
  }                                                                                                  \
  template <class T>                                                                                 \
  void SNAME(TileRef<T> dst, std::type_identity_t<scalar_t<T>> scalar, TileRef<T> src) {             \
    detail::unary(dst, src, [scalar](T x) {                                                          \
      return detail::with_scalar(x, scalar, true, [](auto a, auto b) { return elem::FN(a, b); });    \
    });                                                                                              \
  }
PTO_MATH_BINARY(PTO_REF_MATH_BINARY, _)
#undef PTO_REF_MATH_BINARY

}  // namespace pto::ref
