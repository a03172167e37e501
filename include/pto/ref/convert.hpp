// Reference TCVT: elementwise dtype conversion with a rounding mode.
#pragma once

#include "pto/ref/common.hpp"

namespace pto::ref {

// dst = convert(src): to floating types rounds once by `mode`; float -> int rounds by `mode`
// and saturates (NaN -> 0); int -> int saturates; x -> bool is x != 0.
template <class D, class S>
void TCVT(TileRef<D> dst, TileRef<S> src, RoundMode mode = RoundMode::RINT) {
  detail::unary(dst, src, [mode](S x) { return elem::convert<D>(x, mode); });
}

}  // namespace pto::ref
