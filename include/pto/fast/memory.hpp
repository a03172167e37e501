// Fast TLOAD / TSTORE: one vector copy per tile row when the GM rows are dense.
#pragma once

#include <cstring>

#include "pto/ref/memory.hpp"
#include "pto/simd.hpp"

namespace pto {
inline namespace PTO_ISA_NS {

template <class T>
void TLOAD(TileRef<T> dst, GlobalRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_global_matches(src, dst);
  if (src.stride[4] != 1) return ref::TLOAD(dst, src);
  for (int r = 0; r < dst.valid_rows; ++r)
    simd::copy_bytes(dst.row(r), src.addr(r, 0), sizeof(T) * size_t(dst.valid_cols));
}

template <class T>
void TSTORE(GlobalRef<T> dst, TileRef<T> src, AtomicMode atomic = AtomicMode::NONE) {
  ref::detail::check_tile(src, "src");
  ref::detail::check_global_matches(dst, src);
  if (atomic != AtomicMode::NONE || dst.stride[4] != 1) return ref::TSTORE(dst, src, atomic);
  for (int r = 0; r < src.valid_rows; ++r)
    simd::copy_bytes(dst.addr(r, 0), src.row(r), sizeof(T) * size_t(src.valid_cols));
}

template <class T>
void TPREFETCH(GlobalRef<T> src) {
  for (int64_t r = 0; r < src.tile_rows(); ++r) __builtin_prefetch(src.addr(r, 0));
}

}  // namespace PTO_ISA_NS
}  // namespace pto
