// Reference memory instructions: TLOAD / TSTORE between a GlobalRef and a tile.
#pragma once

#include <atomic>

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

namespace detail {
// dst += v atomically (other cores may accumulate into the same GM element).
template <class T>
void atomic_add(T* dst, T v) {
  std::atomic_ref<T> ref(*dst);
  T old = ref.load(std::memory_order_relaxed);
  while (!ref.compare_exchange_weak(old, elem::add(old, v), std::memory_order_relaxed)) {
  }
}
}  // namespace detail

// Writes src's valid region to dst (same shape mapping as TLOAD); AtomicMode::ADD accumulates
// into dst instead (atomically per element, with T's rounding).
template <class T>
void TSTORE(GlobalRef<T> dst, TileRef<T> src, AtomicMode atomic = AtomicMode::NONE) {
  detail::check_tile(src, "src");
  detail::check_global_matches(dst, src);
  if (atomic == AtomicMode::ADD) {
    if constexpr (std::is_same_v<T, bool>) {
      PTO_CHECK(false, "atomic add on bool");
    } else {
      for (int r = 0; r < src.valid_rows; ++r)
        for (int c = 0; c < src.valid_cols; ++c) detail::atomic_add(dst.addr(r, c), src.at(r, c));
    }
    return;
  }
  for (int r = 0; r < src.valid_rows; ++r)
    for (int c = 0; c < src.valid_cols; ++c) *dst.addr(r, c) = src.at(r, c);
}

// A hint only: no architectural effect.
template <class T>
void TPREFETCH(GlobalRef<T>) {}

// dst[r, c] = src[index[r, c]] with index the row-major logical index into src.
template <class T, class I>
void MGATHER(TileRef<T> dst, GlobalRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  detail::check_covers(index, dst.valid_rows, dst.valid_cols, "index");
  const int64_t n = src.numel();
  detail::for_each(dst, [&](int r, int c) {
    const int64_t i = int64_t(index.at(r, c));
    PTO_CHECK(i >= 0 && i < n, "MGATHER index out of range");
    return *src.at_linear(i);
  });
}

// dst[index[r, c]] = src[r, c] over src's valid region (row-major order; later elements win).
template <class T, class I>
void MSCATTER(GlobalRef<T> dst, TileRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  detail::check_tile(src, "src");
  detail::check_covers(index, src.valid_rows, src.valid_cols, "index");
  const int64_t n = dst.numel();
  for (int r = 0; r < src.valid_rows; ++r)
    for (int c = 0; c < src.valid_cols; ++c) {
      const int64_t i = int64_t(index.at(r, c));
      PTO_CHECK(i >= 0 && i < n, "MSCATTER index out of range");
      *dst.at_linear(i) = src.at(r, c);
    }
}

}  // namespace pto::ref
