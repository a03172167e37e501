// Fast movement: TMOV as row copies, TTRANS blocked so both sides stay in cache lines.
#pragma once

#include <algorithm>

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

}  // namespace PTO_ISA_NS
}  // namespace pto
