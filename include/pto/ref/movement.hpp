// Reference movement / layout instructions: TMOV TEXTRACT TINSERT TTRANS TRESHAPE TFILLPAD TCONCAT.
#pragma once

#include <vector>

#include "pto/ref/common.hpp"

namespace pto::ref {

// dst = src (a copy between buffers/locations; layout changes live in the static Tile layer).
template <class T>
void TMOV(TileRef<T> dst, TileRef<T> src) {
  detail::unary(dst, src, [](T x) { return x; });
}

// dst = src[row : row + VR, col : col + VC]; the window must lie in src's valid region.
template <class T>
void TEXTRACT(TileRef<T> dst, TileRef<T> src, int row, int col) {
  detail::check_tile(dst, "dst");
  PTO_CHECK(row >= 0 && col >= 0, "negative offset");
  detail::check_covers(src, row + dst.valid_rows, col + dst.valid_cols, "src");
  detail::for_each(dst, [&](int r, int c) { return src.at(row + r, col + c); });
}

// dst[row + r, col + c] = src[r, c] over src's valid region, which must fit in dst's valid region.
template <class T>
void TINSERT(TileRef<T> dst, TileRef<T> src, int row, int col) {
  detail::check_tile(src, "src");
  PTO_CHECK(row >= 0 && col >= 0, "negative offset");
  detail::check_covers(dst, row + src.valid_rows, col + src.valid_cols, "dst");
  for (int r = 0; r < src.valid_rows; ++r)
    for (int c = 0; c < src.valid_cols; ++c) dst.at(row + r, col + c) = src.at(r, c);
}

// dst[r, c] = src[c, r]. dst must not alias src.
template <class T>
void TTRANS(TileRef<T> dst, TileRef<T> src) {
  detail::check_covers(src, dst.valid_cols, dst.valid_rows, "src");
  detail::for_each(dst, [&](int r, int c) { return src.at(c, r); });
}

// dst's valid elements in row-major order = src's valid elements in row-major order.
template <class T>
void TRESHAPE(TileRef<T> dst, TileRef<T> src) {
  detail::check_tile(dst, "dst");
  detail::check_tile(src, "src");
  PTO_CHECK(int64_t(dst.valid_rows) * dst.valid_cols == int64_t(src.valid_rows) * src.valid_cols,
            "element counts differ");
  std::vector<T> flat;  // dst may alias src
  flat.reserve(size_t(src.valid_rows) * src.valid_cols);
  for (int r = 0; r < src.valid_rows; ++r)
    for (int c = 0; c < src.valid_cols; ++c) flat.push_back(src.at(r, c));
  size_t i = 0;
  for (int r = 0; r < dst.valid_rows; ++r)
    for (int c = 0; c < dst.valid_cols; ++c) dst.at(r, c) = flat[i++];
}

// dst[r, c] = src[r, c] inside src's valid region, `pad` elsewhere in dst's valid region
// (so a partial tile can be widened to a full one with a neutral value, e.g. -inf before a max).
template <class T>
void TFILLPAD(TileRef<T> dst, TileRef<T> src, std::type_identity_t<T> pad) {
  detail::check_tile(src, "src");
  detail::for_each(dst, [&](int r, int c) {
    return r < src.valid_rows && c < src.valid_cols ? src.at(r, c) : pad;
  });
}

// Column concatenation: dst = [src0 | src1]; dst.valid_cols == src0.valid_cols + src1.valid_cols.
template <class T>
void TCONCAT(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1) {
  detail::check_tile(dst, "dst");
  const int c0 = src0.valid_cols;
  PTO_CHECK(dst.valid_cols == c0 + src1.valid_cols, "dst cols != src0 cols + src1 cols");
  detail::check_covers(src0, dst.valid_rows, c0, "src0");
  detail::check_covers(src1, dst.valid_rows, src1.valid_cols, "src1");
  detail::for_each(dst, [&](int r, int c) { return c < c0 ? src0.at(r, c) : src1.at(r, c - c0); });
}

}  // namespace pto::ref
