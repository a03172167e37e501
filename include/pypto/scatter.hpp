// TSCATTERND, the compiler's scatter of a tile into global memory along one axis (used by
// pypto.scatter_, index_add_, index_put_, scatter_update): element e of the N-D tile at global
// position p (the tile's start + its position) goes to the tensor at p with p[axis] replaced by
// index[e]; assigned, added or multiplied in. Shared by generated kernels and the interpreter.
// An index outside the tensor's axis, or a position outside its other dims, throws
// std::invalid_argument naming the op and the index: nothing is written outside the tensor.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "pto/elem.hpp"

namespace pypto_kernel {

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
      if (g < 0 || g >= dst_shape[k])
        throw std::invalid_argument(std::string(what) + ": " + (k == axis ? "index " : "position ") +
                                    std::to_string(g) + " is out of range [0, " + std::to_string(dst_shape[k]) +
                                    ") along dim " + std::to_string(k) + (where[0] ? "\n" : "") + where);
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

}  // namespace pypto_kernel
