// Reference scans (inclusive prefix sums / products) and column arg-reductions:
//   TROWCUMSUM / TROWCUMPROD  dst(r, c) = src(r, 0) op ... op src(r, c)
//   TCOLCUMSUM / TCOLCUMPROD  dst(r, c) = src(0, c) op ... op src(r, c)
//   TCOLARGMAX / TCOLARGMIN   dst(0, c) = row index of the first max / min of column c
// A scan accumulates in order, one rounding per step, as numpy.cumsum does: fp32 in fp32,
// fp16/bf16 in fp32 with each partial result rounded to the type on its way out (torch), and
// integers wrap.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "pto/ref/common.hpp"

namespace pto::ref {
namespace detail {

template <class T>
using scan_acc_t = std::conditional_t<is_float_v<T>, std::conditional_t<std::is_same_v<T, double>, double, float>, T>;

template <bool PROD, class T>
scan_acc_t<T> scan_step(scan_acc_t<T> acc, T v) {
  using A = scan_acc_t<T>;
  if constexpr (is_float_v<T>) return PROD ? A(acc * A(elem::to_double(v))) : A(acc + A(elem::to_double(v)));
  else return PROD ? elem::mul(acc, v) : elem::add(acc, v);
}
// The running value before the first element: 1, or for a sum -0.0 (the additive identity that
// keeps a leading -0: numpy's cumsum of [-0.0] is -0.0, and 0.0 + -0.0 is +0.0).
template <bool PROD, class T>
scan_acc_t<T> scan_init() {
  using A = scan_acc_t<T>;
  if constexpr (is_float_v<T>) return PROD ? A(1) : A(-0.0);
  else return PROD ? A(1) : A(0);
}
template <class T>
T scan_out(scan_acc_t<T> acc) {
  if constexpr (is_float_v<T>) return elem::from_double<T>(double(acc));
  else return acc;
}

template <bool PROD, class T>
void row_scan(TileRef<T> dst, TileRef<T> src) {
  check_tile(dst, "dst");
  check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  for (int r = 0; r < dst.valid_rows; ++r) {
    scan_acc_t<T> acc = scan_init<PROD, T>();
    for (int c = 0; c < dst.valid_cols; ++c) dst.at(r, c) = scan_out<T>(acc = scan_step<PROD>(acc, src.at(r, c)));
  }
}

template <bool PROD, class T>
void col_scan(TileRef<T> dst, TileRef<T> src) {
  check_tile(dst, "dst");
  check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  for (int c = 0; c < dst.valid_cols; ++c) {
    scan_acc_t<T> acc = scan_init<PROD, T>();
    for (int r = 0; r < dst.valid_rows; ++r) dst.at(r, c) = scan_out<T>(acc = scan_step<PROD>(acc, src.at(r, c)));
  }
}

// The first extreme of each column (a NaN counts as the extreme, like numpy.argmax).
template <bool MAX, class I, class T>
void col_arg(TileRef<I> dst, TileRef<T> src) {
  check_tile(dst, "dst");
  check_covers(src, 1, dst.valid_cols, "src");
  for (int c = 0; c < dst.valid_cols; ++c) {
    int best = 0;
    for (int r = 1; r < src.valid_rows && !elem::is_nan(src.at(best, c)); ++r) {
      const T v = src.at(r, c), b = src.at(best, c);
      if (elem::is_nan(v) || (MAX ? elem::less(b, v) : elem::less(v, b))) best = r;
    }
    dst.at(0, c) = I(best);
  }
}

}  // namespace detail

template <class T>
void TROWCUMSUM(TileRef<T> dst, TileRef<T> src) { detail::row_scan<false>(dst, src); }
template <class T>
void TROWCUMPROD(TileRef<T> dst, TileRef<T> src) { detail::row_scan<true>(dst, src); }
template <class T>
void TCOLCUMSUM(TileRef<T> dst, TileRef<T> src) { detail::col_scan<false>(dst, src); }
template <class T>
void TCOLCUMPROD(TileRef<T> dst, TileRef<T> src) { detail::col_scan<true>(dst, src); }
template <class I, class T>
void TCOLARGMAX(TileRef<I> dst, TileRef<T> src) { detail::col_arg<true>(dst, src); }
template <class I, class T>
void TCOLARGMIN(TileRef<I> dst, TileRef<T> src) { detail::col_arg<false>(dst, src); }

}  // namespace pto::ref

// ---- top-k and gather along an axis ---------------------------------------------------------
//   TROWTOPK / TROWTOPKIDX  dst(r, 0..k-1) = the k largest (mode GT) or smallest (LT) values of
//                           row r, in order, or their column indices (k = dst's valid columns).
//                           NaN counts as larger than every number (torch); ties keep the
//                           lower index first.
//   TCOLGATHER              dst(i, c) = src(index(i, c), c); an index outside src's valid rows
//                           is an error (pto::Error), never a read out of bounds.
namespace pto::ref {
namespace detail {
template <class T>
bool topk_before(T a, int ia, T b, int ib, bool largest) {
  const bool na = elem::is_nan(a), nb = elem::is_nan(b);
  if (na != nb) return largest ? na : nb;
  if (!na && (largest ? elem::less(b, a) : elem::less(a, b))) return true;
  if (!na && (largest ? elem::less(a, b) : elem::less(b, a))) return false;
  return ia < ib;
}
template <class D, class T>
void row_topk(TileRef<D> dst, TileRef<T> src, CmpMode mode, bool indices) {
  check_tile(dst, "dst");
  check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  PTO_CHECK(mode == CmpMode::GT || mode == CmpMode::LT, "top-k order must be GT (largest) or LT (smallest)");
  const bool largest = mode == CmpMode::GT;
  const int n = src.valid_cols, k = dst.valid_cols;
  std::vector<int> idx(n);
  for (int r = 0; r < dst.valid_rows; ++r) {
    for (int c = 0; c < n; ++c) idx[c] = c;
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int a, int b) { return topk_before(src.at(r, a), a, src.at(r, b), b, largest); });
    for (int c = 0; c < k; ++c) {
      if constexpr (std::is_same_v<D, T>) {
        if (!indices) {
          dst.at(r, c) = src.at(r, idx[c]);
          continue;
        }
      }
      dst.at(r, c) = D(idx[c]);
    }
  }
}
}  // namespace detail

template <class T>
void TROWTOPK(TileRef<T> dst, TileRef<T> src, CmpMode mode) { detail::row_topk(dst, src, mode, false); }
template <class I, class T>
void TROWTOPKIDX(TileRef<I> dst, TileRef<T> src, CmpMode mode) { detail::row_topk(dst, src, mode, true); }

template <class T, class I>
void TCOLGATHER(TileRef<T> dst, TileRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "the index must be an integer tile");
  detail::check_tile(dst, "dst");
  detail::check_covers(index, dst.valid_rows, dst.valid_cols, "index");
  detail::check_covers(src, 1, dst.valid_cols, "src");
  for (int i = 0; i < dst.valid_rows; ++i)
    for (int c = 0; c < dst.valid_cols; ++c) {
      const int64_t j = int64_t(index.at(i, c));
      if (j < 0 || j >= src.valid_rows)
        throw Error("index " + std::to_string(j) + " is out of range [0, " + std::to_string(src.valid_rows) + ")");
      dst.at(i, c) = src.at(int(j), c);
    }
}

}  // namespace pto::ref
