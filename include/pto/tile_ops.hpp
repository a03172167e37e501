// Binds every instruction name in namespace pto: reference fallbacks for names without a fast
// implementation, and overloads taking static Tiles (forwarded as TileRefs).
#pragma once

#include <utility>

#include "pto/fast/convert.hpp"
#include "pto/fast/elementwise.hpp"
#include "pto/fast/matmul.hpp"
#include "pto/fast/memory.hpp"
#include "pto/fast/movement.hpp"
#include "pto/fast/reduce.hpp"
#include "pto/ref/compare.hpp"
#include "pto/ref/complex.hpp"
#include "pto/ref/memory.hpp"
#include "pto/ref/movement.hpp"
#include "pto/sync.hpp"
#include "pto/isa_list.hpp"
#include "pto/tile.hpp"

namespace pto {

#define PTO_USE_REF_0(NAME) using ref::NAME;
#define PTO_USE_REF_1(NAME)
#define PTO_USE_REF(NAME, FAST) PTO_USE_REF_##FAST(NAME)
PTO_INSTRUCTIONS(PTO_USE_REF)
#undef PTO_USE_REF
#undef PTO_USE_REF_0
#undef PTO_USE_REF_1

// Tiles become TileRefs; everything else (TileRef, GlobalRef, scalars, modes) passes through.
#define PTO_TILE_FORWARD(NAME, FAST)                              \
  template <class... A>                                           \
    requires(is_tile_v<A> || ...)                                 \
  decltype(auto) NAME(A&&... a) {                                 \
    return NAME(as_ref(std::forward<A>(a))...);                   \
  }
PTO_INSTRUCTIONS(PTO_TILE_FORWARD)
#undef PTO_TILE_FORWARD

// TMOV between tiles of different layouts (row-major <-> col-major <-> NZ), element by element
// over dst's valid region; the row-major-only instructions take the result.
template <class D, class S>
  requires(is_tile_v<D> && is_tile_v<S> &&
           (std::remove_cvref_t<D>::kLayout != Layout::RowMajor ||
            std::remove_cvref_t<S>::kLayout != Layout::RowMajor))
void TMOV(D&& dst, S&& src) {
  PTO_CHECK(src.valid_rows() >= dst.valid_rows() && src.valid_cols() >= dst.valid_cols(),
            "src does not cover dst");
  for (int r = 0; r < dst.valid_rows(); ++r)
    for (int c = 0; c < dst.valid_cols(); ++c) dst.at(r, c) = src.at(r, c);
}

// TFILLPAD on one tile: every element outside the valid region takes the tile's PadValue.
template <class D>
  requires is_tile_v<D>
void TFILLPAD(D&& t) {
  using TT = std::remove_cvref_t<D>;
  static_assert(TT::kPad != PadValue::None, "tile has no pad value");
  const auto pad = pad_value<typename TT::value_type>(TT::kPad);
  for (int r = 0; r < TT::kRows; ++r)
    for (int c = 0; c < TT::kCols; ++c)
      if (r >= t.valid_rows() || c >= t.valid_cols()) t.at(r, c) = pad;
}

}  // namespace pto
