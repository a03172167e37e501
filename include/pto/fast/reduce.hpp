// Fast axis instructions: row/column reductions, expands and fused broadcast-binary forms.
// Sums and products accumulate in float (like the NPU), so they differ from the reference
// (double) by rounding only; max/min, integer reductions and the expands match it exactly.
#pragma once

#include <limits>

#include "pto/fast/elementwise.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace fast {

enum class Red { SUM, PROD, MAX, MIN };

// Accumulator over a stream of compute-type values, kept in kLanes independent lanes so the loop
// vectorizes without reassociating (no -ffast-math needed).
template <Red R, class V>
struct LaneAcc {
  static constexpr int kLanes = 32;
  static constexpr bool kFloat = std::is_floating_point_v<V>;
  // Integer sums/products wrap, so they run in the unsigned type; max/min compare in V.
  using A = typename std::conditional_t<kFloat || R == Red::MAX || R == Red::MIN,
                                        std::type_identity<V>, std::make_unsigned<std::conditional_t<
                                            (sizeof(V) < sizeof(int)), int, V>>>::type;
  A acc[kLanes];
  bool nan = false;
  LaneAcc() { std::fill_n(acc, kLanes, init()); }
  static A init() {
    if constexpr (R == Red::SUM) return A(0);
    else if constexpr (R == Red::PROD) return A(1);
    else if constexpr (kFloat) return R == Red::MAX ? -INFINITY : INFINITY;
    else return R == Red::MAX ? std::numeric_limits<V>::lowest() : std::numeric_limits<V>::max();
  }
  static A op(A a, A x) {
    if constexpr (R == Red::SUM) return A(a + x);
    else if constexpr (R == Red::PROD) return A(a * x);
    else if constexpr (R == Red::MAX) return x > a ? x : a;
    else return x < a ? x : a;
  }
  void add(const V* x, int n) {
    int i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] = op(acc[j], A(x[i + j]));
    for (int j = 0; i + j < n; ++j) acc[j] = op(acc[j], A(x[i + j]));
    if constexpr (kFloat && (R == Red::MAX || R == Red::MIN)) {
      bool any = false;
      for (int k = 0; k < n; ++k) any |= x[k] != x[k];
      nan |= any;
    }
  }
  V get() {
    for (int w = kLanes / 2; w > 0; w /= 2)  // pairwise combine
      for (int j = 0; j < w; ++j) acc[j] = op(acc[j], acc[j + w]);
    if constexpr (kFloat)
      if (nan) return V(NAN);
    return V(acc[0]);
  }
};

template <Red R, class T>
void row_reduce(TileRef<T> dst, TileRef<T> src) {
  static_assert(!std::is_same_v<T, bool>, "reductions need a numeric type");
  ref::detail::check_tile(dst, "dst");
  PTO_CHECK(dst.valid_cols >= 1, "dst must have a valid column");
  ref::detail::check_covers(src, dst.valid_rows, 0, "src");
  using V = calc_t<T>;
  for (int r = 0; r < dst.valid_rows; ++r) {
    LaneAcc<R, V> acc;
    const T* x = src.row(r);
    if constexpr (is16_v<T>) {
      alignas(32) float buf[kChunk];
      for (int i = 0; i < src.valid_cols; i += kChunk) {
        const int m = std::min(kChunk, src.valid_cols - i);
        simd::to_float(x + i, buf, m);
        acc.add(buf, m);
      }
    } else {
      acc.add(x, src.valid_cols);
    }
    const V v = acc.get();
    if constexpr (is16_v<T>) dst.at(r, 0) = T(v);
    else dst.at(r, 0) = v;
  }
}

template <Red R, class T>
void col_reduce(TileRef<T> dst, TileRef<T> src) {
  static_assert(!std::is_same_v<T, bool>, "reductions need a numeric type");
  ref::detail::check_tile(dst, "dst");
  PTO_CHECK(dst.valid_rows >= 1, "dst must have a valid row");
  ref::detail::check_covers(src, 0, dst.valid_cols, "src");
  using V = calc_t<T>;
  using L = LaneAcc<R, V>;
  for (int c0 = 0; c0 < dst.valid_cols; c0 += kChunk) {
    const int m = std::min(kChunk, dst.valid_cols - c0);
    typename L::A acc[kChunk];
    alignas(32) float buf[is16_v<T> ? kChunk : 1];
    std::fill_n(acc, m, L::init());
    bool nan = false;
    for (int r = 0; r < src.valid_rows; ++r) {
      const V* x;
      if constexpr (is16_v<T>) {
        simd::to_float(src.row(r) + c0, buf, m);
        x = buf;
      } else {
        x = src.row(r) + c0;
      }
      for (int c = 0; c < m; ++c) acc[c] = L::op(acc[c], typename L::A(x[c]));
      if constexpr (std::is_floating_point_v<V> && (R == Red::MAX || R == Red::MIN)) {
        bool any = false;
        for (int c = 0; c < m; ++c) any |= x[c] != x[c];
        nan |= any;
      }
    }
    // NaN is rare: recompute the affected columns with the reference instead of tracking each.
    T* out = dst.row(0) + c0;
    for (int c = 0; c < m; ++c) {
      if constexpr (is16_v<T>) out[c] = T(float(acc[c]));
      else out[c] = T(acc[c]);
    }
    if (nan) {
      TileRef<T> d{out, 1, m, m, 1, m};
      TileRef<T> s{src.data + c0, src.rows, m, src.stride, src.valid_rows, m};
      if constexpr (R == Red::MAX) ref::TCOLMAX(d, s);
      else ref::TCOLMIN(d, s);
    }
  }
}

// dst(r, c) = op(src0(r, c), src1(r, 0)) / op(src0(r, c), src1(0, c)), op a chunk functor
// f(out, n, a, b_row) or, for rows, a scalar functor bound per row.
template <bool ROW, class T, class Op>
void expand_binary(TileRef<T> dst, TileRef<T> a, TileRef<T> b, Op op) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(a, dst.valid_rows, dst.valid_cols, "src0");
  if (ROW) ref::detail::check_covers(b, dst.valid_rows, 1, "src1");
  else ref::detail::check_covers(b, 1, dst.valid_cols, "src1");
  using V = calc_t<T>;
  if constexpr (ROW) {
    for (int r = 0; r < dst.valid_rows; ++r) {
      const V s = V(b.at(r, 0));
      auto f = Each<WithScalar<Op, V>>{{op, s}};
      run_row(dst.row(r), dst.valid_cols, f, static_cast<const T*>(a.row(r)));
    }
  } else {
    // b's row may be dst's row 0: copy it first.
    std::vector<T> brow(b.row(0), b.row(0) + dst.valid_cols);
    auto f = Each<Op>{op};
    for (int r = 0; r < dst.valid_rows; ++r)
      run_row(dst.row(r), dst.valid_cols, f, static_cast<const T*>(a.row(r)),
              static_cast<const T*>(brow.data()));
  }
}

// exp(round_T(a - b)) on float chunks, b a scalar (row form) or an array (column form).
template <class T>
struct ExpDif {
  static void finish(float* o, int n) {
    if constexpr (is16_v<T>) {  // round the difference to T, as TSUB would
      alignas(32) T t[kChunk];
      simd::from_float(o, t, n);
      simd::to_float(t, o, n);
    }
    simd::exp_array(o, o, n);
  }
  void operator()(float* o, int n, const float* a, const float* b) const {
    for (int i = 0; i < n; ++i) o[i] = a[i] - b[i];
    finish(o, n);
  }
};
template <class T>
struct ExpDifScalar {
  float s;
  void operator()(float* o, int n, const float* a) const {
    for (int i = 0; i < n; ++i) o[i] = a[i] - s;
    ExpDif<T>::finish(o, n);
  }
};

}  // namespace fast

template <class T> void TROWSUM(TileRef<T> dst, TileRef<T> src) { fast::row_reduce<fast::Red::SUM>(dst, src); }
template <class T> void TROWPROD(TileRef<T> dst, TileRef<T> src) { fast::row_reduce<fast::Red::PROD>(dst, src); }
template <class T> void TROWMAX(TileRef<T> dst, TileRef<T> src) { fast::row_reduce<fast::Red::MAX>(dst, src); }
template <class T> void TROWMIN(TileRef<T> dst, TileRef<T> src) { fast::row_reduce<fast::Red::MIN>(dst, src); }
template <class T> void TCOLSUM(TileRef<T> dst, TileRef<T> src) { fast::col_reduce<fast::Red::SUM>(dst, src); }
template <class T> void TCOLPROD(TileRef<T> dst, TileRef<T> src) { fast::col_reduce<fast::Red::PROD>(dst, src); }
template <class T> void TCOLMAX(TileRef<T> dst, TileRef<T> src) { fast::col_reduce<fast::Red::MAX>(dst, src); }
template <class T> void TCOLMIN(TileRef<T> dst, TileRef<T> src) { fast::col_reduce<fast::Red::MIN>(dst, src); }

template <class T>
void TROWEXPAND(TileRef<T> dst, TileRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_rows, 1, "src");
  for (int r = 0; r < dst.valid_rows; ++r) std::fill_n(dst.row(r), dst.valid_cols, src.at(r, 0));
}
template <class T>
void TCOLEXPAND(TileRef<T> dst, TileRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, 1, dst.valid_cols, "src");
  for (int r = 0; r < dst.valid_rows; ++r)
    if (dst.row(r) != src.row(0)) std::copy_n(src.row(0), dst.valid_cols, dst.row(r));
}

#define PTO_FAST_EXPAND_BINARY(OPNAME, OP)                                             \
  template <class T>                                                                   \
  void TROWEXPAND##OPNAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {          \
    fast::expand_binary<true>(dst, src0, src1, fast::OP{});                            \
  }                                                                                    \
  template <class T>                                                                   \
  void TCOLEXPAND##OPNAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {          \
    fast::expand_binary<false>(dst, src0, src1, fast::OP{});                           \
  }
PTO_FAST_EXPAND_BINARY(ADD, Add)
PTO_FAST_EXPAND_BINARY(SUB, Sub)
PTO_FAST_EXPAND_BINARY(MUL, Mul)
PTO_FAST_EXPAND_BINARY(DIV, Div)
PTO_FAST_EXPAND_BINARY(MAX, Max)
PTO_FAST_EXPAND_BINARY(MIN, Min)
#undef PTO_FAST_EXPAND_BINARY

template <class T>
void TROWEXPANDEXPDIF(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {
  fast::check_float<T>();
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src0, dst.valid_rows, dst.valid_cols, "src0");
  ref::detail::check_covers(src1, dst.valid_rows, 1, "src1");
  for (int r = 0; r < dst.valid_rows; ++r) {
    fast::ExpDifScalar<T> f{float(src1.at(r, 0))};
    fast::run_row(dst.row(r), dst.valid_cols, f, static_cast<const T*>(src0.row(r)));
  }
}
template <class T>
void TCOLEXPANDEXPDIF(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {
  fast::check_float<T>();
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src0, dst.valid_rows, dst.valid_cols, "src0");
  ref::detail::check_covers(src1, 1, dst.valid_cols, "src1");
  std::vector<T> brow(src1.row(0), src1.row(0) + dst.valid_cols);
  fast::ExpDif<T> f;
  for (int r = 0; r < dst.valid_rows; ++r)
    fast::run_row(dst.row(r), dst.valid_cols, f, static_cast<const T*>(src0.row(r)),
                  static_cast<const T*>(brow.data()));
}

}  // namespace PTO_ISA_NS
}  // namespace pto
