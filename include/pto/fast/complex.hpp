// Fast "complex" instructions: TCI TTRI TGATHER TSCATTER TSORT32 TMRGSORT.
//
// TCI / TTRI are row fills the compiler vectorizes. TGATHER / TSCATTER walk the elements in the
// reference's row-major order (so an aliased dst gives the same bits) but address a dense source
// without the division by cols. TSORT32 / TMRGSORT compare one integer key per element instead of
// (value, NaN, index) tuples: the key orders values descending with NaN first and equal values
// by index, and 32-column blocks are sorted by a branch-free odd-even merge network.
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
    const U k0 = U(T(int64_t(r) * vc));
    if (descending) {
      const U base = U(U(start) - k0);
      for (int c = 0; c < vc; ++c) d[c] = T(U(base - U(T(c))));
    } else {
      const U base = U(U(start) + k0);
      for (int c = 0; c < vc; ++c) d[c] = T(U(base + U(T(c))));
    }
  }
}

template <class T>
void TTRI(TileRef<T> dst, int diagonal, bool upper) {
  ref::detail::check_tile(dst, "dst");
  const T one = elem::convert<T>(int32_t(1)), zero = elem::convert<T>(int32_t(0));
  const int vc = dst.valid_cols;
  for (int r = 0; r < dst.valid_rows; ++r) {
    T* d = dst.row(r);
    // lower: ones for c <= r + diagonal; upper: ones for c >= r + diagonal.
    const int64_t edge = int64_t(r) + diagonal + (upper ? 0 : 1);
    const int split = int(std::clamp<int64_t>(edge, 0, vc));
    std::fill(d, d + split, upper ? zero : one);
    std::fill(d + split, d + vc, upper ? one : zero);
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
    ((void)[&] {
      constexpr int a = kSortNet.first[C].first, b = kSortNet.first[C].second;
      const K x = k[a], y = k[b];
      k[a] = x < y ? x : y;
      k[b] = x < y ? y : x;
    }(), ...);
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
      for (int i = 0; i < n; ++i) {
        val[i] = s[i];
        key[i] = (K(fast::sort_key(s[i])) << kShift) | K(uint32_t(i));
      }
      for (int i = n; i < 32; ++i) key[i] = ~K(0);  // padding sorts last
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
void TMRGSORT(TileRef<T> dst, TileRef<I> dst_index, TileRef<T> src, TileRef<I> src_index,
              int run) {
  ref::detail::check_tile(dst, "dst");
  PTO_CHECK(run > 0, "run length must be positive");
  ref::detail::check_covers(dst_index, dst.valid_rows, dst.valid_cols, "dst_index");
  ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  ref::detail::check_covers(src_index, dst.valid_rows, dst.valid_cols, "src_index");
  using VK = fast::sort_key_t<T>;
  const int n = dst.valid_cols;
  VK* key = simd::scratch<VK, 0>(size_t(n));
  T* v = simd::scratch<T, 1>(size_t(n));
  I* ix = simd::scratch<I, 2>(size_t(n));
  for (int r = 0; r < dst.valid_rows; ++r) {
    const T* s = src.row(r);
    const I* si = src_index.row(r);
    for (int c = 0; c < n; ++c) key[c] = fast::sort_key(s[c]);
    for (int b = 0; b < n; b += 2 * run) {
      const int ie = std::min(b + run, n), je = std::min(b + 2 * run, n);
      int i = b, j = ie;
      for (int o = b; o < je; ++o) {
        // j goes first only if it sorts strictly before i (reads past a run end are masked).
        const int jj = std::min(j, n - 1), ii = std::min(i, n - 1);
        const bool j_first = key[jj] < key[ii] || (key[jj] == key[ii] && si[jj] < si[ii]);
        const bool take_i = (j >= je) | ((i < ie) & !j_first);
        const int from = take_i ? i : j;
        v[o] = s[from];
        ix[o] = si[from];
        i += take_i;
        j += !take_i;
      }
    }
    std::copy_n(v, n, dst.row(r));
    std::copy_n(ix, n, dst_index.row(r));
  }
}

}  // namespace PTO_ISA_NS
}  // namespace pto
