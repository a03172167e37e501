// Fast TLOAD / TSTORE: one vector copy per tile row when the GM rows are dense. Atomic TSTORE
// updates 8 bytes (2 fp32, 4 fp16, 8 int8 ...) per compare-and-swap instead of one element, and
// MGATHER / MSCATTER address a dense tensor directly, checking the index range once.
#pragma once

#include <algorithm>
#include <cstring>

#include "pto/ref/memory.hpp"
#include "pto/simd.hpp"

namespace pto {
inline namespace PTO_ISA_NS {

namespace fast {
// dst[r][c] = s[c * ld + r]: the transpose of a dense block, in 8 x 8 squares so that both sides
// move whole cache lines (AVX2: an in-register 8 x 8 transpose for 4-byte types).
template <class T>
void load_transposed(TileRef<T> dst, const T* s, int64_t ld) {
  const int R = dst.valid_rows, C = dst.valid_cols;
  for (int r0 = 0; r0 < R; r0 += 8)
    for (int c0 = 0; c0 < C; c0 += 8) {
#ifdef PTO_SIMD_AVX2
      if constexpr (sizeof(T) == 4) {
        if (r0 + 8 <= R && c0 + 8 <= C) {
          __m256 v[8];
          for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + (c0 + i) * ld + r0));
          __m256 t[8];
          for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
            t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
          }
          for (int i = 0; i < 8; i += 4) {
            v[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
            v[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
            v[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            v[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
          }
          for (int i = 0; i < 4; ++i) {
            t[i] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x20);
            t[i + 4] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x31);
          }
          for (int i = 0; i < 8; ++i) _mm256_storeu_ps(reinterpret_cast<float*>(dst.row(r0 + i) + c0), t[i]);
          continue;
        }
      }
#endif
      const int re = std::min(R, r0 + 8), ce = std::min(C, c0 + 8);
      for (int c = c0; c < ce; ++c)
        for (int r = r0; r < re; ++r) dst.at(r, c) = s[c * ld + r];
    }
}
}  // namespace fast

template <class T>
void TLOAD(TileRef<T> dst, GlobalRef<T> src) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_global_matches(src, dst);
  if (src.stride[4] != 1) {
    // A 2-D view whose rows are dense columns of the tensor (a transposed operand): transpose.
    if (src.shape[0] == 1 && src.shape[1] == 1 && src.shape[2] == 1 && src.stride[3] == 1)
      return fast::load_transposed(dst, src.data, src.stride[4]);
    return ref::TLOAD(dst, src);
  }
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
    for (; i < n && reinterpret_cast<uintptr_t>(d + i) % 8 != 0; ++i) ref::detail::atomic_add(d + i, s[i]);
    for (; i + L <= n; i += L) {
      W* w = reinterpret_cast<W*>(d + i);
      uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED), next;
      do {
        T o[L], r[L];
        std::memcpy(o, &old, 8);
        for (int j = 0; j < L; ++j) r[j] = elem::add(o[j], s[i + j]);
        std::memcpy(&next, r, 8);
      } while (!__atomic_compare_exchange_n(w, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
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
  PTO_CHECK(fast::indices_in_range(index, dst.valid_rows, dst.valid_cols, src.numel()), "MGATHER index out of range");
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
  PTO_CHECK(fast::indices_in_range(index, src.valid_rows, src.valid_cols, dst.numel()), "MSCATTER index out of range");
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
      for (int r = 0; r < src.valid_rows; ++r) fast::atomic_add_row(dst.addr(r, 0), src.row(r), src.valid_cols);
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
