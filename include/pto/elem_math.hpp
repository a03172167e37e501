// Element semantics of the math instructions (PTO_MATH_UNARY / PTO_MATH_BINARY in
// pto/isa_list.hpp): one scalar function each, the reference the fast forms are tested against.
//
// Floating types compute in double and round once to T, so fp32 results are correctly rounded
// except in vanishingly rare cases, and fp16/bf16 results are those of fp32 arithmetic rounded
// once more (what torch computes). Special values follow C99 / numpy.
#pragma once

#include <cmath>

#include "pto/elem.hpp"

namespace pto::elem {

#define PTO_ELEM_MATH1(FN, STD)                                             \
  template <class T>                                                        \
  T FN(T a) {                                                               \
    static_assert(is_float_v<T>, #FN " needs a floating type");             \
    return from_double<T>(STD(to_double(a)));                               \
  }
PTO_ELEM_MATH1(log, std::log)
PTO_ELEM_MATH1(log2, std::log2)
PTO_ELEM_MATH1(log10, std::log10)
PTO_ELEM_MATH1(log1p, std::log1p)
PTO_ELEM_MATH1(exp2, std::exp2)
PTO_ELEM_MATH1(expm1, std::expm1)
PTO_ELEM_MATH1(sin, std::sin)
PTO_ELEM_MATH1(cos, std::cos)
PTO_ELEM_MATH1(tan, std::tan)
PTO_ELEM_MATH1(asin, std::asin)
PTO_ELEM_MATH1(acos, std::acos)
PTO_ELEM_MATH1(atan, std::atan)
PTO_ELEM_MATH1(sinh, std::sinh)
PTO_ELEM_MATH1(cosh, std::cosh)
PTO_ELEM_MATH1(tanh, std::tanh)
PTO_ELEM_MATH1(asinh, std::asinh)
PTO_ELEM_MATH1(acosh, std::acosh)
PTO_ELEM_MATH1(atanh, std::atanh)
PTO_ELEM_MATH1(erf, std::erf)
PTO_ELEM_MATH1(erfc, std::erfc)
PTO_ELEM_MATH1(cbrt, std::cbrt)
PTO_ELEM_MATH1(floor, std::floor)
PTO_ELEM_MATH1(ceil, std::ceil)
PTO_ELEM_MATH1(rint, std::nearbyint)  // ties to even, as numpy.round / torch.round
PTO_ELEM_MATH1(trunc, std::trunc)
#undef PTO_ELEM_MATH1

#define PTO_ELEM_MATH2(FN, STD)                                             \
  template <class T>                                                        \
  T FN(T a, T b) {                                                          \
    static_assert(is_float_v<T>, #FN " needs a floating type");             \
    return from_double<T>(STD(to_double(a), to_double(b)));                 \
  }
PTO_ELEM_MATH2(atan2, std::atan2)
PTO_ELEM_MATH2(hypot, std::hypot)
PTO_ELEM_MATH2(copysign, std::copysign)
#undef PTO_ELEM_MATH2

// x ** y. fp32 in double: the product y * log(x) needs more than float's precision, and
// double's pow of two floats rounds to the correctly rounded float in all but rare cases.
// Integers: exact, wrapping like repeated multiplication; a negative exponent gives 1 / x**n
// truncated (1 for x = 1, +-1 for x = -1, else 0; x = 0 gives 0).
template <class T>
T pow(T a, T b) {
  if constexpr (is_float_v<T>) {
    return from_double<T>(std::pow(to_double(a), to_double(b)));
  } else {
    if (std::cmp_less(b, 0)) {
      if (a == T(1)) return T(1);
      if constexpr (std::is_signed_v<T>)
        if (a == T(-1)) return (b & T(1)) ? T(-1) : T(1);
      return T(0);
    }
    T r = T(1), base = a;
    for (auto n = b; n != 0; n = T(n >> 1)) {
      if (n & T(1)) r = mul(r, base);
      base = mul(base, base);
    }
    return r;
  }
}

// -1, 0 or +1 (numpy.sign): NaN stays NaN, -0 gives +0; integers too.
template <class T>
constexpr T sign(T a) {
  if constexpr (is_float_v<T>) {
    const double x = to_double(a);
    return from_double<T>(x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x);
  } else {
    return T((T(0) < a) - (a < T(0)));
  }
}

// Python's floor division (numpy.floor_divide). Floats follow numpy's divmod in T's own
// arithmetic: the quotient of the exact fmod remainder, corrected to the floor, so that
// floor_div(a, b) * b + remainder(a, b) == a as nearly as T allows; x / 0 is +-inf or NaN.
// Integers: x // 0 := 0; MIN // -1 wraps to MIN.
template <class T>
T floor_div(T a, T b) {
  if constexpr (is_float_v<T>) {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const C x = C(to_double(a)), y = C(to_double(b));
    if (y == 0) return from_double<T>(double(x / y));
    C m = std::fmod(x, y);
    C d = (x - m) / y;
    if (m != 0 && ((y < 0) != (m < 0))) d -= C(1);
    C f;
    if (d != 0) {
      f = std::floor(d);
      if (d - f > C(0.5)) f += C(1);
    } else {
      f = std::copysign(C(0), x / y);
    }
    return from_double<T>(double(f));
  } else {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return wrap(T(0), a, [](auto p, auto q) { return p - q; });
    T q = T(a / b);
    if ((a % b != 0) && ((a < 0) != (b < 0))) q = T(q - 1);
    return q;
  }
}

// Python's modulo (numpy.remainder): the sign of the divisor. Floats: fmod corrected by one
// divisor when the signs differ (x % 0 is NaN, x % inf is x when the signs agree); integers:
// x % 0 := 0.
template <class T>
T remainder(T a, T b) {
  if constexpr (is_float_v<T>) {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const C x = C(to_double(a)), y = C(to_double(b));
    C m = std::fmod(x, y);
    if (m != 0) {
      if ((y < 0) != (m < 0)) m += y;
    } else {
      m = std::copysign(C(0), y);
    }
    return from_double<T>(double(m));
  } else {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return T(0);
    T m = T(a % b);
    if (m != 0 && ((m < 0) != (b < 0))) m = T(m + b);
    return m;
  }
}

// Greatest common divisor of |a| and |b| (torch.gcd / numpy.gcd; gcd(0, 0) = 0), in the wrapping
// arithmetic of T (gcd(MIN, 0) is MIN, as numpy).
template <class T>
T gcd(T a, T b) {
  static_assert(is_int_v<T>, "gcd needs an integer type");
  using U = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;
  U x = std::cmp_less(a, 0) ? U(0) - U(a) : U(a), y = std::cmp_less(b, 0) ? U(0) - U(b) : U(b);
  while (y != 0) {
    U t = x % y;
    x = y;
    y = t;
  }
  return T(x);
}

}  // namespace pto::elem
