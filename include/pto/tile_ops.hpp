// Overloads of every instruction in namespace pto taking static Tiles (forwarded as TileRefs).
#pragma once

#include <utility>
#include <vector>

#include "pto/fast/complex.hpp"
#include "pto/fast/convert.hpp"
#include "pto/fast/elementwise.hpp"
#include "pto/fast/math.hpp"
#include "pto/fast/matmul.hpp"
#include "pto/fast/memory.hpp"
#include "pto/fast/movement.hpp"
#include "pto/fast/reduce.hpp"
#include "pto/fast/scan.hpp"
#include "pto/isa_list.hpp"
#include "pto/ref/compare.hpp"
#include "pto/ref/complex.hpp"
#include "pto/ref/memory.hpp"
#include "pto/ref/movement.hpp"
#include "pto/sync.hpp"
#include "pto/tile.hpp"

namespace pto {

// Tiles become TileRefs; everything else (TileRef, GlobalRef, scalars, modes) passes through.
#define PTO_TILE_FORWARD(NAME, FORM, DTYPES)    \
  template <class... A>                         \
    requires(is_tile_v<A> || ...)               \
  decltype(auto) NAME(A&&... a) {               \
    return NAME(as_ref(std::forward<A>(a))...); \
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

// TMATMUL family on cube operands in any layout (Left / Right tiles in NZ or column-major, or
// row-major TileRefs): the packing step reads the layout directly, no TMOV needed. The
// accumulator (and bias) stay row-major.
namespace detail {
template <class X>
constexpr bool non_row_major_tile() {
  if constexpr (is_tile_v<X>) return std::remove_cvref_t<X>::kLayout != Layout::RowMajor;
  else return false;
}
template <class X>
inline constexpr bool is_non_row_major_tile_v = non_row_major_tile<X>();

template <class X>
auto mat_view(X&& x) {
  using XT = std::remove_cvref_t<X>;
  if constexpr (is_tile_v<X>) {
    using T = typename XT::value_type;
    const int stride = XT::kLayout == Layout::ColMajor ? XT::kRows : XT::kCols;
    return fast::MatView<T>{x.data,      XT::kRows,      XT::kCols,     stride,
                            XT::kLayout, x.valid_rows(), x.valid_cols()};
  } else {
    return fast::view(x);
  }
}
}  // namespace detail

#define PTO_MATMUL_ANY_LAYOUT(NAME, INIT)                                              \
  template <class D, class L, class R>                                                 \
    requires(detail::is_non_row_major_tile_v<L> || detail::is_non_row_major_tile_v<R>) \
  void NAME(D&& dst, L&& src0, R&& src1) {                                             \
    auto c = as_ref(std::forward<D>(dst));                                             \
    using Acc = std::remove_pointer_t<decltype(c.data)>;                               \
    fast::matmul(c, detail::mat_view(src0), detail::mat_view(src1), INIT,              \
                 static_cast<const Acc*>(nullptr));                                    \
  }
PTO_MATMUL_ANY_LAYOUT(TMATMUL, 0)
PTO_MATMUL_ANY_LAYOUT(TMATMUL_ACC, 1)
#undef PTO_MATMUL_ANY_LAYOUT

template <class D, class L, class R, class B>
  requires(detail::is_non_row_major_tile_v<L> || detail::is_non_row_major_tile_v<R>)
void TMATMUL_BIAS(D&& dst, L&& src0, R&& src1, B&& bias) {
  auto c = as_ref(std::forward<D>(dst));
  auto br = as_ref(std::forward<B>(bias));
  using Acc = std::remove_pointer_t<decltype(c.data)>;
  ref::detail::check_covers(br, 1, c.valid_cols, "bias");
  std::vector<Acc> b(br.row(0), br.row(0) + c.valid_cols);  // bias may alias dst
  fast::matmul(c, detail::mat_view(src0), detail::mat_view(src1), 2, b.data());
}

template <class D, class L, class R>
  requires(detail::is_non_row_major_tile_v<L> || detail::is_non_row_major_tile_v<R>)
void TGEMV(D&& dst, L&& src0, R&& src1) {
  auto c = as_ref(std::forward<D>(dst));
  PTO_CHECK(c.valid_rows == 1, "TGEMV dst must be one row");
  TMATMUL(c, std::forward<L>(src0), std::forward<R>(src1));
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
