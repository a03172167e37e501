// Fast scans and column arg-reductions (see pto/ref/scan.hpp for the semantics; the results are
// the reference's bit for bit). A column scan adds row r to the running row r - 1 across all
// columns at once, which vectorizes; a row scan is a chain per row and runs as the reference.
#pragma once

#include <algorithm>
#include <vector>

#include "pto/ref/scan.hpp"
#include "pto/simd.hpp"
#include "pto/simd_math/common.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace fast {

template <bool PROD, class T>
void col_scan(TileRef<T> dst, TileRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  using A = ref::detail::scan_acc_t<T>;
  const int n = dst.valid_cols;
  if (n == 0) return;
  std::vector<A> acc(n, ref::detail::scan_init<PROD, T>());
  for (int r = 0; r < dst.valid_rows; ++r) {
    const T* s = src.row(r);
    T* d = dst.row(r);
    for (int c = 0; c < n; ++c) acc[c] = ref::detail::scan_step<PROD>(acc[c], s[c]);
    for (int c = 0; c < n; ++c) d[c] = ref::detail::scan_out<T>(acc[c]);
  }
}

// Top-k of each row in one pass: a sorted buffer of the best k so far, and a vector test that
// skips every group of lanes none of which can enter it (almost all of them once the buffer is
// full). The test is conservative (NaN and ties go to the exact comparison), so the result is
// the reference's.
template <class D, class T>
void row_topk(TileRef<D> dst, TileRef<T> src, CmpMode mode, bool indices) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  PTO_CHECK(mode == CmpMode::GT || mode == CmpMode::LT, "top-k order must be GT (largest) or LT (smallest)");
  const bool largest = mode == CmpMode::GT;
  const int n = src.valid_cols, k = dst.valid_cols;
  using ref::detail::topk_before;
  if (k > 64 || k * 8 > n) {
    // Many winners: select the k-th (linear on average), then sort the k before it. The order
    // is total (value, NaN first or last, then index), so this is the reference's result.
    std::vector<int> idx(n);
    for (int r = 0; r < dst.valid_rows; ++r) {
      const T* x = src.row(r);
      for (int c = 0; c < n; ++c) idx[c] = c;
      auto before = [&](int a, int b) { return topk_before(x[a], a, x[b], b, largest); };
      if (k < n) std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), before);
      std::sort(idx.begin(), idx.begin() + k, before);
      for (int j = 0; j < k; ++j) {
        if constexpr (std::is_same_v<D, T>) {
          if (!indices) {
            dst.at(r, j) = x[idx[j]];
            continue;
          }
        }
        dst.at(r, j) = D(idx[j]);
      }
    }
    return;
  }
  T val[64];
  int idx[64];
  for (int r = 0; r < dst.valid_rows; ++r) {
    const T* x = src.row(r);
    int m = 0;  // entries in the buffer, best first
    auto offer = [&](int c) {
      if (m == k && !topk_before(x[c], c, val[k - 1], idx[k - 1], largest)) return;
      int p = m < k ? m++ : k - 1;
      while (p > 0 && topk_before(x[c], c, val[p - 1], idx[p - 1], largest)) {
        val[p] = val[p - 1];
        idx[p] = idx[p - 1];
        --p;
      }
      val[p] = x[c];
      idx[p] = c;
    };
    int c = 0;
    for (; c < n && m < k; ++c) offer(c);
    if constexpr (std::is_same_v<T, float> || simd::is16_v<T>) {
      for (; c + simd::kW <= n; c += simd::kW) {
        const simd::vf v = simd::vload(x + c), t = simd::splat(float(val[k - 1]));
        const simd::vi maybe = largest ? ~(v <= t) : ~(v >= t);  // NaN on either side: look closer
        if (simd::math::detail::any(maybe))
          for (int j = 0; j < simd::kW; ++j) offer(c + j);
      }
    }
    for (; c < n; ++c) offer(c);
    for (int j = 0; j < k; ++j) {
      if constexpr (std::is_same_v<D, T>) {
        if (!indices) {
          dst.at(r, j) = val[j];
          continue;
        }
      }
      dst.at(r, j) = D(idx[j]);
    }
  }
}

}  // namespace fast

template <class T>
void TROWCUMSUM(TileRef<T> dst, TileRef<T> src) { ref::TROWCUMSUM(dst, src); }
template <class T>
void TROWCUMPROD(TileRef<T> dst, TileRef<T> src) { ref::TROWCUMPROD(dst, src); }
template <class T>
void TCOLCUMSUM(TileRef<T> dst, TileRef<T> src) { fast::col_scan<false>(dst, src); }
template <class T>
void TCOLCUMPROD(TileRef<T> dst, TileRef<T> src) { fast::col_scan<true>(dst, src); }
template <class I, class T>
void TCOLARGMAX(TileRef<I> dst, TileRef<T> src) { ref::TCOLARGMAX(dst, src); }
template <class I, class T>
void TCOLARGMIN(TileRef<I> dst, TileRef<T> src) { ref::TCOLARGMIN(dst, src); }
template <class T>
void TROWTOPK(TileRef<T> dst, TileRef<T> src, CmpMode mode) { fast::row_topk(dst, src, mode, false); }
template <class I, class T>
void TROWTOPKIDX(TileRef<I> dst, TileRef<T> src, CmpMode mode) { fast::row_topk(dst, src, mode, true); }
template <class T, class I>
void TCOLGATHER(TileRef<T> dst, TileRef<T> src, TileRef<I> index) { ref::TCOLGATHER(dst, src, index); }

}  // namespace PTO_ISA_NS
}  // namespace pto
