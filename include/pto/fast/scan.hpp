// Fast scans and column arg-reductions (see pto/ref/scan.hpp for the semantics; the results are
// the reference's bit for bit). A column scan adds row r to the running row r - 1 across all
// columns at once, which vectorizes; a row scan is a chain per row and runs as the reference.
#pragma once

#include <algorithm>
#include <vector>

#include "pto/ref/scan.hpp"
#include "pto/simd.hpp"

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
  std::vector<A> acc(n, A(PROD ? 1 : 0));
  for (int r = 0; r < dst.valid_rows; ++r) {
    const T* s = src.row(r);
    T* d = dst.row(r);
    for (int c = 0; c < n; ++c) acc[c] = ref::detail::scan_step<PROD>(acc[c], s[c]);
    for (int c = 0; c < n; ++c) d[c] = ref::detail::scan_out<T>(acc[c]);
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
void TROWTOPK(TileRef<T> dst, TileRef<T> src, CmpMode mode) { ref::TROWTOPK(dst, src, mode); }
template <class I, class T>
void TROWTOPKIDX(TileRef<I> dst, TileRef<T> src, CmpMode mode) { ref::TROWTOPKIDX(dst, src, mode); }
template <class T, class I>
void TCOLGATHER(TileRef<T> dst, TileRef<T> src, TileRef<I> index) { ref::TCOLGATHER(dst, src, index); }

}  // namespace PTO_ISA_NS
}  // namespace pto
