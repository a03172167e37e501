// Reference compare / select: TCMP, TCMPS produce a mask tile, TSEL consumes one; TSELS picks
// one of two tiles.
#pragma once

#include "pto/ref/common.hpp"

namespace pto::ref {

// mask = (src0 cmp src1) ? 1 : 0. The mask tile is bool or any integer type (one element per
// element: the CPU form of the hardware's predicate register).
template <class M, class T>
void TCMP(TileRef<M> mask, TileRef<T> src0, TileRef<T> src1, CmpMode mode) {
  detail::binary(mask, src0, src1, [mode](T a, T b) { return M(elem::compare(a, b, mode)); });
}
template <class M, class T>
void TCMPS(TileRef<M> mask, TileRef<T> src, std::type_identity_t<T> scalar, CmpMode mode) {
  detail::unary(mask, src, [mode, scalar](T a) { return M(elem::compare(a, scalar, mode)); });
}

// dst = mask != 0 ? src0 : src1
template <class T, class M>
void TSEL(TileRef<T> dst, TileRef<M> mask, TileRef<T> src0, TileRef<T> src1) {
  detail::ternary(dst, mask, src0, src1, [](M m, T a, T b) { return m ? a : b; });
}
// Global select (as in the PTO manual): dst = select == 1 ? src0 : src1, one choice for the tile.
template <class T>
void TSELS(TileRef<T> dst, TileRef<T> src0, TileRef<T> src1, int select) {
  detail::binary(dst, src0, src1, [select](T a, T b) { return select == 1 ? a : b; });
}

}  // namespace pto::ref
