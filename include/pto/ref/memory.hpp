// Reference memory instructions: TLOAD / TSTORE between a GlobalRef and a tile.
#pragma once

#include "pto/ref/common.hpp"

namespace pto::ref {
namespace detail {
template <class T, class U>
void check_global_matches(const GlobalRef<T>& g, const TileRef<U>& t) {
  for (int i = 0; i < 5; ++i) PTO_CHECK(g.shape[i] >= 0, "negative global shape");
  PTO_CHECK(g.tile_rows() == t.valid_rows && g.tile_cols() == t.valid_cols,
            "global shape " + std::to_string(g.tile_rows()) + "x" + std::to_string(g.tile_cols()) +
                " != tile valid region " + std::to_string(t.valid_rows) + "x" +
                std::to_string(t.valid_cols));
}
}  // namespace detail

// Fills dst's valid region from src; src's shape d0..d4 maps to rows d0*d1*d2*d3, cols d4.
template <class T>
void TLOAD(TileRef<T> dst, GlobalRef<T> src) {
  detail::check_tile(dst, "dst");
  detail::check_global_matches(src, dst);
  for (int r = 0; r < dst.valid_rows; ++r)
    for (int c = 0; c < dst.valid_cols; ++c) dst.at(r, c) = *src.addr(r, c);
}

// Writes src's valid region to dst (same shape mapping as TLOAD).
template <class T>
void TSTORE(GlobalRef<T> dst, TileRef<T> src) {
  detail::check_tile(src, "src");
  detail::check_global_matches(dst, src);
  for (int r = 0; r < src.valid_rows; ++r)
    for (int c = 0; c < src.valid_cols; ++c) *dst.addr(r, c) = src.at(r, c);
}

}  // namespace pto::ref
