// Reference "complex" instructions: TGATHER TSCATTER TCI TTRI TSORT32 TMRGSORT TQUANT TDEQUANT.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "pto/ref/common.hpp"

namespace pto::ref {

// Gather by flat index, as the PTO CPU simulator defines it: dst[r, c] = src.flat[index[r, c]],
// flat = row * src.cols + col over src's allocated rows x cols; an index outside it gives 0.
template <class T, class I>
void TGATHER(TileRef<T> dst, TileRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  detail::check_covers(index, dst.valid_rows, dst.valid_cols, "index");
  detail::check_tile(src, "src");
  const int64_t n = int64_t(src.rows) * src.cols;
  detail::for_each(dst, [&](int r, int c) {
    const int64_t j = int64_t(index.at(r, c));
    if (j < 0 || j >= n) return T(elem::convert<T>(int32_t(0)));
    return src.at(int(j / src.cols), int(j % src.cols));
  });
}

// Scatter by flat index over src's valid region: dst.flat[index[r, c]] = src[r, c] (row-major
// order, later elements win); indices outside dst's allocated rows x cols are skipped.
template <class T, class I>
void TSCATTER(TileRef<T> dst, TileRef<T> src, TileRef<I> index) {
  static_assert(is_int_v<I>, "index must be an integer tile");
  detail::check_tile(src, "src");
  detail::check_tile(dst, "dst");
  detail::check_covers(index, src.valid_rows, src.valid_cols, "index");
  const int64_t n = int64_t(dst.rows) * dst.cols;
  for (int r = 0; r < src.valid_rows; ++r)
    for (int c = 0; c < src.valid_cols; ++c) {
      const int64_t j = int64_t(index.at(r, c));
      if (j >= 0 && j < n) dst.at(int(j / dst.cols), int(j % dst.cols)) = src.at(r, c);
    }
}

// Contiguous integers: dst[r, c] = start + k (or start - k when descending), k = r * VC + c.
template <class T>
void TCI(TileRef<T> dst, std::type_identity_t<T> start, bool descending = false) {
  static_assert(is_int_v<T>, "TCI needs an integer type");
  const int vc = dst.valid_cols;
  detail::for_each(dst, [&](int r, int c) {
    const T k = T(int64_t(r) * vc + c);
    return descending ? elem::sub(start, k) : elem::add(start, k);
  });
}

// Triangular mask: dst[r, c] = 1 if c - r <= diagonal (lower) or c - r >= diagonal (upper),
// else 0 (torch.tril / torch.triu of ones).
template <class T>
void TTRI(TileRef<T> dst, int diagonal, bool upper) {
  detail::for_each(dst, [&](int r, int c) {
    return elem::convert<T>(int32_t(upper ? c - r >= diagonal : c - r <= diagonal));
  });
}

namespace detail {
// Sort order of (value, index) pairs: descending by value (NaN first), then ascending index.
template <class T, class I>
bool sort_before(T va, I ia, T vb, I ib) {
  const bool na = elem::is_nan(va), nb = elem::is_nan(vb);
  if (na != nb) return na;
  if (!na && elem::less(vb, va)) return true;
  if (!na && elem::less(va, vb)) return false;
  return ia < ib;
}
}  // namespace detail

// Sorts each block of 32 columns of every row in descending order; dst_index gets the source
// column of each value. A short tail block is sorted on its own. Operand order as in the PTO
// manual: (dst, src, idx).
template <class T, class I>
void TSORT32(TileRef<T> dst, TileRef<T> src, TileRef<I> dst_index) {
  detail::check_tile(dst, "dst");
  detail::check_covers(dst_index, dst.valid_rows, dst.valid_cols, "dst_index");
  detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  for (int r = 0; r < dst.valid_rows; ++r)
    for (int b = 0; b < dst.valid_cols; b += 32) {
      const int n = std::min(32, dst.valid_cols - b);
      std::vector<int> idx(n);
      std::iota(idx.begin(), idx.end(), b);
      std::vector<T> val(n);
      for (int i = 0; i < n; ++i) val[i] = src.at(r, b + i);
      std::sort(idx.begin(), idx.end(), [&](int x, int y) {
        return detail::sort_before(val[x - b], x, val[y - b], y);
      });
      for (int i = 0; i < n; ++i) {
        dst.at(r, b + i) = val[idx[i] - b];
        dst_index.at(r, b + i) = I(idx[i]);
      }
    }
}

// Merges, in every row, each pair of adjacent descending runs of length `run` (as TSORT32
// produces) into one run of length 2 * run; ties keep the smaller index first.
template <class T, class I>
void TMRGSORT(TileRef<T> dst, TileRef<I> dst_index, TileRef<T> src, TileRef<I> src_index, int run) {
  detail::check_tile(dst, "dst");
  PTO_CHECK(run > 0, "run length must be positive");
  detail::check_covers(dst_index, dst.valid_rows, dst.valid_cols, "dst_index");
  detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  detail::check_covers(src_index, dst.valid_rows, dst.valid_cols, "src_index");
  const int n = dst.valid_cols;
  std::vector<T> v(n);
  std::vector<I> ix(n);
  for (int r = 0; r < dst.valid_rows; ++r) {
    for (int b = 0; b < n; b += 2 * run) {
      int i = b, j = std::min(b + run, n);
      const int ie = j, je = std::min(b + 2 * run, n);
      for (int o = b; o < je; ++o) {
        const bool take_i =
            j >= je || (i < ie && !detail::sort_before(src.at(r, j), src_index.at(r, j),
                                                      src.at(r, i), src_index.at(r, i)));
        const int s = take_i ? i++ : j++;
        v[o] = src.at(r, s);
        ix[o] = src_index.at(r, s);
      }
    }
    for (int c = 0; c < n; ++c) dst.at(r, c) = v[c], dst_index.at(r, c) = ix[c];
  }
}

// Quantize: dst = saturate(round(fma(src, scale[r], offset))) with the rounding `mode`, computed
// in float; scale is a per-row (R x 1) fp32 tile.
template <class D, class S>
void TQUANT(TileRef<D> dst, TileRef<S> src, TileRef<float> scale, float offset = 0.0f,
            RoundMode mode = RoundMode::RINT) {
  static_assert(is_int_v<D> && is_float_v<S>, "TQUANT: float -> integer");
  detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  detail::check_covers(scale, dst.valid_rows, 1, "scale");
  detail::for_each(dst, [&](int r, int c) {
    return elem::convert<D>(std::fmaf(float(src.at(r, c)), scale.at(r, 0), offset), mode);
  });
}

// Dequantize: dst = T((float(src) - offset) * scale[r]), each step rounded in float.
template <class D, class S>
void TDEQUANT(TileRef<D> dst, TileRef<S> src, TileRef<float> scale, float offset = 0.0f) {
  static_assert(is_float_v<D> && is_int_v<S>, "TDEQUANT: integer -> float");
  detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  detail::check_covers(scale, dst.valid_rows, 1, "scale");
  detail::for_each(dst, [&](int r, int c) {
    const float t = float(src.at(r, c)) - offset;
    return elem::convert<D>(t * scale.at(r, 0));
  });
}

}  // namespace pto::ref
