// Fast TLOAD / TSTORE: one vector copy per tile row when the GM rows are dense. Atomic TSTORE
// updates 8 bytes (2 fp32, 4 fp16, 8 int8 ...) per compare-and-swap instead of one element, and
// MGATHER / MSCATTER address a dense tensor directly, checking the index range once.
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

namespace fast {

// d[i] += s[i] for i < n, each element atomically (with T's rounding, as elem::add). Aligned
// 8-byte words are updated with one compare-and-swap each: every element in the word is then
// updated atomically too. (x86 and AArch64 order mixed-size atomics on the same bytes.)
template <class T>
inline void atomic_add_row(T* d, const T* s, int n) {
  int i = 0;
  if constexpr (sizeof(T) < 8) {
    using W = uint64_t __attribute__((may_alias));
    constexpr int L = 8 / sizeof(T);
    for (; i < n && reinterpret_cast<uintptr_t>(d + i) % 8 != 0; ++i)
      ref::detail::atomic_add(d + i, s[i]);
    for (; i + L <= n; i += L) {
      W* w = reinterpret_cast<W*>(d + i);
      uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED), next;
      do {
        T o[L], r[L];
        std::memcpy(o, &old, 8);
        for (int j = 0; j < L; ++j) r[j] = elem::add(o[j], s[i + j]);
        std::memcpy(&next, r, 8);
      } while (
          !__atomic_compare_exchange_n(w, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    }
  } else if constexpr (std::is_integral_v<T>) {
    for (; i < n; ++i) __atomic_fetch_add(d + i, s[i], __ATOMIC_RELAXED);  // wraps
  }
  for (; i < n; ++i) ref::detail::atomic_add(d + i, s[i]);
}

// True if g's elements are at data[row-major logical index] (unit dims may have any stride).
template <class T>
inline bool dense_global(const GlobalRef<T>& g) {
  int64_t want = 1;
  for (int d = 4; d >= 0; --d) {
    if (g.shape[d] != 1 && g.stride[d] != want) return false;
    want *= g.shape[d];
  }
  return true;
}

// Every index of the tile's valid region in [0, n)?
template <class I>
inline bool indices_in_range(const TileRef<I>& index, int rows, int cols, int64_t n) {
  bool ok = true;
  for (int r = 0; r < rows; ++r) {
    const I* ix = index.row(r);
    for (int c = 0; c < cols; ++c) ok &= uint64_t(int64_t(ix[c])) < uint64_t(n);
  }
  return ok;
}

}  // namespace fast

template <class T, class I>
void MGATHER(TileRef<T> dst, GlobalRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(index, dst.valid_rows, dst.valid_cols, "index");
  if (!fast::dense_global(src)) return ref::MGATHER(dst, src, index);
  PTO_CHECK(fast::indices_in_range(index, dst.valid_rows, dst.valid_cols, src.numel()),
            "MGATHER index out of range");
  for (int r = 0; r < dst.valid_rows; ++r) {
    T* d = dst.row(r);
    const I* ix = index.row(r);
    for (int c = 0; c < dst.valid_cols; ++c) d[c] = src.data[int64_t(ix[c])];
  }
}

template <class T, class I>
void MSCATTER(GlobalRef<T> dst, TileRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  ref::detail::check_tile(src, "src");
  ref::detail::check_covers(index, src.valid_rows, src.valid_cols, "index");
  if (!fast::dense_global(dst)) return ref::MSCATTER(dst, src, index);
  PTO_CHECK(fast::indices_in_range(index, src.valid_rows, src.valid_cols, dst.numel()),
            "MSCATTER index out of range");
  for (int r = 0; r < src.valid_rows; ++r) {  // in order: later elements win
    const T* s = src.row(r);
    const I* ix = index.row(r);
    for (int c = 0; c < src.valid_cols; ++c) dst.data[int64_t(ix[c])] = s[c];
  }
}

template <class T>
void TSTORE(GlobalRef<T> dst, TileRef<T> src, AtomicMode atomic = AtomicMode::NONE) {
  ref::detail::check_tile(src, "src");
  ref::detail::check_global_matches(dst, src);
  if (atomic == AtomicMode::ADD) {
    if constexpr (std::is_same_v<T, bool>) {
      PTO_CHECK(false, "atomic add on bool");
    } else {
      if (dst.stride[4] != 1) return ref::TSTORE(dst, src, atomic);
      for (int r = 0; r < src.valid_rows; ++r)
        fast::atomic_add_row(dst.addr(r, 0), src.row(r), src.valid_cols);
    }
    return;
  }
  if (dst.stride[4] != 1) return ref::TSTORE(dst, src, atomic);
  for (int r = 0; r < src.valid_rows; ++r)
    simd::copy_bytes(dst.addr(r, 0), src.row(r), sizeof(T) * size_t(src.valid_cols));
}

template <class T>
void TPREFETCH(GlobalRef<T> src) {
  for (int64_t r = 0; r < src.tile_rows(); ++r) __builtin_prefetch(src.addr(r, 0));
}

}  // namespace PTO_ISA_NS
}  // namespace pto
