// Helpers that generated kernels call: N-D tile loads and stores (slab by slab, so tails land
// at their N-D positions), N-D broadcasts, column reductions over any tile axis, and the
// integer helpers of symbolic expressions. Compiled into every generated kernel.
#pragma once

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <pto/pto.hpp>

#include "pypto/atomic_store.hpp"
#include "pypto/cube_shared.hpp"
#include "pypto/cube_support.hpp"
#include "pypto/dist_signal.hpp"
#include "pypto/index_nd.hpp"
#include "pypto/kernel_abi.h"
#include "pypto/kernel_vec.hpp"
#include "pypto/random.hpp"

namespace pypto_kernel {

inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

/// The 2-D instruction view of an N-D tile: all rows (padding rows hold zeros or stale
/// values that nothing reads), valid columns.
template <class T>
inline pto::TileRef<T> Ref(char* p, int rows, int cols, int64_t stride, int64_t valid_cols) {
  return pto::TileRef<T>{reinterpret_cast<T*>(p),  rows, cols,
                         static_cast<int>(stride), rows, static_cast<int>(valid_cols)};
}

// Calls f(tile_row, param_offset) for each valid 2-D slab of an R-dim tile.
template <int R, class F>
inline void ForEachSlab(const int64_t* shape, const int64_t* valid, const int64_t* start, const int64_t* stride,
                        F&& f) {
  int64_t base = 0;
  for (int d = 0; d < R; ++d) base += start[d] * stride[d];
  if constexpr (R <= 2) {
    f(int64_t(0), base);
  } else {
    int64_t idx[R] = {};
    for (;;) {
      int64_t row = 0, off = base;
      for (int d = 0; d < R - 2; ++d) {
        row = row * shape[d] + idx[d];
        off += idx[d] * stride[d];
      }
      f(row * shape[R - 2], off);
      int d = R - 3;
      while (d >= 0 && ++idx[d] == valid[d]) idx[d--] = 0;
      if (d < 0) return;
    }
  }
}

// Calls f(tile_slab, global_slab) for each valid 2-D slab of an R-dim tile and the matching
// window of the parameter: the one mapping TLOAD and TSTORE share.
template <class T, int R, class F>
inline void ForEachSlabRef(char* tile, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                           const PyptoParamView& p, F&& f) {
  const int cols = static_cast<int>(shape[R - 1]);
  const int64_t vrows = R >= 2 ? valid[R - 2] : 1;
  const int64_t srow = R >= 2 ? p.stride[R - 2] : 0;
  ForEachSlab<R>(shape, valid, start, p.stride, [&](int64_t row, int64_t off) {
    pto::TileRef<T> t{reinterpret_cast<T*>(tile) + row * cols,
                      static_cast<int>(R >= 2 ? shape[R - 2] : 1),
                      cols,
                      cols,
                      static_cast<int>(vrows),
                      static_cast<int>(valid[R - 1])};
    pto::GlobalRef<T> g{
        reinterpret_cast<T*>(p.data) + off, {1, 1, 1, vrows, valid[R - 1]}, {0, 0, 0, srow, p.stride[R - 1]}};
    f(t, g);
  });
}

template <class T, int R>
inline void LoadND(char* tile, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                   const PyptoParamView& p) {
  bool tail = false;
  int64_t elems = 1;
  for (int d = 0; d < R; ++d) {
    tail = tail || valid[d] < shape[d];
    elems *= shape[d];
  }
  if (tail) std::memset(tile, 0, elems * sizeof(T));
  ForEachSlabRef<T, R>(tile, shape, valid, start, p, [](auto t, auto g) { pto::TLOAD(t, g); });
}

// A whole tile whose rows are evenly spaced in global memory is used in place: returns its
// address there and sets `stride` (elements between rows). Otherwise loads it into `tile`
// (LoadND) and returns that. Reading global memory directly saves a copy per tile.
template <class T, int R>
inline char* LoadView(char* tile, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                      const PyptoParamView& p, int64_t& stride) {
  bool ok = p.stride[R - 1] == 1;
  for (int d = 0; d < R; ++d) ok = ok && valid[d] == shape[d];
  // Row r of the 2-D view flattens dims 0..R-2. Rows are evenly spaced by sigma, the stride of
  // the innermost of those dims with extent > 1, when every outer such dim steps over exactly
  // the rows inside it.
  int64_t sigma = shape[R - 1];
  int k = -1;
  for (int d = R - 2; d >= 0; --d)
    if (shape[d] > 1) {
      k = d;
      break;
    }
  if (k >= 0) {
    sigma = p.stride[k];
    int64_t rows_inside = 1;
    for (int d = k; d >= 0; --d) {
      if (shape[d] > 1 && d < k) ok = ok && p.stride[d] == sigma * rows_inside;
      rows_inside *= shape[d];
    }
  }
  if (ok && sigma >= shape[R - 1]) {
    int64_t off = 0;
    for (int d = 0; d < R; ++d) off += start[d] * p.stride[d];
    stride = sigma;
    return p.data + off * static_cast<int64_t>(sizeof(T));
  }
  LoadND<T, R>(tile, shape, valid, start, p);
  stride = shape[R - 1];
  return tile;
}

template <class T, int R>
inline void StoreND(char* tile, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                    const PyptoParamView& p) {
  ForEachSlabRef<T, R>(tile, shape, valid, start, p, [](auto t, auto g) { pto::TSTORE(g, t); });
}

// StoreND adding each element into memory atomically (pypto/atomic_store.hpp).
template <class T, int R>
inline void StoreNDAdd(char* tile, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                       const PyptoParamView& p) {
  ForEachSlabRef<T, R>(tile, shape, valid, start, p, [](auto t, auto g) {
    for (int r = 0; r < t.valid_rows; ++r)
      for (int c = 0; c < t.valid_cols; ++c) AtomicAdd(g.addr(r, c), t.at(r, c));
  });
}


// Copies n values to memory that is written once and not read again soon: non-temporal
// stores skip the read-for-ownership of the destination lines (a third of the traffic of a
// store-bound kernel). Falls back to memcpy for small or unaligned rows.
template <class T>
inline void StreamRow(T* dst, const T* src, int64_t n) {
#if defined(__AVX__)
  if constexpr (sizeof(T) == 4) {
    int64_t i = 0;
    while (i < n && (reinterpret_cast<uintptr_t>(dst + i) & 31) != 0) {
      dst[i] = src[i];
      ++i;
    }
    for (; i + 8 <= n; i += 8)
      _mm256_stream_ps(reinterpret_cast<float*>(dst + i), _mm256_loadu_ps(reinterpret_cast<const float*>(src + i)));
    for (; i < n; ++i) dst[i] = src[i];
    return;
  }
#endif
  std::memcpy(dst, src, n * sizeof(T));
}

// Converts n floats to the 16-bit float T, rounding to nearest even as TCVT does (the same
// conversion), straight into memory written once: non-temporal 32-byte stores where aligned.
template <class T>
inline void CvtStreamRow(T* dst, const float* src, int64_t n) {
  int64_t i = 0;
#if defined(PTO_SIMD_AVX2)
  while (i < n && (reinterpret_cast<uintptr_t>(dst + i) & 31) != 0) {
    dst[i] = T(src[i]);
    ++i;
  }
  for (; i + 16 <= n; i += 16) {
    const __m128i lo = pto::simd::cvt8_from_float<T>(_mm256_loadu_ps(src + i));
    const __m128i hi = pto::simd::cvt8_from_float<T>(_mm256_loadu_ps(src + i + 8));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_set_m128i(hi, lo));
  }
#endif
  for (; i < n; ++i) dst[i] = T(src[i]);
}

// TCVT (fp32 -> fp16 / bf16, round to nearest even) of a tile fused with its store to an output
// of the function: the converted values go straight to the output (no converted tile, no copy).
template <class T, int R>
inline void CvtStoreNDStream(const char* tile, const int64_t (&shape)[R], const int64_t (&valid)[R],
                             const int64_t (&start)[R], const PyptoParamView& p) {
  const int64_t cols = shape[R - 1], vcols = valid[R - 1];
  const int64_t vrows = R >= 2 ? valid[R - 2] : 1;
  const int64_t srow = R >= 2 ? p.stride[R - 2] : 0, scol = p.stride[R - 1];
  ForEachSlab<R>(shape, valid, start, p.stride, [&](int64_t row, int64_t off) {
    const float* src = reinterpret_cast<const float*>(tile) + row * cols;
    T* dst = reinterpret_cast<T*>(p.data) + off;
    for (int64_t r = 0; r < vrows; ++r) {
      if (scol == 1)
        CvtStreamRow(dst + r * srow, src + r * cols, vcols);
      else
        for (int64_t c = 0; c < vcols; ++c) dst[r * srow + c * scol] = T(src[r * cols + c]);
    }
  });
#if defined(__AVX__)
  _mm_sfence();  // order the streamed lines before the task is reported done
#endif
}

// StoreND with non-temporal stores, for outputs of the function (written once).
template <class T, int R>
inline void StoreNDStream(char* tile, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                          const PyptoParamView& p) {
  if (p.stride[R - 1] != 1 || valid[R - 1] < 64) return StoreND<T, R>(tile, shape, valid, start, p);
  const int64_t cols = shape[R - 1];
  const int64_t vrows = R >= 2 ? valid[R - 2] : 1;
  const int64_t srow = R >= 2 ? p.stride[R - 2] : 0;
  ForEachSlab<R>(shape, valid, start, p.stride, [&](int64_t row, int64_t off) {
    const T* src = reinterpret_cast<const T*>(tile) + row * cols;
    T* dst = reinterpret_cast<T*>(p.data) + off;
    for (int64_t r = 0; r < vrows; ++r) StreamRow(dst + r * srow, src + r * cols, valid[R - 1]);
  });
#if defined(__AVX__)
  _mm_sfence();  // order the streamed lines before the task is reported done
#endif
}

// Row `fr` of the tile an R-dim window of a tensor loads: the row in place when its elements
// are contiguous, else gathered into `scratch`; past the valid rows, `scratch` (not read for
// anything stored). For row-fused loops.
template <class T, int R>
inline const T* LoadRow(T* scratch, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                        const PyptoParamView& p, int64_t fr) {
  int64_t off = start[R - 1] * p.stride[R - 1];
  for (int d = R - 2; d >= 0; --d) {
    const int64_t i = fr % shape[d];
    fr /= shape[d];
    if (i >= valid[d]) {
      std::fill(scratch, scratch + shape[R - 1], T(0));
      return scratch;
    }
    off += (start[d] + i) * p.stride[d];
  }
  const T* src = reinterpret_cast<const T*>(p.data) + off;
  if (p.stride[R - 1] == 1) return src;
  for (int64_t c = 0; c < valid[R - 1]; ++c) scratch[c] = src[c * p.stride[R - 1]];
  return scratch;
}

// Where a row-fused loop makes row `fr` of a tile stored to an R-dim window: the row's place
// in the tensor when it is valid and contiguous there (the store is then done), else `scratch`.
template <class T, int R>
inline T* RowTarget(T* scratch, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                    const PyptoParamView& p, int64_t fr) {
  if (p.stride[R - 1] != 1) return scratch;
  int64_t off = start[R - 1];
  for (int d = R - 2; d >= 0; --d) {
    const int64_t i = fr % shape[d];
    fr /= shape[d];
    if (i >= valid[d]) return scratch;
    off += (start[d] + i) * p.stride[d];
  }
  return reinterpret_cast<T*>(p.data) + off;
}

// Row `fr` of an R-dim tile (rows are the tile's leading dims flattened) into its place in a
// tensor window: nothing when the row is past the valid extent. For row-fused loops, which
// store each row of a tile as soon as it is made.
template <class T, int R>
inline void StoreRow(const T* row, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                     const PyptoParamView& p, int64_t fr) {
  int64_t off = start[R - 1] * p.stride[R - 1];
  for (int d = R - 2; d >= 0; --d) {
    const int64_t i = fr % shape[d];
    fr /= shape[d];
    if (i >= valid[d]) return;
    off += (start[d] + i) * p.stride[d];
  }
  T* dst = reinterpret_cast<T*>(p.data) + off;
  if (p.stride[R - 1] == 1) {
    std::memcpy(dst, row, sizeof(T) * size_t(valid[R - 1]));
  } else {
    for (int64_t c = 0; c < valid[R - 1]; ++c) dst[c * p.stride[R - 1]] = row[c];
  }
}

// Element offset in a tensor window of row `fr` of an R-dim tile, or -1 past the valid rows.
template <int R>
inline int64_t RowOffset(const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                         const PyptoParamView& p, int64_t fr) {
  int64_t off = start[R - 1] * p.stride[R - 1];
  for (int d = R - 2; d >= 0; --d) {
    const int64_t i = fr % shape[d];
    fr /= shape[d];
    if (i >= valid[d]) return -1;
    off += (start[d] + i) * p.stride[d];
  }
  return off;
}

// LoadRow of a 16-bit tensor (T = pto::half or pto::bfloat16), widened to float in `scratch`
// (exact): a TLOAD and the TCVT to fp32 after it, in one pass over the row.
template <class T, int R>
inline const float* LoadRowWiden(float* scratch, const int64_t (&shape)[R], const int64_t (&valid)[R],
                                 const int64_t (&start)[R], const PyptoParamView& p, int64_t fr) {
  const int64_t off = RowOffset<R>(shape, valid, start, p, fr);
  if (off < 0) {
    std::fill(scratch, scratch + shape[R - 1], 0.0f);
    return scratch;
  }
  const T* src = reinterpret_cast<const T*>(p.data) + off;
  if (p.stride[R - 1] == 1) {
    pto::simd::to_float(src, scratch, int(valid[R - 1]));
  } else {
    for (int64_t c = 0; c < valid[R - 1]; ++c) scratch[c] = float(src[c * p.stride[R - 1]]);
  }
  return scratch;
}

// StoreRow of a float row into a 16-bit tensor, rounding to nearest even: a TCVT to T and the
// TSTORE after it, in one pass over the row.
template <class T, int R>
inline void StoreRowNarrow(const float* row, const int64_t (&shape)[R], const int64_t (&valid)[R],
                           const int64_t (&start)[R], const PyptoParamView& p, int64_t fr) {
  const int64_t off = RowOffset<R>(shape, valid, start, p, fr);
  if (off < 0) return;
  T* dst = reinterpret_cast<T*>(p.data) + off;
  if (p.stride[R - 1] == 1) {
    pto::simd::from_float(row, dst, int(valid[R - 1]));
  } else {
    for (int64_t c = 0; c < valid[R - 1]; ++c) dst[c * p.stride[R - 1]] = T(row[c]);
  }
}

// The values of an R x 1 tile (one per row) as one contiguous column: `rows` values, 0 past
// the valid rows. For row-fused loops, which compute such values for all rows at once.
template <class T, int R>
inline const T* LoadColumn(T* scratch, const int64_t (&shape)[R], const int64_t (&valid)[R], const int64_t (&start)[R],
                           const PyptoParamView& p, int64_t rows) {
  for (int64_t fr = 0; fr < rows; ++fr) {
    T one;
    scratch[fr] = *LoadRow<T, R>(&one, shape, valid, start, p, fr);
  }
  return scratch;
}

// A column of `rows` values (see LoadColumn) into the tensor window of an R x 1 tile.
template <class T, int R>
inline void StoreColumn(const T* column, const int64_t (&shape)[R], const int64_t (&valid)[R],
                        const int64_t (&start)[R], const PyptoParamView& p, int64_t rows) {
  for (int64_t fr = 0; fr < rows; ++fr) StoreRow<T, R>(column + fr, shape, valid, start, p, fr);
}

// dst (full shape) = src repeated along its size-1 dims.
template <class T, int R>
inline void BroadcastND(char* dst, const int64_t (&dshape)[R], const char* src, const int64_t (&sshape)[R]) {
  int64_t sstride[R];
  int64_t acc = 1, n = 1;
  for (int k = R - 1; k >= 0; --k) {
    sstride[k] = sshape[k] == 1 ? 0 : acc;
    acc *= sshape[k];
    n *= dshape[k];
  }
  int64_t idx[R] = {};
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) {
    int64_t so = 0;
    for (int k = 0; k < R; ++k) so += idx[k] * sstride[k];
    d[i] = s[so];
    for (int k = R - 1; k >= 0 && ++idx[k] == dshape[k]; --k) idx[k] = 0;
  }
}

// Reduction over tile axis k: for each index of the dims before it, reduce the K x B slab.
template <class T, class Op>
inline void ColReduce(char* dst, char* src, int64_t A, int K, int B, int64_t valid_k, Op op) {
  for (int64_t a = 0; a < A; ++a) {
    pto::TileRef<T> s{reinterpret_cast<T*>(src) + a * K * B, K, B, B, static_cast<int>(valid_k), B};
    pto::TileRef<T> d{reinterpret_cast<T*>(dst) + a * B, 1, B, B, 1, B};
    op(d, s);
  }
}

// A column instruction over tile axis k with its own result type (column arg-reductions: 1 x B
// indices per slab; column scans: K x B): for each index of the dims before k, the K x B slab.
template <class D, class S, class Op>
inline void ColSlabs(char* dst, char* src, int64_t A, int K, int B, int64_t valid_k, int dst_rows, Op op) {
  for (int64_t a = 0; a < A; ++a) {
    pto::TileRef<S> s{reinterpret_cast<S*>(src) + a * K * B, K, B, B, static_cast<int>(valid_k), B};
    pto::TileRef<D> d{reinterpret_cast<D*>(dst) + a * dst_rows * B,  dst_rows, B, B,
                      dst_rows == 1 ? 1 : static_cast<int>(valid_k), B};
    op(d, s);
  }
}

// Gather along tile axis k (TCOLGATHER per slab): dst [A, Kd, B] = src [A, Ks, B] at the rows
// index [A, Kd, B] names; an index outside src's valid_ks rows throws a std::invalid_argument
// naming `what` (the op and the dim) and `where` (the user's line).
template <class T, class I>
inline void GatherSlabs(char* dst, char* src, char* index, int64_t A, int Kd, int Ks, int B, int64_t valid_kd,
                        int64_t valid_ks, const char* what, const char* where) {
  try {
    for (int64_t a = 0; a < A; ++a) {
      pto::TileRef<T> d{reinterpret_cast<T*>(dst) + a * Kd * B, Kd, B, B, static_cast<int>(valid_kd), B};
      pto::TileRef<T> s{reinterpret_cast<T*>(src) + a * Ks * B, Ks, B, B, static_cast<int>(valid_ks), B};
      pto::TileRef<I> i{reinterpret_cast<I*>(index) + a * Kd * B, Kd, B, B, static_cast<int>(valid_kd), B};
      pto::TCOLGATHER(d, s, i);
    }
  } catch (const pto::Error& e) {
    throw std::invalid_argument(std::string(what) + ": " + e.what() + "\n" + where);
  }
}

}  // namespace pypto_kernel
