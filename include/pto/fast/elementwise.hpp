// Fast elementwise, tile-scalar, ternary and compare/select instructions (pto::TADD, ...).
// Each agrees with pto::ref bit for bit, except TEXP (vectorized exp, about 1 ulp); the math
// instructions are in pto/fast/math.hpp.
#pragma once

#include "pto/fast/map.hpp"
#include "pto/ref/elementwise.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace fast {

// Elementwise operations on compute types (float for every floating type; integers wrap as in
// pto::elem). Written branch-free so the loops vectorize.
template <class V>
constexpr bool fp = std::is_floating_point_v<V> || std::is_same_v<V, simd::vf>;

// Bitwise ops reject floating types, as the reference does.
template <class V>
V int_only(V a) {
  static_assert(!sizeof(V*), "this instruction needs an integer or bool type");
  return a;
}

// OP(NAME, KVEC, FLOAT_EXPR, INT_EXPR): a functor on compute types; KVEC says it also works on
// simd::vf (for the 16-bit in-register path).
#define PTO_FAST_OP2(NAME, KVEC, FEXPR, IEXPR) \
  struct NAME {                                \
    static constexpr bool kVec = KVEC;         \
    template <class V>                         \
    V operator()(V a, V b) const {             \
      if constexpr (fp<V>)                     \
        return FEXPR;                          \
      else                                     \
        return IEXPR;                          \
    }                                          \
  };
#define PTO_FAST_OP1(NAME, KVEC, FEXPR, IEXPR) \
  struct NAME {                                \
    static constexpr bool kVec = KVEC;         \
    template <class V>                         \
    V operator()(V a) const {                  \
      if constexpr (fp<V>)                     \
        return FEXPR;                          \
      else                                     \
        return IEXPR;                          \
    }                                          \
  };
PTO_FAST_OP2(Add, true, a + b, elem::add(a, b))
PTO_FAST_OP2(Sub, true, a - b, elem::sub(a, b))
PTO_FAST_OP2(Mul, true, a* b, elem::mul(a, b))
PTO_FAST_OP2(Div, true, a / b, elem::div(a, b))
PTO_FAST_OP2(Rem, false, std::fmod(a, b), elem::rem(a, b))
PTO_FAST_OP2(And, false, int_only(a), elem::bit_and(a, b))
PTO_FAST_OP2(Or, false, int_only(a), elem::bit_or(a, b))
PTO_FAST_OP2(Xor, false, int_only(a), elem::bit_xor(a, b))
PTO_FAST_OP2(Shl, false, int_only(a), elem::shl(a, b))
PTO_FAST_OP2(Shr, false, int_only(a), elem::shr(a, b))
PTO_FAST_OP2(Lrelu, true, a < V{} ? a * b : a, a < V{} ? elem::mul(a, b) : a)  // b: slope
PTO_FAST_OP1(Abs, false, std::fabs(a), elem::abs(a))
PTO_FAST_OP1(Neg, true, -a, elem::neg(a))
PTO_FAST_OP1(Relu, true, a < V{} ? V{} : a, a < V{} ? V{} : a)
PTO_FAST_OP1(Not, false, int_only(a), elem::bit_not(a))
PTO_FAST_OP1(Identity, true, a, a)
#undef PTO_FAST_OP1
#undef PTO_FAST_OP2

// NaN-propagating max/min with the reference's choice between equal operands (the first).
struct Max {
  static constexpr bool kVec = true;
  template <class V>
  V operator()(V a, V b) const {
    V r = a < b ? b : a;
    if constexpr (fp<V>) r = b != b ? b : r, r = a != a ? a : r;
    return r;
  }
};
struct Min {
  static constexpr bool kVec = true;
  template <class V>
  V operator()(V a, V b) const {
    V r = b < a ? b : a;
    if constexpr (fp<V>) r = b != b ? b : r, r = a != a ? a : r;
    return r;
  }
};
// Scalar/tile forms: the bound scalar is the first operand.
struct RSub {
  static constexpr bool kVec = true;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (fp<V>)
      return b - a;
    else
      return elem::sub(b, a);
  }
};
struct RDiv {
  static constexpr bool kVec = true;
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (fp<V>)
      return b / a;
    else
      return elem::div(b, a);
  }
};
struct Recip {
  float operator()(float a) const { return 1.0f / a; }
};

// Binds a scalar as the second operand.
template <class Op, class V>
struct WithScalar {
  static constexpr bool kVec = Op::kVec && std::is_same_v<V, float>;
  Op op;
  V s;
  V operator()(V a) const { return op(a, s); }
  simd::vf operator()(simd::vf a) const
    requires kVec
  {
    return op(a, simd::splat(s));
  }
};

// Chunk functors with explicit SIMD (GCC does not vectorize sqrt under -fmath-errno).
struct SqrtChunk {
  void operator()(float* o, int n, const float* a) const {
    int i = 0;
#ifdef PTO_SIMD_AVX2
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_sqrt_ps(_mm256_loadu_ps(a + i)));
#endif
    for (; i < n; ++i) o[i] = std::sqrt(a[i]);
  }
};
// 1/sqrt in double, rounded once: the reference result exactly.
struct RsqrtChunk {
  void operator()(float* o, int n, const float* a) const {
    int i = 0;
#ifdef PTO_SIMD_AVX2
    for (; i + 4 <= n; i += 4) {
      const __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(a + i));
      const __m256d y = _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_sqrt_pd(x));
      _mm_storeu_ps(o + i, _mm256_cvtpd_ps(y));
    }
#endif
    for (; i < n; ++i) o[i] = float(1.0 / std::sqrt(double(a[i])));
  }
};
struct ExpChunk {
  void operator()(float* o, int n, const float* a) const { simd::exp_array(a, o, n); }
};

template <class T>
void check_float() {
  static_assert(is_float_v<T>, "this instruction needs a floating type");
}

}  // namespace fast

// ---- binary ------------------------------------------------------------------------------------
#define PTO_FAST_BINARY(NAME, OP)                               \
  template <class T>                                            \
  void NAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) { \
    fast::map(dst, fast::OP{}, src0, src1);                     \
  }
PTO_FAST_BINARY(TADD, Add)
PTO_FAST_BINARY(TSUB, Sub)
PTO_FAST_BINARY(TMUL, Mul)
PTO_FAST_BINARY(TDIV, Div)
PTO_FAST_BINARY(TMAX, Max)
PTO_FAST_BINARY(TMIN, Min)
PTO_FAST_BINARY(TREM, Rem)
PTO_FAST_BINARY(TAND, And)
PTO_FAST_BINARY(TOR, Or)
PTO_FAST_BINARY(TXOR, Xor)
PTO_FAST_BINARY(TSHL, Shl)
PTO_FAST_BINARY(TSHR, Shr)
PTO_FAST_BINARY(TPRELU, Lrelu)
#undef PTO_FAST_BINARY

// ---- unary -------------------------------------------------------------------------------------
#define PTO_FAST_UNARY(NAME, OP)              \
  template <class T>                          \
  void NAME(TileRef<T> dst, TileRef<T> src) { \
    fast::map(dst, fast::OP{}, src);          \
  }
PTO_FAST_UNARY(TABS, Abs)
PTO_FAST_UNARY(TNEG, Neg)
PTO_FAST_UNARY(TRELU, Relu)
PTO_FAST_UNARY(TNOT, Not)
#undef PTO_FAST_UNARY

#define PTO_FAST_FLOAT_UNARY(NAME, CALL)      \
  template <class T>                          \
  void NAME(TileRef<T> dst, TileRef<T> src) { \
    fast::check_float<T>();                   \
    CALL;                                     \
  }
PTO_FAST_FLOAT_UNARY(TEXP, fast::map_chunks(dst, fast::ExpChunk{}, src))
PTO_FAST_FLOAT_UNARY(TSQRT, fast::map_chunks(dst, fast::SqrtChunk{}, src))
PTO_FAST_FLOAT_UNARY(TRSQRT, fast::map_chunks(dst, fast::RsqrtChunk{}, src))
PTO_FAST_FLOAT_UNARY(TRECIP, fast::map(dst, fast::Recip{}, src))
#undef PTO_FAST_FLOAT_UNARY

// ---- tile-scalar -------------------------------------------------------------------------------
#define PTO_FAST_SCALAR(NAME, OP)                                                       \
  template <class T>                                                                    \
  void NAME(TileRef<T> dst, TileRef<T> src, std::type_identity_t<scalar_t<T>> scalar) { \
    using V = fast::calc_t<T>;                                                          \
    fast::map(dst, fast::WithScalar<fast::OP, V>{{}, V(scalar)}, src);                  \
  }
PTO_FAST_SCALAR(TADDS, Add)
PTO_FAST_SCALAR(TSUBS, Sub)
PTO_FAST_SCALAR(TMULS, Mul)
PTO_FAST_SCALAR(TDIVS, Div)
PTO_FAST_SCALAR(TMAXS, Max)
PTO_FAST_SCALAR(TMINS, Min)
PTO_FAST_SCALAR(TREMS, Rem)
PTO_FAST_SCALAR(TANDS, And)
PTO_FAST_SCALAR(TORS, Or)
PTO_FAST_SCALAR(TXORS, Xor)
PTO_FAST_SCALAR(TSHLS, Shl)
PTO_FAST_SCALAR(TSHRS, Shr)
PTO_FAST_SCALAR(TLRELU, Lrelu)
#undef PTO_FAST_SCALAR
#define PTO_FAST_SCALAR_FIRST(NAME, OP)                                                 \
  template <class T>                                                                    \
  void NAME(TileRef<T> dst, std::type_identity_t<scalar_t<T>> scalar, TileRef<T> src) { \
    using V = fast::calc_t<T>;                                                          \
    fast::map(dst, fast::WithScalar<fast::OP, V>{{}, V(scalar)}, src);                  \
  }
PTO_FAST_SCALAR_FIRST(TSUBS, RSub)
PTO_FAST_SCALAR_FIRST(TDIVS, RDiv)
#undef PTO_FAST_SCALAR_FIRST

template <class T>
void TEXPANDS(TileRef<T> dst, std::type_identity_t<scalar_t<T>> scalar) {
  ref::detail::check_tile(dst, "dst");
  // (An integer scalar is T already: through a double, int64 beyond 2^53 would round.)
  const T v = [&] {
    if constexpr (is_float_v<T>)
      return elem::from_double<T>(double(scalar));
    else
      return static_cast<T>(scalar);
  }();
  for (int r = 0; r < dst.valid_rows; ++r) std::fill_n(dst.row(r), dst.valid_cols, v);
}

// ---- ternary -----------------------------------------------------------------------------------
// TADDC / TSUBC round after each step, exactly as the two-instruction sequence does.
template <class T>
void TADDC(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, TileRef<T> src2) {
  if (src2.data == dst.data) return ref::TADDC(dst, src0, src1, src2);
  TADD(dst, src0, src1);
  TADD(dst, dst, src2);
}
template <class T>
void TSUBC(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, TileRef<T> src2) {
  if (src2.data == dst.data) return ref::TSUBC(dst, src0, src1, src2);
  TSUB(dst, src0, src1);
  TADD(dst, dst, src2);
}
template <class T>
void TFUSEDMULADD(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, TileRef<T> src2) {
  if constexpr (is_float_v<T>)
    fast::map(dst, [](float a, float b, float c) { return std::fma(a, b, c); }, src0, src1, src2);
  else
    fast::map(dst, [](T a, T b, T c) { return elem::add(elem::mul(a, b), c); }, src0, src1, src2);
}
template <class T>
void TAXPY(TileRef<T> dst, TileRef<T> src, std::type_identity_t<T> scalar) {
  using V = fast::calc_t<T>;
  const V s = V(scalar);
  if constexpr (is_float_v<T>)
    fast::map(dst, [s](float x, float y) { return std::fma(s, x, y); }, src, dst);
  else
    fast::map(dst, [s](T x, T y) { return elem::add(elem::mul(s, x), y); }, src, dst);
}

// ---- compare / select --------------------------------------------------------------------------
namespace fast {
template <CmpMode M>
struct Cmp {
  template <class V>
  bool operator()(V a, V b) const {
    if constexpr (M == CmpMode::EQ)
      return a == b;
    else if constexpr (M == CmpMode::NE)
      return a != b;
    else if constexpr (M == CmpMode::LT)
      return a < b;
    else if constexpr (M == CmpMode::LE)
      return a <= b;
    else if constexpr (M == CmpMode::GT)
      return a > b;
    else
      return a >= b;
  }
};
template <class F>
void with_cmp(CmpMode m, F f) {
  switch (m) {
    case CmpMode::EQ:
      return f(Cmp<CmpMode::EQ>{});
    case CmpMode::NE:
      return f(Cmp<CmpMode::NE>{});
    case CmpMode::LT:
      return f(Cmp<CmpMode::LT>{});
    case CmpMode::LE:
      return f(Cmp<CmpMode::LE>{});
    case CmpMode::GT:
      return f(Cmp<CmpMode::GT>{});
    case CmpMode::GE:
      return f(Cmp<CmpMode::GE>{});
  }
}
}  // namespace fast

template <class M, class T>
void TCMP(TileRef<M> mask, TileRef<T> src0, TileRef<T> src1, CmpMode mode) {
  using V = fast::calc_t<T>;
  fast::with_cmp(mode, [&](auto cmp) { fast::map(mask, [cmp](V a, V b) { return M(cmp(a, b)); }, src0, src1); });
}
template <class M, class T>
void TCMPS(TileRef<M> mask, TileRef<T> src, std::type_identity_t<T> scalar, CmpMode mode) {
  using V = fast::calc_t<T>;
  const V s = V(scalar);
  fast::with_cmp(mode, [&](auto cmp) { fast::map(mask, [cmp, s](V a) { return M(cmp(a, s)); }, src); });
}
template <class T, class M>
void TSEL(TileRef<T> dst, TileRef<M> mask, TileRef<T> src0, TileRef<T> src1) {
  using V = fast::calc_t<T>;
  fast::map(dst, [](M m, V a, V b) { return m ? a : b; }, mask, src0, src1);
}
template <class T>
void TSELS(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, int select) {
  ref::detail::check_covers(src1, dst.valid_rows, dst.valid_cols, "src1");
  const TileRef<T> src = select == 1 ? src0 : src1;
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  for (int r = 0; r < dst.valid_rows; ++r)
    if (dst.row(r) != src.row(r)) std::copy_n(src.row(r), dst.valid_cols, dst.row(r));
}

// TADDSC / TSUBSC: src0 + scalar + src1 and src0 - scalar + src1, rounded after each step.
template <class T>
void TADDSC(TileRef<T> dst, TileRef<T> src0, std::type_identity_t<T> scalar, TileRef<T> src1) {
  if (src1.data == dst.data) return ref::TADDSC(dst, src0, scalar, src1);
  TADDS(dst, src0, scalar);
  TADD(dst, dst, src1);
}
template <class T>
void TSUBSC(TileRef<T> dst, TileRef<T> src0, std::type_identity_t<T> scalar, TileRef<T> src1) {
  if (src1.data == dst.data) return ref::TSUBSC(dst, src0, scalar, src1);
  TSUBS(dst, src0, scalar);
  TADD(dst, dst, src1);
}

}  // namespace PTO_ISA_NS
}  // namespace pto
