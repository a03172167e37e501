// Fast TCVT: vectorized float <-> fp16/bf16 and small-int -> float conversions; every other
// pair (directed modes to floating types, int -> bf16, ...) runs the reference.
#pragma once

#include "pto/fast/elementwise.hpp"
#include "pto/fast/movement.hpp"
#include "pto/ref/convert.hpp"

namespace pto {
inline namespace PTO_ISA_NS {

template <class D, class S>
void TCVT(TileRef<D> dst, TileRef<S> src, RoundMode mode = RoundMode::RINT) {
  // Integers of at most 24 bits are exact in float, so int -> float -> fp16 rounds only once.
  constexpr bool small_int = is_int_v<S> && std::numeric_limits<S>::digits <= 24;
  if constexpr (std::is_same_v<D, S>) {
    TMOV(dst, src);
  } else if constexpr (is_float_v<D> && (is_float_v<S> || small_int)) {
    if (mode == RoundMode::RINT || std::is_same_v<D, float>) {
      if constexpr (is_float_v<S>) fast::map(dst, fast::Identity{}, src);
      else fast::map(dst, [](S x) { return float(x); }, src);
      return;
    }
    ref::TCVT(dst, src, mode);
  } else if constexpr (is_int_v<D> && is_float_v<S>) {
    fast::map(dst, [mode](float x) { return elem::convert<D>(x, mode); }, src);
  } else {
    ref::TCVT(dst, src, mode);
  }
}

}  // namespace PTO_ISA_NS
}  // namespace pto
