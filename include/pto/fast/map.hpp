// The loop skeleton of the fast elementwise instructions: walks the destination's valid region
// row by row (or as one flat run when every operand is dense), widening 16-bit floats to float in
// chunks so the per-element code is plain float/integer arithmetic the compiler vectorizes.
#pragma once

#include <algorithm>
#include <concepts>
#include <tuple>

#include "pto/ref/common.hpp"
#include "pto/simd.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace fast {

using simd::calc_t;
using simd::is16_v;

inline constexpr int kChunk = 256;

// One source operand seen in its compute type: 16-bit floats go through a float buffer.
template <class S>
struct Src {
  alignas(32) float buf[is16_v<S> ? kChunk : 1];
  const calc_t<S>* p = nullptr;
  Src() {}  // leaves buf uninitialized
  void load(const S* s, int n) {
    if constexpr (is16_v<S>) {
      simd::to_float(s, buf, n);
      p = buf;
    } else {
      p = s;
    }
  }
};

// Runs f(out, n, in...) over chunks of one row; out/in are compute-type arrays.
template <class D, class F, class... S>
inline void run_row_chunks(D* d, int n, F& f, const S*... s) {
  if constexpr (!is16_v<D> && !(is16_v<S> || ...)) {
    f(d, n, s...);
  } else {
    std::tuple<Src<S>...> srcs;
    for (int i = 0; i < n; i += kChunk) {
      const int m = std::min(kChunk, n - i);
      std::apply(
          [&](auto&... src) {
            (src.load(s + i, m), ...);
            if constexpr (is16_v<D>) {
              alignas(32) float out[kChunk];
              f(out, m, src.p...);
              simd::from_float(out, d + i, m);
            } else {
              f(d + i, m, src.p...);
            }
          },
          srcs);
    }
  }
}

template <class X>
inline constexpr bool is_fl_v = std::is_same_v<X, float> || is16_v<X>;
// A functor with a vector form (f.vec) runs kW elements at a time straight from and to the tile,
// 16-bit types converted in registers; the rest go through run_row_chunks.
template <class F, class... S>
concept VecFunctor = requires(const F& f, S... s) {
  { f.vec((void(s), simd::vf{})...) } -> std::same_as<simd::vf>;
};

template <class D, class F, class... S>
inline void run_row(D* d, int n, F& f, const S*... s) {
  int i = 0;
  // Float-only rows vectorize fine as plain loops; the vector form pays when 16-bit types are
  // involved (it avoids the widening round trip through a buffer).
  if constexpr (is_fl_v<D> && (is_fl_v<S> && ...) && (is16_v<D> || (is16_v<S> || ...)) &&
                VecFunctor<F, S...>) {
    for (; i + simd::kW <= n; i += simd::kW) simd::vstore(d + i, f.vec(simd::vload(s + i)...));
    if (i == n) return;
  }
  run_row_chunks(d + i, n - i, f, (s + i)...);
}

// dst = f(src...) over dst's valid region, f being a chunk functor.
template <class D, class F, class... S>
inline void map_chunks(TileRef<D> dst, F f, TileRef<S>... src) {
  ref::detail::check_tile(dst, "dst");
  (ref::detail::check_covers(src, dst.valid_rows, dst.valid_cols, "src"), ...);
  const int rows = dst.valid_rows, cols = dst.valid_cols;
  if (rows == 0 || cols == 0) return;
  const bool dense = dst.stride == cols && ((src.stride == cols) && ...);
  if (dense) {
    run_row(dst.data, rows * cols, f, static_cast<const S*>(src.data)...);
    return;
  }
  for (int r = 0; r < rows; ++r) run_row(dst.row(r), cols, f, static_cast<const S*>(src.row(r))...);
}

// Lifts an elementwise functor on compute types to a chunk functor; functors that declare
// kVec also work on simd::vf.
template <class Op>
struct Each {
  Op op;
  template <class O, class... I>
  void operator()(O* out, int n, const I*... in) const {
    for (int i = 0; i < n; ++i) out[i] = O(op(in[i]...));
  }
  template <class... V>
    requires(Op::kVec && (std::is_same_v<V, simd::vf> && ...))
  simd::vf vec(V... v) const {
    return op(v...);
  }
};
template <class D, class Op, class... S>
inline void map(TileRef<D> dst, Op op, TileRef<S>... src) {
  map_chunks(dst, Each<Op>{op}, src...);
}

}  // namespace fast
}  // namespace PTO_ISA_NS
}  // namespace pto
