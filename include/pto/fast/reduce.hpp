// Fast axis instructions: row/column reductions, expands and fused broadcast-binary forms.
// Sums and products accumulate in float (like the NPU), so they differ from the reference
// (double) by rounding only; max/min, integer reductions and the expands match it exactly.
#pragma once

#include <limits>

#include "pto/fast/elementwise.hpp"
#include "pto/ref/reduce.hpp"

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
  using Wide = std::conditional_t<(sizeof(V) < sizeof(int)), int, V>;
  using A = typename std::conditional_t<kFloat || R == Red::MAX || R == Red::MIN,
                                        std::type_identity<V>, std::make_unsigned<Wide>>::type;
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

// The combining step on vectors (a functor, not a lambda: GCC treats a lambda taking 32-byte
// vectors as non-AVX under #pragma GCC target and warns about the ABI).
template <Red R>
struct VecRed {
  template <class V>  // simd::vf or float
  V operator()(V a, V v) const {
    if constexpr (R == Red::SUM) return a + v;
    else if constexpr (R == Red::PROD) return a * v;
    else if constexpr (R == Red::MAX) return v > a ? v : a;
    else return v < a ? v : a;
  }
};

// Float row reduction in four vector accumulators (vectorized without reassociation flags);
// 16-bit inputs are widened in registers. NaN is tracked on the side for max/min.
template <Red R, class T>
float row_reduce_float(const T* x, int n) {
  using simd::kW;
  using simd::vf;
  using simd::vi;
  const float id = R == Red::SUM    ? 0.0f
                   : R == Red::PROD ? 1.0f
                   : R == Red::MAX  ? -INFINITY
                                    : INFINITY;
  constexpr VecRed<R> op;
  constexpr bool kTrackNan = R == Red::MAX || R == Red::MIN;
  vf a0 = simd::splat(id), a1 = a0, a2 = a0, a3 = a0;
  vi nan = vi{};
  int i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
    const vf x0 = simd::vload(x + i), x1 = simd::vload(x + i + kW);
    const vf x2 = simd::vload(x + i + 2 * kW), x3 = simd::vload(x + i + 3 * kW);
    a0 = op(a0, x0), a1 = op(a1, x1), a2 = op(a2, x2), a3 = op(a3, x3);
    if constexpr (kTrackNan) nan |= (x0 != x0) | (x1 != x1) | (x2 != x2) | (x3 != x3);
  }
  for (; i + kW <= n; i += kW) {
    const vf x0 = simd::vload(x + i);
    a0 = op(a0, x0);
    if constexpr (kTrackNan) nan |= x0 != x0;
  }
  if (i < n) {
    vf t = simd::splat(id);
    for (int j = 0; i + j < n; ++j) t[j] = float(x[i + j]);
    a1 = op(a1, t);
    if constexpr (kTrackNan) nan |= t != t;
  }
  const vf acc = op(op(a0, a1), op(a2, a3));
  float lanes[kW];
  std::memcpy(lanes, &acc, sizeof acc);
  float r = lanes[0];
  for (int j = 1; j < kW; ++j) r = op(r, lanes[j]);
  if constexpr (kTrackNan) {
    int any = 0;
    for (int j = 0; j < kW; ++j) any |= nan[j];
    if (any) return NAN;
  }
  return r;
}

// A max / min of zero: the reference keeps the first of equal values, so the sign is that of
// the row's first zero (vector max/min pick either).
template <Red R, class T>
inline float first_zero_sign(const T* x, float m) {
  if constexpr (R == Red::MAX || R == Red::MIN) {
    if (m == 0.0f) {
      int i = 0;
      while (float(x[i]) != 0.0f) ++i;
      return float(x[i]);
    }
  }
  return m;
}

#ifdef PTO_SIMD_AVX2
// Short rows: eight rows at a time, one vector of lane partials per row (eight independent
// chains), then one transpose-and-reduce gives the eight results in one vector, instead of a
// horizontal reduction per row. The order of operations depends only on the row length, so a
// row's result does not depend on its position in the tile.
struct VAdd {
  static __m256 f(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
};
struct VMax {
  static __m256 f(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
};
struct VMin {
  static __m256 f(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
};
struct VOr {
  static __m256 f(__m256 a, __m256 b) { return _mm256_or_ps(a, b); }
};
template <Red R>
using vred_t =
    std::conditional_t<R == Red::SUM, VAdd, std::conditional_t<R == Red::MAX, VMax, VMin>>;

// Lane r of the result = the eight lanes of v[r] combined by Op, always in the same tree:
// lanes (0,2) (1,3) (4,6) (5,7), then (02,13) (46,57), then (0123,4567).
template <class Op>
inline __m256 transpose_reduce(const __m256* v) {
  __m256 p[4];
  for (int i = 0; i < 4; ++i)
    p[i] = Op::f(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                 _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  const __m256 q0 = Op::f(_mm256_shuffle_ps(p[0], p[1], 0x44), _mm256_shuffle_ps(p[0], p[1], 0xee));
  const __m256 q1 = Op::f(_mm256_shuffle_ps(p[2], p[3], 0x44), _mm256_shuffle_ps(p[2], p[3], 0xee));
  return Op::f(_mm256_permute2f128_ps(q0, q1, 0x20), _mm256_permute2f128_ps(q0, q1, 0x31));
}

// One row alone, with exactly the operations a row gets in the eight-row block below (so the
// same bits): the lane chain, then the lanes combined in transpose_reduce's tree.
template <Red R, class T>
float row_reduce_one(const T* x, int n) {
  using Op = vred_t<R>;
  const float id = R == Red::SUM ? 0.0f : R == Red::MAX ? -INFINITY : INFINITY;
  const int full = n & ~7;
  __m256 a = _mm256_set1_ps(id), bad = _mm256_setzero_ps();
  int c = 0;
  if constexpr (R == Red::SUM)
    for (; c + 16 <= full; c += 16)
      a = Op::f(a, Op::f(__m256(simd::vload(x + c)), __m256(simd::vload(x + c + 8))));
  for (; c < full; c += 8) {
    const __m256 v = __m256(simd::vload(x + c));
    a = Op::f(a, v);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (full < n) {
    alignas(32) float t[8];
    for (int j = 0; j < 8; ++j) t[j] = full + j < n ? float(x[full + j]) : id;
    const __m256 v = _mm256_load_ps(t);
    a = Op::f(a, v);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  alignas(32) float l[8];
  _mm256_store_ps(l, a);
  const __m256 s = _mm256_setr_ps(l[0], l[1], l[4], l[5], 0, 0, 0, 0);
  const __m256 u = _mm256_setr_ps(l[2], l[3], l[6], l[7], 0, 0, 0, 0);
  alignas(32) float q[8];
  _mm256_store_ps(q, Op::f(s, u));  // (0,2) (1,3) (4,6) (5,7)
  const __m256 q01 = Op::f(_mm256_set1_ps(q[0]), _mm256_set1_ps(q[1]));
  const __m256 q23 = Op::f(_mm256_set1_ps(q[2]), _mm256_set1_ps(q[3]));
  float m = _mm256_cvtss_f32(Op::f(q01, q23));
  if constexpr (R != Red::SUM) {
    if (_mm256_movemask_ps(bad) != 0) m = NAN;
  }
  return first_zero_sign<R>(x, m);
}

template <Red R, class T>
void row_reduce_short(TileRef<T> dst, TileRef<T> src) {
  using Op = vred_t<R>;
  constexpr bool kTrackNan = R != Red::SUM;
  const float id = R == Red::SUM ? 0.0f : R == Red::MAX ? -INFINITY : INFINITY;
  const int n = src.valid_cols, full = n & ~7;
  const __m256 vid = _mm256_set1_ps(id);
  for (int r0 = 0; r0 < dst.valid_rows; r0 += 8) {
    const int rows = std::min(8, dst.valid_rows - r0);
    if (rows < 4) {  // a few rows left: one at a time beats an eight-row block
      for (int i = 0; i < rows; ++i) dst.at(r0 + i, 0) = T(row_reduce_one<R>(src.row(r0 + i), n));
      continue;
    }
    const T* p[8];  // a short block repeats its last row (same work per row, results dropped)
    for (int i = 0; i < 8; ++i) p[i] = src.row(r0 + (i < rows ? i : rows - 1));
    // Named accumulators, not an array: GCC would keep an array in memory across the loop.
    __m256 a0 = vid, a1 = vid, a2 = vid, a3 = vid, a4 = vid, a5 = vid, a6 = vid, a7 = vid;
    __m256 bad = _mm256_setzero_ps();  // NaN seen anywhere in the block (then rows are rescanned)
    // One step: eight rows, eight columns. NaN checks go two vectors per compare.
#define PTO_RR_STEP(V)                                                                        \
  {                                                                                           \
    const __m256 v0 = V(0), v1 = V(1), v2 = V(2), v3 = V(3), v4 = V(4), v5 = V(5), v6 = V(6), \
                 v7 = V(7);                                                                   \
    a0 = Op::f(a0, v0), a1 = Op::f(a1, v1), a2 = Op::f(a2, v2), a3 = Op::f(a3, v3);           \
    a4 = Op::f(a4, v4), a5 = Op::f(a5, v5), a6 = Op::f(a6, v6), a7 = Op::f(a7, v7);           \
    if constexpr (kTrackNan) {                                                                \
      const __m256 u01 = _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q);                                 \
      const __m256 u23 = _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q);                                 \
      const __m256 u45 = _mm256_cmp_ps(v4, v5, _CMP_UNORD_Q);                                 \
      const __m256 u67 = _mm256_cmp_ps(v6, v7, _CMP_UNORD_Q);                                 \
      bad = _mm256_or_ps(bad, _mm256_or_ps(_mm256_or_ps(u01, u23), _mm256_or_ps(u45, u67)));  \
    }                                                                                         \
  }
#define PTO_RR_LOAD(I) __m256(simd::vload(p[I] + c))
#define PTO_RR_LOAD2(I) Op::f(__m256(simd::vload(p[I] + c)), __m256(simd::vload(p[I] + c + 8)))
    int c = 0;
    // Sums: two vectors added before they join the chain, halving its latency (max / min have
    // one-cycle latency, and their NaN checks need the raw vectors).
    if constexpr (!kTrackNan)
      for (; c + 16 <= full; c += 16) PTO_RR_STEP(PTO_RR_LOAD2)
    for (; c < full; c += 8) PTO_RR_STEP(PTO_RR_LOAD)
#undef PTO_RR_LOAD2
    if (full < n) {
      alignas(32) float t[8][8];
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) t[i][j] = full + j < n ? float(p[i][full + j]) : id;
#define PTO_RR_TAIL(I) _mm256_load_ps(t[I])
      PTO_RR_STEP(PTO_RR_TAIL)
#undef PTO_RR_TAIL
    }
#undef PTO_RR_LOAD
#undef PTO_RR_STEP
    const __m256 acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    alignas(32) float out[8];
    _mm256_store_ps(out, transpose_reduce<Op>(acc));
    const bool any_nan = kTrackNan && _mm256_movemask_ps(bad) != 0;
    for (int i = 0; i < rows; ++i) {
      float m = out[i];
      if (any_nan)
        for (int j = 0; j < n; ++j)
          if (float(p[i][j]) != float(p[i][j])) m = NAN;
      dst.at(r0 + i, 0) = T(first_zero_sign<R>(p[i], m));
    }
  }
}
#endif

template <Red R, class T>
void row_reduce(TileRef<T> dst, TileRef<T> src) {
  static_assert(!std::is_same_v<T, bool>, "reductions need a numeric type");
  ref::detail::check_tile(dst, "dst");
  PTO_CHECK(dst.valid_cols >= 1, "dst must have a valid column");
  ref::detail::check_covers(src, dst.valid_rows, 0, "src");
#ifdef PTO_SIMD_AVX2
  if constexpr (is_float_v<T> && R != Red::PROD) {
    if (src.valid_cols < 256) return row_reduce_short<R>(dst, src);
  }
#endif
  for (int r = 0; r < dst.valid_rows; ++r) {
    if constexpr (is_float_v<T>) {
      dst.at(r, 0) =
          T(first_zero_sign<R>(src.row(r), row_reduce_float<R>(src.row(r), src.valid_cols)));
    } else {
      LaneAcc<R, T> acc;
      acc.add(src.row(r), src.valid_cols);
      dst.at(r, 0) = acc.get();
    }
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

#define PTO_FAST_REDUCE(NAME, KIND, RED)           \
  template <class T>                               \
  void NAME(TileRef<T> dst, TileRef<T> src) {      \
    fast::KIND##_reduce<fast::Red::RED>(dst, src); \
  }
PTO_FAST_REDUCE(TROWSUM, row, SUM)
PTO_FAST_REDUCE(TROWPROD, row, PROD)
PTO_FAST_REDUCE(TROWMAX, row, MAX)
PTO_FAST_REDUCE(TROWMIN, row, MIN)
PTO_FAST_REDUCE(TCOLSUM, col, SUM)
PTO_FAST_REDUCE(TCOLPROD, col, PROD)
PTO_FAST_REDUCE(TCOLMAX, col, MAX)
PTO_FAST_REDUCE(TCOLMIN, col, MIN)
#undef PTO_FAST_REDUCE

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
    if (dst.row(r) != src.row(0))
      simd::copy_bytes(dst.row(r), src.row(0), sizeof(T) * size_t(dst.valid_cols));
}

#define PTO_FAST_EXPAND_BINARY(OPNAME, OP)                                    \
  template <class T>                                                          \
  void TROWEXPAND##OPNAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) { \
    fast::expand_binary<true>(dst, src0, src1, fast::OP{});                   \
  }                                                                           \
  template <class T>                                                          \
  void TCOLEXPAND##OPNAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) { \
    fast::expand_binary<false>(dst, src0, src1, fast::OP{});                  \
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

// TROWARGMAX / TROWARGMIN: the vectorized max/min, then the first column holding it (first NaN
// if any), which is the reference's answer.
namespace fast {
template <bool MAX, class I, class T>
void row_arg(TileRef<I> dst, TileRef<T> src) {
  static_assert(!std::is_same_v<T, bool>, "arg-reductions need a numeric type");
  ref::detail::check_tile(dst, "dst");
  PTO_CHECK(dst.valid_cols >= 1, "dst must have a valid column");
  ref::detail::check_covers(src, dst.valid_rows, 1, "src");
  constexpr Red R = MAX ? Red::MAX : Red::MIN;
  for (int r = 0; r < dst.valid_rows; ++r) {
    const T* x = src.row(r);
    const int n = src.valid_cols;
    int best = 0;
    if constexpr (is_float_v<T>) {
      const float m = row_reduce_float<R>(x, n);
      if (m != m) {
        while (float(x[best]) == float(x[best])) ++best;
      } else {
        while (float(x[best]) != m) ++best;
      }
    } else {
      LaneAcc<R, T> acc;
      acc.add(x, n);
      const T m = acc.get();
      while (x[best] != m) ++best;
    }
    dst.at(r, 0) = I(best);
  }
}
}  // namespace fast

template <class I, class T>
void TROWARGMAX(TileRef<I> dst, TileRef<T> src) {
  fast::row_arg<true>(dst, src);
}
template <class I, class T>
void TROWARGMIN(TileRef<I> dst, TileRef<T> src) {
  fast::row_arg<false>(dst, src);
}

}  // namespace PTO_ISA_NS
}  // namespace pto
