// The compiler's indexed moves between a tile and global memory along one axis, shared by
// generated kernels and the interpreter:
// - TSCATTERND (pypto.scatter_, index_add_, index_put_, scatter_update): element e of the N-D
//   tile at global position p (the tile's start + its position) goes to the tensor at p with
//   p[axis] replaced by index[e]; assigned, added or multiplied in.
// - TGATHERND (pypto.gather / index_select along a dim too long for UB or of run-time size, as
//   paged KV caches are): element e of the tile is the tensor at p with p[axis] = index[e].
// An index outside the tensor's axis, or a position outside its other dims, throws
// std::invalid_argument naming the op and the index: nothing is read or written outside the tensor.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "pto/elem.hpp"

namespace pypto_kernel {

namespace detail {

[[noreturn]] inline void ThrowIndexRange(bool is_index, int64_t g, int64_t n, int k, const char* what,
                                         const char* where) {
  throw std::invalid_argument(std::string(what) + ": " + (is_index ? "index " : "position ") + std::to_string(g) +
                              " is out of range [0, " + std::to_string(n) + ") along dim " + std::to_string(k) +
                              (where[0] ? "\n" : "") + where);
}

}  // namespace detail

enum class ScatterReduce : int { Assign = 0, Add = 1, Multiply = 2 };

template <class T, class I>
inline void ScatterND(char* dst, const int64_t* dst_shape, const int64_t* dst_stride, int rank, const char* src,
                      const char* index, const int64_t* tile, const int64_t* valid, const int64_t* start, int axis,
                      int reduce, const char* what, const char* where) {
  const T* s = reinterpret_cast<const T*>(src);
  const I* ix = reinterpret_cast<const I*>(index);
  T* d = reinterpret_cast<T*>(dst);
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) n *= valid[k] > 0 ? 1 : 0;
  if (n == 0) return;
  int64_t pos[8] = {};  // position in the valid region of the tile
  for (;;) {
    int64_t e = 0;  // element offset in the (dense) tile
    for (int k = 0; k < rank; ++k) e = e * tile[k] + pos[k];
    int64_t off = 0;
    for (int k = 0; k < rank; ++k) {
      const int64_t g = k == axis ? int64_t(ix[e]) : start[k] + pos[k];
      if (g < 0 || g >= dst_shape[k]) detail::ThrowIndexRange(k == axis, g, dst_shape[k], k, what, where);
      off += g * dst_stride[k];
    }
    switch (static_cast<ScatterReduce>(reduce)) {
      case ScatterReduce::Assign:
        d[off] = s[e];
        break;
      case ScatterReduce::Add:
        d[off] = pto::elem::add(d[off], s[e]);
        break;
      case ScatterReduce::Multiply:
        d[off] = pto::elem::mul(d[off], s[e]);
        break;
    }
    int k = rank - 1;
    while (k >= 0 && ++pos[k] == valid[k]) pos[k--] = 0;
    if (k < 0) return;
  }
}

// dst (a dense N-D tile, `valid` of it filled) = src at the tile's positions, with the position
// along `axis` taken from the index tile. A row of the tile whose index is the same all along
// (index_select) is one contiguous copy when src's last dim is dense.
template <class T, class I>
inline void GatherND(char* dst, const char* src, const int64_t* src_shape, const int64_t* src_stride, int rank,
                     const char* index, const int64_t* tile, const int64_t* valid, const int64_t* start, int axis,
                     const char* what, const char* where) {
  const T* s = reinterpret_cast<const T*>(src);
  const I* ix = reinterpret_cast<const I*>(index);
  T* d = reinterpret_cast<T*>(dst);
  for (int k = 0; k < rank; ++k)
    if (valid[k] <= 0) return;
  const int last = rank - 1;
  const int64_t cols = valid[last];
  for (int k = 0; k < rank; ++k)  // the other dims: the tile's positions must be in src
    if (k != axis && start[k] + valid[k] > src_shape[k])
      detail::ThrowIndexRange(false, start[k] + valid[k] - 1, src_shape[k], k, what, where);
  int64_t pos[8] = {};  // position in the valid region, over the dims before the last
  for (;;) {
    int64_t e = 0;  // offset of the row in the (dense) tile
    for (int k = 0; k < last; ++k) e = e * tile[k] + pos[k];
    e *= tile[last];
    int64_t base = 0;  // src offset of the row's first element, without the axis term
    for (int k = 0; k < last; ++k)
      if (k != axis) base += (start[k] + pos[k]) * src_stride[k];
    if (axis == last) {
      const int64_t n = src_shape[last];
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t g = int64_t(ix[e + c]);
        if (g < 0 || g >= n) detail::ThrowIndexRange(true, g, n, last, what, where);
        d[e + c] = s[base + g * src_stride[last]];
      }
    } else {
      const int64_t n = src_shape[axis];
      const int64_t g = int64_t(ix[e]);
      bool same = true;
      for (int64_t c = 1; c < cols; ++c) same &= int64_t(ix[e + c]) == g;
      const T* row = s + base + start[last] * src_stride[last];
      if (same && src_stride[last] == 1) {
        if (g < 0 || g >= n) detail::ThrowIndexRange(true, g, n, axis, what, where);
        std::memcpy(d + e, row + g * src_stride[axis], size_t(cols) * sizeof(T));
      } else {
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t gc = int64_t(ix[e + c]);
          if (gc < 0 || gc >= n) detail::ThrowIndexRange(true, gc, n, axis, what, where);
          d[e + c] = row[gc * src_stride[axis] + c * src_stride[last]];
        }
      }
    }
    int k = last - 1;
    while (k >= 0 && ++pos[k] == valid[k]) pos[k--] = 0;
    if (k < 0) return;
  }
}

}  // namespace pypto_kernel
