// Element-level semantics of every instruction: one scalar function per operation and dtype.
// The reference tile implementations are loops over these; fast implementations must agree.
//
// Floating types compute in double and round once to T. For + - * / sqrt that equals computing in
// the type itself (double has > 2p+2 bits, so double rounding is innocuous); for transcendentals it
// gives the correctly rounded result except in vanishingly rare cases. Integers wrap (two's
// complement) except where noted.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "pto/types.hpp"

namespace pto::elem {

template <class T>
constexpr double to_double(T v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) return double(float(v));
  else return double(v);
}

// The value of T nearest to v (ties to even); NaN stays NaN, overflow gives inf.
template <class T>
constexpr T from_double(double v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) return T(v);
  else return static_cast<T>(v);  // double -> float rounds to nearest even
}

// ---- conversion (TCVT) ----------------------------------------------------------------------

inline double round_int(double x, RoundMode mode) {
  switch (mode) {
    case RoundMode::RINT: return std::nearbyint(x);  // default FP environment: ties to even
    case RoundMode::ROUND: return std::round(x);
    case RoundMode::FLOOR: return std::floor(x);
    case RoundMode::CEIL: return std::ceil(x);
    case RoundMode::TRUNC: return std::trunc(x);
  }
  return x;
}

// Converts one value. float -> int rounds by `mode` then saturates (NaN -> 0); int -> int
// saturates; anything -> bool is `!= 0`; -> float types rounds once by `mode`.
template <class D, class S>
D convert(S v, RoundMode mode = RoundMode::RINT) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool>) {
    return to_double(v) != 0;
  } else if constexpr (std::is_same_v<S, bool>) {
    return D(float(v ? 1 : 0));
  } else if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16>) {
    if constexpr (std::is_same_v<S, half> || std::is_same_v<S, bfloat16>)
      return D::convert(float(v), mode);
    else
      return D::convert(v, mode);
  } else if constexpr (std::is_same_v<D, float> || std::is_same_v<D, double>) {
    if constexpr (std::is_same_v<S, half> || std::is_same_v<S, bfloat16> ||
                  std::is_same_v<D, double>)
      return D(to_double(v));  // exact
    else if constexpr (std::is_same_v<S, double>)
      return std::bit_cast<float>(uint32_t(detail::double_to_format<8, 23>(v, mode)));
    else if constexpr (std::is_unsigned_v<S> && sizeof(S) == 8)  // above INT64_MAX too
      return std::bit_cast<float>(uint32_t(detail::round_to_format<8, 23>(false, uint64_t(v), 0, mode)));
    else
      return std::bit_cast<float>(uint32_t(detail::int64_to_format<8, 23>(int64_t(v), mode)));
  } else if constexpr (is_float_v<S>) {  // float -> int
    const double x = to_double(v);
    if (x != x) return D(0);
    const double r = round_int(x, mode);
    constexpr double hi = [] {  // 2^digits: the first value above D's range (2^64 for uint64)
      double h = 1;
      for (int i = 0; i < std::numeric_limits<D>::digits; ++i) h *= 2;
      return h;
    }();
    constexpr double lo = std::is_signed_v<D> ? -hi : 0.0;
    if (r >= hi) return std::numeric_limits<D>::max();
    if (r < lo) return std::numeric_limits<D>::min();
    return D(r);
  } else {  // int -> int
    if (std::cmp_greater(v, std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    if (std::cmp_less(v, std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    return D(v);
  }
}

// ---- integer helpers -------------------------------------------------------------------------

// Unsigned type at least as wide as int, so that wrapping arithmetic is never UB.
template <class T>
using wrap_t = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;

template <class T, class F>
constexpr T wrap(T a, T b, F f) {
  return T(f(wrap_t<T>(a), wrap_t<T>(b)));
}

// ---- binary ----------------------------------------------------------------------------------

template <class T>
constexpr T add(T a, T b) {
  if constexpr (is_float_v<T>) return from_double<T>(to_double(a) + to_double(b));
  else return wrap(a, b, [](auto x, auto y) { return x + y; });
}
template <class T>
constexpr T sub(T a, T b) {
  if constexpr (is_float_v<T>) return from_double<T>(to_double(a) - to_double(b));
  else return wrap(a, b, [](auto x, auto y) { return x - y; });
}
template <class T>
constexpr T mul(T a, T b) {
  if constexpr (is_float_v<T>) return from_double<T>(to_double(a) * to_double(b));
  else return wrap(a, b, [](auto x, auto y) { return x * y; });
}
// Integer division truncates; x / 0 is defined as 0 and MIN / -1 wraps to MIN.
template <class T>
constexpr T div(T a, T b) {
  if constexpr (is_float_v<T>) {
    return from_double<T>(to_double(a) / to_double(b));
  } else {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return wrap(T(0), a, [](auto x, auto y) { return x - y; });
    return T(a / b);
  }
}
// Ordering without precision loss (int64 does not fit a double).
template <class T>
constexpr bool less(T a, T b) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) return float(a) < float(b);
  else return a < b;
}
template <class T>
constexpr bool is_nan(T a) {
  if constexpr (is_float_v<T>) return to_double(a) != to_double(a);
  else return false;
}
// max/min propagate NaN (like numpy.maximum / numpy.minimum).
template <class T>
constexpr T max(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return less(a, b) ? b : a;
}
template <class T>
constexpr T min(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return less(b, a) ? b : a;
}


// ---- more binary / ternary -------------------------------------------------------------------

// Remainder with the sign of the dividend (C fmod / %, numpy.fmod); integer x % 0 := 0.
template <class T>
T rem(T a, T b) {
  if constexpr (is_float_v<T>) {
    return from_double<T>(std::fmod(to_double(a), to_double(b)));  // exact: no rounding
  } else {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return T(0);
    return T(a % b);
  }
}

// Fused multiply-add a*b + c, rounded once for fp32; fp16/bf16 compute the fused float result and
// round it to the type (what a float FMA unit followed by a narrowing store does).
template <class T>
T fma(T a, T b, T c) {
  if constexpr (std::is_same_v<T, float>) return std::fmaf(a, b, c);
  else if constexpr (is_float_v<T>) return T(std::fmaf(float(a), float(b), float(c)));
  else return add(mul(a, b), c);
}

// Bitwise ops on integers; logical ops on bool.
template <class T>
constexpr T bit_not(T a) {
  if constexpr (std::is_same_v<T, bool>) return !a;
  else return T(~a);
}
template <class T>
constexpr T bit_and(T a, T b) { return T(a & b); }
template <class T>
constexpr T bit_or(T a, T b) { return T(a | b); }
template <class T>
constexpr T bit_xor(T a, T b) { return T(a ^ b); }

// Shifts by a per-element amount; amounts outside [0, bits) give 0 (shl) or the sign fill (shr).
// shr is arithmetic for signed types, logical for unsigned ones.
template <class T>
constexpr bool shift_out_of_range(T n) {
  return std::cmp_less(n, 0) || std::cmp_greater_equal(n, sizeof(T) * 8);
}
template <class T>
constexpr T shl(T a, T n) {
  static_assert(is_int_v<T>, "TSHL needs an integer type");
  if (shift_out_of_range(n)) return T(0);
  return T(wrap_t<T>(a) << int(n));
}
template <class T>
constexpr T shr(T a, T n) {
  static_assert(is_int_v<T>, "TSHR needs an integer type");
  if (shift_out_of_range(n)) return T(std::cmp_less(a, 0) ? -1 : 0);
  return T(a >> int(n));
}

// relu with a slope for negative inputs (TLRELU with a scalar slope, TPRELU with a tile).
template <class T>
T lrelu(T a, T slope) {
  return less(a, T(0)) ? mul(a, slope) : a;
}

// ---- compare ---------------------------------------------------------------------------------

// IEEE comparisons: every comparison with NaN is false except NE.
template <class T>
constexpr bool compare(T a, T b, CmpMode m) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return compare(float(a), float(b), m);
  } else {
    switch (m) {
      case CmpMode::EQ: return a == b;
      case CmpMode::NE: return a != b;
      case CmpMode::LT: return a < b;
      case CmpMode::LE: return a <= b;
      case CmpMode::GT: return a > b;
      case CmpMode::GE: return a >= b;
    }
    return false;
  }
}

// ---- unary -----------------------------------------------------------------------------------

template <class T>
T exp(T a) {
  static_assert(is_float_v<T>, "TEXP needs a floating type");
  return from_double<T>(std::exp(to_double(a)));
}
template <class T>
T sqrt(T a) {
  static_assert(is_float_v<T>, "TSQRT needs a floating type");
  return from_double<T>(std::sqrt(to_double(a)));
}
template <class T>
T rsqrt(T a) {
  static_assert(is_float_v<T>, "TRSQRT needs a floating type");
  return from_double<T>(1.0 / std::sqrt(to_double(a)));
}
template <class T>
T recip(T a) {
  static_assert(is_float_v<T>, "TRECIP needs a floating type");
  return from_double<T>(1.0 / to_double(a));
}
// abs/neg act on the sign bit for floats (so NaN and -0 behave like IEEE abs/negate); integers
// wrap (abs(MIN) == MIN).
template <class T>
constexpr T abs(T a) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return T::from_bits(uint16_t(a.bits & 0x7fff));
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(a);
  } else if constexpr (std::is_signed_v<T>) {
    return a < 0 ? wrap(T(0), a, [](auto x, auto y) { return x - y; }) : a;
  } else {
    return a;
  }
}
template <class T>
constexpr T neg(T a) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return T::from_bits(uint16_t(a.bits ^ 0x8000));
  } else if constexpr (std::is_floating_point_v<T>) {
    return -a;
  } else {
    return wrap(T(0), a, [](auto x, auto y) { return x - y; });
  }
}
// relu(x) = x < 0 ? 0 : x; NaN passes through.
template <class T>
constexpr T relu(T a) {
  return less(a, T(0)) ? T(0) : a;
}

}  // namespace pto::elem
