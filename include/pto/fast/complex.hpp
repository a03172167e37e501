// Fast "complex" instructions: TCI TTRI TGATHER TSCATTER TSORT32 TMRGSORT.
//
// TCI / TTRI are row fills the compiler vectorizes. TGATHER / TSCATTER walk the elements in the
// reference's row-major order (so an aliased dst gives the same bits) but address a dense source
// without the division by cols. TSORT32 / TMRGSORT compare one integer key per element instead of
// (value, NaN, index) tuples: the key orders values descending with NaN first and equal values
// by index; 32-column blocks are sorted by a branch-free odd-even merge network, and sorted runs
// are merged branch-free from both ends at once.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

#include "pto/ref/complex.hpp"
#include "pto/simd.hpp"

namespace pto {
inline namespace PTO_ISA_NS {

template <class T>
void TCI(TileRef<T> dst, std::type_identity_t<T> start, bool descending = false) {
  static_assert(is_int_v<T>, "TCI needs an integer type");
  ref::detail::check_tile(dst, "dst");
  using U = elem::wrap_t<T>;  // wrapping arithmetic, as the reference's elem::add / elem::sub
  const int vc = dst.valid_cols;
  for (int r = 0; r < dst.valid_rows; ++r) {
    T* d = dst.row(r);
    // Everything modulo 2^bits(U), truncated to T at the end: the same as T's wrapping.
    const U k0 = U(int64_t(r) * vc);
    if (descending) {
      const U base = U(U(start) - k0);
      for (int c = 0; c < vc; ++c) d[c] = T(base - U(c));
    } else {
      const U base = U(U(start) + k0);
      for (int c = 0; c < vc; ++c) d[c] = T(base + U(c));
    }
  }
}

template <class T>
void TTRI(TileRef<T> dst, int diagonal, bool upper) {
  ref::detail::check_tile(dst, "dst");
  const int vc = dst.valid_cols;
  // The reference's expression in a straight loop (both vectorize; this drops the lambda).
  for (int r = 0; r < dst.valid_rows; ++r) {
    T* d = dst.row(r);
    if (upper)
      for (int c = 0; c < vc; ++c) d[c] = elem::convert<T>(int32_t(c - r >= diagonal));
    else
      for (int c = 0; c < vc; ++c) d[c] = elem::convert<T>(int32_t(c - r <= diagonal));
  }
}

template <class T, class I>
void TGATHER(TileRef<T> dst, TileRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(index, dst.valid_rows, dst.valid_cols, "index");
  ref::detail::check_tile(src, "src");
  const int64_t n = int64_t(src.rows) * src.cols;
  const T zero = elem::convert<T>(int32_t(0));
  const bool dense = src.stride == src.cols;
  for (int r = 0; r < dst.valid_rows; ++r) {
    T* d = dst.row(r);
    const I* ix = index.row(r);
    for (int c = 0; c < dst.valid_cols; ++c) {
      const int64_t j = int64_t(ix[c]);
      if (uint64_t(j) >= uint64_t(n)) d[c] = zero;
      else if (dense) d[c] = src.data[j];
      else d[c] = src.data[(j / src.cols) * src.stride + j % src.cols];
    }
  }
}

template <class T, class I>
void TSCATTER(TileRef<T> dst, TileRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  ref::detail::check_tile(src, "src");
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(index, src.valid_rows, src.valid_cols, "index");
  const int64_t n = int64_t(dst.rows) * dst.cols;
  const bool dense = dst.stride == dst.cols;
  for (int r = 0; r < src.valid_rows; ++r) {
    const T* s = src.row(r);
    const I* ix = index.row(r);
    for (int c = 0; c < src.valid_cols; ++c) {
      const int64_t j = int64_t(ix[c]);
      if (uint64_t(j) >= uint64_t(n)) continue;
      if (dense) dst.data[j] = s[c];
      else dst.data[(j / dst.cols) * dst.stride + j % dst.cols] = s[c];
    }
  }
}

namespace fast {

// Sort key of a value: smaller key = earlier in the descending order of TSORT32 / TMRGSORT
// (NaN first, then +inf ... -inf; -0 and +0 are equal, so the index decides, as in the
// reference). 32 bits for types up to 32 bits, 64 bits for int64.
template <class T>
using sort_key_t = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <class T>
inline sort_key_t<T> sort_key(T x) {
  if constexpr (is_float_v<T>) {
    const float f = float(x) + 0.0f;  // -0 + 0 = +0
    const uint32_t u = std::bit_cast<uint32_t>(f);
    // Negative floats order by their bits; non-negative ones reversed; NaN before everything.
    const uint32_t k = (u >> 31) ? u : (u ^ 0x7fffffffu);
    return f != f ? 0u : k;
  } else if constexpr (std::is_signed_v<T>) {
    using K = sort_key_t<T>;
    using S = std::make_signed_t<K>;
    return K(~(K(S(x)) ^ (K(1) << (8 * sizeof(K) - 1))));
  } else {
    return sort_key_t<T>(~sort_key_t<T>(x));
  }
}

// Batcher's odd-even merge sort network for 32 inputs (191 comparators).
constexpr int kSortN = 32;
constexpr auto make_sort_network() {
  std::array<std::pair<int, int>, 191> net{};
  int m = 0;
  for (int p = 1; p < kSortN; p <<= 1)
    for (int k = p; k >= 1; k >>= 1)
      for (int j = k % p; j + k < kSortN; j += 2 * k)
        for (int i = 0; i < std::min(k, kSortN - j - k); ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) net[m++] = {i + j, i + j + k};
  return std::pair{net, m};
}
inline constexpr auto kSortNet = make_sort_network();
static_assert(kSortNet.second == 191, "odd-even merge sort of 32 has 191 comparators");

// Sorts 32 distinct keys ascending; the comparators are unrolled and branch free.
template <class K>
inline void sort32(K* k) {
  [&]<size_t... C>(std::index_sequence<C...>) {
    (
        (void)[&] {
          constexpr int a = kSortNet.first[C].first, b = kSortNet.first[C].second;
          const K x = k[a], y = k[b];
          k[a] = x < y ? x : y;
          k[b] = x < y ? y : x;
        }(),
        ...);
  }(std::make_index_sequence<191>{});
}

}  // namespace fast

template <class T, class I>
void TSORT32(TileRef<T> dst, TileRef<T> src, TileRef<I> dst_index) {
  ref::detail::check_tile(dst, "dst");
  ref::detail::check_covers(dst_index, dst.valid_rows, dst.valid_cols, "dst_index");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  // Key = (value key, column): distinct, so the network needs no stable tie rule.
  using VK = fast::sort_key_t<T>;
  using K = std::conditional_t<sizeof(VK) == 8, unsigned __int128, uint64_t>;
  constexpr int kShift = 8 * sizeof(VK);
  for (int r = 0; r < dst.valid_rows; ++r)
    for (int b = 0; b < dst.valid_cols; b += 32) {
      const int n = std::min(32, dst.valid_cols - b);
      const T* s = src.row(r) + b;
      T val[32];  // dst may alias src
      K key[32];
      for (int i = 0; i < 32; ++i) {
        if (i < n) val[i] = s[i];
        key[i] = i < n ? (K(fast::sort_key(s[i])) << kShift) | K(uint32_t(i)) : ~K(0);  // padding sorts last
      }
      fast::sort32(key);
      T* d = dst.row(r) + b;
      I* di = dst_index.row(r) + b;
      for (int i = 0; i < n; ++i) {
        const int j = int(uint32_t(key[i]) & 31u);
        d[i] = val[j];
        di[i] = I(b + j);
      }
    }
}

template <class T, class I>
void TMRGSORT(TileRef<T> dst, TileRef<I> dst_index, TileRef<T> src, TileRef<I> src_index, int run) {
  ref::detail::check_tile(dst, "dst");
  PTO_CHECK(run > 0, "run length must be positive");
  ref::detail::check_covers(dst_index, dst.valid_rows, dst.valid_cols, "dst_index");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  ref::detail::check_covers(src_index, dst.valid_rows, dst.valid_cols, "src_index");
  // One key per element: (value key, source index with its sign bit flipped so that unsigned
  // order is the index's order). Equal keys keep the left run first, as the reference.
  using VK = fast::sort_key_t<T>;
  using IK = std::conditional_t<sizeof(I) == 8, uint64_t, uint32_t>;
  using K = std::conditional_t<sizeof(VK) + sizeof(IK) <= 8, uint64_t, unsigned __int128>;
  const int n = dst.valid_cols;
  K* key = simd::scratch<K, 0>(size_t(n));
  T* v = simd::scratch<T, 1>(size_t(n));
  I* ix = simd::scratch<I, 2>(size_t(n));
  for (int r = 0; r < dst.valid_rows; ++r) {
    const T* s = src.row(r);
    const I* si = src_index.row(r);
    for (int c = 0; c < n; ++c) {
      IK ik;
      if constexpr (std::is_signed_v<I>)
        ik = IK(std::make_signed_t<IK>(si[c])) ^ (IK(1) << (8 * sizeof(IK) - 1));
      else ik = IK(si[c]);
      key[c] = (K(fast::sort_key(s[c])) << (8 * sizeof(IK))) | K(ik);
    }
    for (int b = 0; b < n; b += 2 * run) {
      const int ie = std::min(b + run, n), je = std::min(b + 2 * run, n);
      // Branch free. The front takes the left head unless the right head sorts strictly before
      // it (the reference's rule, which defines the result for any input). When both runs are
      // sorted that is the stable merge, and so is taking from the back the left tail only if
      // it sorts strictly after the right tail: then both ends run at once, two independent
      // chains instead of one. Reads past a run end are clamped and masked.
      auto at = [&](int x) { return key[std::clamp(x, 0, n - 1)]; };
      auto put = [&](int o, int from) {
        v[o] = s[from];
        ix[o] = si[from];
      };
      bool sorted = true;
      for (int x = b; x + 1 < je; ++x) sorted &= x + 1 == ie || !(key[x + 1] < key[x]);
      int i = b, j = ie, ia = ie - 1, jb = je - 1;
      const int total = je - b, steps = sorted ? total / 2 : total;
      for (int t = 0; t < steps; ++t) {
        const bool front_i = (j >= je) | ((i < ie) & !(at(j) < at(i)));
        put(b + t, front_i ? i : j);
        i += front_i;
        j += !front_i;
        if (sorted) {
          const bool back_a = (jb < ie) | ((ia >= b) & (at(jb) < at(ia)));
          put(je - 1 - t, back_a ? ia : jb);
          ia -= back_a;
          jb -= !back_a;
        }
      }
      if (sorted && total % 2) {
        const bool front_i = (j >= je) | ((i < ie) & !(at(j) < at(i)));
        put(b + total / 2, front_i ? i : j);
      }
    }
    std::copy_n(v, n, dst.row(r));
    std::copy_n(ix, n, dst_index.row(r));
  }
}

}  // namespace PTO_ISA_NS
}  // namespace pto
