// Fast movement: row copies (TMOV TEXTRACT TINSERT TFILLPAD TCONCAT) and a blocked TTRANS.
#pragma once

#include <algorithm>
#include <utility>

#include "pto/ref/movement.hpp"
#include "pto/simd.hpp"

namespace pto {
inline namespace PTO_ISA_NS {

template <class T>
void TMOV(TileRef<T> dst, TileRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  for (int r = 0; r < dst.valid_rows; ++r)
    if (dst.row(r) != src.row(r))
      simd::copy_bytes(dst.row(r), src.row(r), sizeof(T) * size_t(dst.valid_cols));
}

template <class T>
void TTRANS(TileRef<T> dst, TileRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(src, dst.valid_cols, dst.valid_rows, "src");
  constexpr int B = 16;
  for (int r0 = 0; r0 < dst.valid_rows; r0 += B)
    for (int c0 = 0; c0 < dst.valid_cols; c0 += B) {
      const int r1 = std::min(r0 + B, dst.valid_rows), c1 = std::min(c0 + B, dst.valid_cols);
      for (int r = r0; r < r1; ++r)
        for (int c = c0; c < c1; ++c) dst.at(r, c) = src.at(c, r);
    }
}

template <class T>
void TEXTRACT(TileRef<T> dst, TileRef<T> src, int row, int col) {
  ref::detail::check_tile(dst, "dst");
  PTO_CHECK(row >= 0 && col >= 0, "negative offset");
  ref::detail::check_covers(src, row + dst.valid_rows, col + dst.valid_cols, "src");
  for (int r = 0; r < dst.valid_rows; ++r)
    std::copy_n(src.row(row + r) + col, dst.valid_cols, dst.row(r));
}

template <class T>
void TINSERT(TileRef<T> dst, TileRef<T> src, int row, int col) {
  ref::detail::check_tile(src, "src");
  PTO_CHECK(row >= 0 && col >= 0, "negative offset");
  ref::detail::check_covers(dst, row + src.valid_rows, col + src.valid_cols, "dst");
  for (int r = 0; r < src.valid_rows; ++r)
    std::copy_n(src.row(r), src.valid_cols, dst.row(row + r) + col);
}

// Row segments are copied straight from src to dst; only overlapping storage (the reference's
// aliasing case) goes through a copy of src's valid elements.
template <class T>
void TRESHAPE(TileRef<T> dst, TileRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_tile(src, "src");
  PTO_CHECK(int64_t(dst.valid_rows) * dst.valid_cols == int64_t(src.valid_rows) * src.valid_cols,
            "element counts differ");
  const int64_t total = int64_t(src.valid_rows) * src.valid_cols;
  if (total == 0) return;
  auto span = [](const TileRef<T>& t) {
    const T* lo = t.data;
    return std::pair{lo, lo + int64_t(t.valid_rows - 1) * t.stride + t.valid_cols};
  };
  const auto [d0, d1] = span(dst);
  const auto [s0, s1] = span(src);
  TileRef<T> from = src;
  if (d0 < s1 && s0 < d1) {  // overlap: dst may alias src
    if (d0 == s0 && dst.stride == src.stride && dst.valid_cols == src.valid_cols) return;
    T* flat = simd::scratch<T>(size_t(total));
    for (int r = 0; r < src.valid_rows; ++r)
      std::copy_n(src.row(r), src.valid_cols, flat + size_t(r) * src.valid_cols);
    from = TileRef<T>{flat,           src.valid_rows, src.valid_cols,
                      src.valid_cols, src.valid_rows, src.valid_cols};
  }
  // Two cursors over the row-major element streams; each step copies the longest run that
  // stays inside one row of both.
  int sr = 0, sc = 0, dr = 0, dc = 0;
  for (int64_t done = 0; done < total;) {
    const int m = std::min(from.valid_cols - sc, dst.valid_cols - dc);
    std::copy_n(from.row(sr) + sc, m, dst.row(dr) + dc);
    done += m;
    if ((sc += m) == from.valid_cols) sc = 0, ++sr;
    if ((dc += m) == dst.valid_cols) dc = 0, ++dr;
  }
}

template <class T>
void TFILLPAD(TileRef<T> dst, TileRef<T> src, std::type_identity_t<T> pad) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_tile(src, "src");
  const int rows = std::min(src.valid_rows, dst.valid_rows);
  const int cols = std::min(src.valid_cols, dst.valid_cols);
  for (int r = 0; r < dst.valid_rows; ++r) {
    T* d = dst.row(r);
    int c = 0;
    if (r < rows) {
      if (d != src.row(r)) std::copy_n(src.row(r), cols, d);
      c = cols;
    }
    std::fill(d + c, d + dst.valid_cols, pad);
  }
}

template <class T>
void TCONCAT(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {
  ref::detail::check_tile(dst, "dst");
  const int c0 = src0.valid_cols, c1 = src1.valid_cols;
  PTO_CHECK(dst.valid_cols == c0 + c1, "dst cols != src0 cols + src1 cols");
  ref::detail::check_covers(src0, dst.valid_rows, c0, "src0");
  ref::detail::check_covers(src1, dst.valid_rows, c1, "src1");
  if (src1.data == dst.data) return ref::TCONCAT(dst, src0, src1);  // would overwrite src1
  for (int r = 0; r < dst.valid_rows; ++r) {
    if (dst.row(r) != src0.row(r)) std::copy_n(src0.row(r), c0, dst.row(r));
    std::copy_n(src1.row(r), c1, dst.row(r) + c0);
  }
}

}  // namespace PTO_ISA_NS
}  // namespace pto
