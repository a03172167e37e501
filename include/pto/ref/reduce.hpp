// Reference axis instructions: row/column reductions, broadcasts (expand) and the fused
// broadcast-binary forms.
#pragma once

#include <limits>
#include <vector>

#include "pto/ref/common.hpp"

namespace pto::ref {
namespace detail {

// Sums exactly enough: floats accumulate in double and round once; integers wrap.
template <class T>
struct SumAcc {
  std::conditional_t<is_float_v<T>, double, uint64_t> acc = 0;
  void add(T v) {
    if constexpr (is_float_v<T>) acc += elem::to_double(v);
    else acc += uint64_t(v);
  }
  T get() const {
    if constexpr (is_float_v<T>) return elem::from_double<T>(acc);
    else return T(acc);
  }
};

template <class T>
T lowest() {
  if constexpr (is_float_v<T>) return elem::from_double<T>(-HUGE_VAL);
  else return std::numeric_limits<T>::lowest();
}
template <class T>
T highest() {
  if constexpr (is_float_v<T>) return elem::from_double<T>(HUGE_VAL);
  else return std::numeric_limits<T>::max();
}

enum class Red { SUM, PROD, MAX, MIN };

// Products: floats multiply in double and round once; integers wrap.
template <class T>
struct ProdAcc {
  std::conditional_t<is_float_v<T>, double, uint64_t> acc = 1;
  void add(T v) {
    if constexpr (is_float_v<T>) acc *= elem::to_double(v);
    else acc *= uint64_t(v);
  }
  T get() const {
    if constexpr (is_float_v<T>) return elem::from_double<T>(acc);
    else return T(acc);
  }
};

template <Red R, class T>
struct Reducer {
  static_assert(!std::is_same_v<T, bool>, "reductions need a numeric type");
  SumAcc<T> sum;
  ProdAcc<T> prod;
  T m = R == Red::MAX ? lowest<T>() : highest<T>();
  void add(T v) {
    if constexpr (R == Red::SUM) sum.add(v);
    else if constexpr (R == Red::PROD) prod.add(v);
    else if constexpr (R == Red::MAX) m = elem::max(m, v);
    else m = elem::min(m, v);
  }
  T get() const { return R == Red::SUM ? sum.get() : R == Red::PROD ? prod.get() : m; }
};

// dst (R x 1) = reduce over the columns of src's valid region, for dst's valid rows.
template <Red R, class T>
void row_reduce(TileRef<T> dst, TileRef<T> src) {
  check_tile(dst, "dst");
  PTO_CHECK(dst.valid_cols >= 1, "dst must have a valid column");
  check_covers(src, dst.valid_rows, 0, "src");
  for (int r = 0; r < dst.valid_rows; ++r) {
    Reducer<R, T> red;
    for (int c = 0; c < src.valid_cols; ++c) red.add(src.at(r, c));
    dst.at(r, 0) = red.get();
  }
}

// dst (1 x C) = reduce over the rows of src's valid region, for dst's valid columns.
template <Red R, class T>
void col_reduce(TileRef<T> dst, TileRef<T> src) {
  check_tile(dst, "dst");
  PTO_CHECK(dst.valid_rows >= 1, "dst must have a valid row");
  check_covers(src, 0, dst.valid_cols, "src");
  std::vector<T> out(dst.valid_cols);  // dst may alias src's first row
  for (int c = 0; c < dst.valid_cols; ++c) {
    Reducer<R, T> red;
    for (int r = 0; r < src.valid_rows; ++r) red.add(src.at(r, c));
    out[c] = red.get();
  }
  for (int c = 0; c < dst.valid_cols; ++c) dst.at(0, c) = out[c];
}

// dst(r, c) = f(a(r, c), b(r, 0)) or f(a(r, c), b(0, c)); b is copied first since it may alias dst.
template <bool ROW, class T, class F>
void expand_binary(TileRef<T> dst, TileRef<T> a, TileRef<T> b, F f) {
  check_tile(dst, "dst");
  check_covers(a, dst.valid_rows, dst.valid_cols, "src0");
  if (ROW) check_covers(b, dst.valid_rows, 1, "src1");
  else check_covers(b, 1, dst.valid_cols, "src1");
  std::vector<T> bv(ROW ? dst.valid_rows : dst.valid_cols);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = ROW ? b.at(int(i), 0) : b.at(0, int(i));
  for (int r = 0; r < dst.valid_rows; ++r)
    for (int c = 0; c < dst.valid_cols; ++c) dst.at(r, c) = f(a.at(r, c), bv[ROW ? r : c]);
}

}  // namespace detail

#define PTO_REF_REDUCE(NAME, KIND, RED)                    \
  template <class T>                                       \
  void NAME(TileRef<T> dst, TileRef<T> src) {              \
    detail::KIND##_reduce<detail::Red::RED>(dst, src);     \
  }
PTO_REF_REDUCE(TROWSUM, row, SUM)
PTO_REF_REDUCE(TROWPROD, row, PROD)
PTO_REF_REDUCE(TROWMAX, row, MAX)
PTO_REF_REDUCE(TROWMIN, row, MIN)
PTO_REF_REDUCE(TCOLSUM, col, SUM)
PTO_REF_REDUCE(TCOLPROD, col, PROD)
PTO_REF_REDUCE(TCOLMAX, col, MAX)
PTO_REF_REDUCE(TCOLMIN, col, MIN)
#undef PTO_REF_REDUCE

// dst(r, c) = src(r, 0)
template <class T>
void TROWEXPAND(TileRef<T> dst, TileRef<T> src) {
  detail::expand_binary<true>(dst, dst, src, [](T, T y) { return y; });
}
// dst(r, c) = src(0, c)
template <class T>
void TCOLEXPAND(TileRef<T> dst, TileRef<T> src) {
  detail::expand_binary<false>(dst, dst, src, [](T, T y) { return y; });
}

// TROWEXPAND<OP>(dst, src0 RxC, src1 Rx1): dst = src0 op broadcast(src1) along the row.
// TCOLEXPAND<OP>(dst, src0 RxC, src1 1xC): dst = src0 op broadcast(src1) along the column.
#define PTO_REF_EXPAND_BINARY(OPNAME, FN)                                              \
  template <class T>                                                                   \
  void TROWEXPAND##OPNAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {          \
    detail::expand_binary<true>(dst, src0, src1, [](T x, T y) { return elem::FN(x, y); }); \
  }                                                                                    \
  template <class T>                                                                   \
  void TCOLEXPAND##OPNAME(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {          \
    detail::expand_binary<false>(dst, src0, src1, [](T x, T y) { return elem::FN(x, y); }); \
  }
PTO_REF_EXPAND_BINARY(ADD, add)
PTO_REF_EXPAND_BINARY(SUB, sub)
PTO_REF_EXPAND_BINARY(MUL, mul)
PTO_REF_EXPAND_BINARY(DIV, div)
PTO_REF_EXPAND_BINARY(MAX, max)
PTO_REF_EXPAND_BINARY(MIN, min)
#undef PTO_REF_EXPAND_BINARY

// TROWEXPANDEXPDIF / TCOLEXPANDEXPDIF: dst = exp(src0 - broadcast(src1)), the difference rounded
// to T first, so the fused form equals TROWEXPANDSUB followed by TEXP bit for bit.
template <class T>
void TROWEXPANDEXPDIF(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {
  detail::expand_binary<true>(dst, src0, src1,
                               [](T x, T y) { return elem::exp(elem::sub(x, y)); });
}
template <class T>
void TCOLEXPANDEXPDIF(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {
  detail::expand_binary<false>(dst, src0, src1,
                               [](T x, T y) { return elem::exp(elem::sub(x, y)); });
}

// TROWARGMAX / TROWARGMIN: dst(r, 0) = column index of the first max / min of row r (a NaN counts
// as the extreme, like numpy.argmax). The index tile is any integer type.
namespace detail {
template <bool MAX, class I, class T>
void row_arg(TileRef<I> dst, TileRef<T> src) {
  check_tile(dst, "dst");
  PTO_CHECK(dst.valid_cols >= 1, "dst must have a valid column");
  check_covers(src, dst.valid_rows, 1, "src");
  for (int r = 0; r < dst.valid_rows; ++r) {
    int best = 0;
    for (int c = 1; c < src.valid_cols && !elem::is_nan(src.at(r, best)); ++c) {
      const T v = src.at(r, c), b = src.at(r, best);
      if (elem::is_nan(v) || (MAX ? elem::less(b, v) : elem::less(v, b))) best = c;
    }
    dst.at(r, 0) = I(best);
  }
}
}  // namespace detail
template <class I, class T>
void TROWARGMAX(TileRef<I> dst, TileRef<T> src) { detail::row_arg<true>(dst, src); }
template <class I, class T>
void TROWARGMIN(TileRef<I> dst, TileRef<T> src) { detail::row_arg<false>(dst, src); }

}  // namespace pto::ref
