// Fast math instructions, generated from PTO_MATH_UNARY / PTO_MATH_BINARY (pto/isa_list.hpp).
// IMPL = Vec: floating tiles go through pto::simd::math::FN a vector at a time (16-bit types
// widen to float in registers and round once), within about 2 ulp of the reference; integer
// tiles use the element function. IMPL = Elem: the element function, as the reference.
#pragma once

#include <cstring>

#include "pto/elem_math.hpp"
#include "pto/fast/map.hpp"
#include "pto/isa_list.hpp"
#include "pto/simd_math.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace fast {

// A vector function F over kW lanes as a chunk functor on float rows; the tail goes through the
// same vector code (padded), so a result does not depend on its position in the row.
template <class F>
struct VecChunk1 {
  F f;
  void operator()(float* o, int n, const float* a) const {
    int i = 0;
    for (; i + simd::kW <= n; i += simd::kW) simd::vstore(o + i, f(simd::vload(a + i)));
    if (i < n) {
      alignas(32) float t[simd::kW] = {};
      std::memcpy(t, a + i, sizeof(float) * (n - i));
      simd::vstore(t, f(simd::vload(t)));
      std::memcpy(o + i, t, sizeof(float) * (n - i));
    }
  }
  simd::vf vec(simd::vf x) const { return f(x); }
};
template <class F>
struct VecChunk2 {
  F f;
  void operator()(float* o, int n, const float* a, const float* b) const {
    int i = 0;
    for (; i + simd::kW <= n; i += simd::kW) simd::vstore(o + i, f(simd::vload(a + i), simd::vload(b + i)));
    if (i < n) {
      alignas(32) float s[simd::kW] = {}, t[simd::kW] = {};
      std::memcpy(s, a + i, sizeof(float) * (n - i));
      std::memcpy(t, b + i, sizeof(float) * (n - i));
      simd::vstore(t, f(simd::vload(s), simd::vload(t)));
      std::memcpy(o + i, t, sizeof(float) * (n - i));
    }
  }
  simd::vf vec(simd::vf x, simd::vf y) const { return f(x, y); }
};
// F with a bound scalar operand: second (f(x, s)) or first (f(s, x)).
template <class F>
struct BindScalar {
  F f;
  float s;
  bool first;
  simd::vf operator()(simd::vf x) const { return first ? f(simd::splat(s), x) : f(x, simd::splat(s)); }
};

template <class T>
inline constexpr bool vec_math_v = std::is_same_v<T, float> || simd::is16_v<T>;

template <class T, class VecF, class ElemF>
void math_unary(TileRef<T> dst, TileRef<T> src, VecF vf, ElemF ef) {
  if constexpr (vec_math_v<T>) map_chunks(dst, VecChunk1<VecF>{vf}, src);
  else map(dst, ef, src);
}
template <class T, class VecF, class ElemF>
void math_binary(TileRef<T> dst, TileRef<T> a, TileRef<T> b, VecF vf, ElemF ef) {
  if constexpr (vec_math_v<T>) map_chunks(dst, VecChunk2<VecF>{vf}, a, b);
  else map(dst, ef, a, b);
}
template <class T, class VecF, class ElemF>
void math_scalar(TileRef<T> dst, TileRef<T> src, scalar_t<T> s, bool first, VecF vf, ElemF ef) {
  using V = calc_t<T>;
  if constexpr (vec_math_v<T>) {
    map_chunks(dst, VecChunk1<BindScalar<VecF>>{{vf, float(s), first}}, src);
  } else {
    const V c = V(s);
    if (first) map(dst, [ef, c](V x) { return ef(c, x); }, src);
    else map(dst, [ef, c](V x) { return ef(x, c); }, src);
  }
}

}  // namespace fast

#define PTO_FAST_MATH_UNARY_Vec(NAME, DTYPES, FN)                                                    \
  template <class T>                                                                                 \
  void NAME(TileRef<T> dst, TileRef<T> src) {                                                        \
    fast::math_unary(                                                                                \
        dst, src, [&](simd::vf x) { return simd::math::FN(x); },                                      \
        [](fast::calc_t<T> x) { return elem::FN(x); });                                              \
  }
#define PTO_FAST_MATH_UNARY_Elem(NAME, DTYPES, FN)                                                   \
  template <class T>                                                                                 \
  void NAME(TileRef<T> dst, TileRef<T> src) {                                                        \
    fast::map(dst, [](fast::calc_t<T> x) { return elem::FN(x); }, src);                              \
  }
#define PTO_FAST_MATH_UNARY(X, NAME, DTYPES, FN, IMPL) PTO_FAST_MATH_UNARY_##IMPL(NAME, DTYPES, FN)
PTO_MATH_UNARY(PTO_FAST_MATH_UNARY, _)
#undef PTO_FAST_MATH_UNARY
#undef PTO_FAST_MATH_UNARY_Vec
#undef PTO_FAST_MATH_UNARY_Elem

#define PTO_FAST_MATH_BINARY_Vec(NAME, SNAME, FN)                                                    \
  template <class T>                                                                                 \
  void NAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {                                      \
    fast::math_binary(                                                                               \
        dst, src0, src1, [&](simd::vf x, simd::vf y) { return simd::math::FN(x, y); },                \
        [](fast::calc_t<T> x, fast::calc_t<T> y) { return elem::FN(x, y); });                        \
  }                                                                                                  \
  template <class T>                                                                                 \
  void SNAME(TileRef<T> dst, TileRef<T> src, std::type_identity_t<scalar_t<T>> scalar) {             \
    fast::math_scalar(                                                                               \
        dst, src, scalar, false, [&](simd::vf x, simd::vf y) { return simd::math::FN(x, y); },        \
        [](fast::calc_t<T> x, fast::calc_t<T> y) { return elem::FN(x, y); });                        \
  }                                                                                                  \
  template <class T>                                                                                 \
  void SNAME(TileRef<T> dst, std::type_identity_t<scalar_t<T>> scalar, TileRef<T> src) {             \
    fast::math_scalar(                                                                               \
        dst, src, scalar, true, [&](simd::vf x, simd::vf y) { return simd::math::FN(x, y); },         \
        [](fast::calc_t<T> x, fast::calc_t<T> y) { return elem::FN(x, y); });                        \
  }
#define PTO_FAST_MATH_BINARY_Elem(NAME, SNAME, FN)                                                   \
  template <class T>                                                                                 \
  void NAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {                                      \
    fast::map(dst, [](fast::calc_t<T> x, fast::calc_t<T> y) { return elem::FN(x, y); }, src0, src1); \
  }                                                                                                  \
  template <class T>                                                                                 \
  void SNAME(TileRef<T> dst, TileRef<T> src, std::type_identity_t<scalar_t<T>> scalar) {             \
    using V = fast::calc_t<T>;                                                                       \
    const V s = V(scalar);                                                                           \
    fast::map(dst, [s](V x) { return elem::FN(x, s); }, src);                                        \
  }                                                                                                  \
  template <class T>                                                                                 \
  void SNAME(TileRef<T> dst, std::type_identity_t<scalar_t<T>> scalar, TileRef<T> src) {             \
    using V = fast::calc_t<T>;                                                                       \
    const V s = V(scalar);                                                                           \
    fast::map(dst, [s](V x) { return elem::FN(s, x); }, src);                                        \
  }
#define PTO_FAST_MATH_BINARY(X, NAME, SNAME, DTYPES, FN, IMPL) PTO_FAST_MATH_BINARY_##IMPL(NAME, SNAME, FN)
PTO_MATH_BINARY(PTO_FAST_MATH_BINARY, _)
#undef PTO_FAST_MATH_BINARY
#undef PTO_FAST_MATH_BINARY_Vec
#undef PTO_FAST_MATH_BINARY_Elem

}  // namespace PTO_ISA_NS
}  // namespace pto
