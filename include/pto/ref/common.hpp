// Shared loops and shape checks of the reference implementations.
#pragma once

#include "pto/elem.hpp"
#include "pto/types.hpp"

namespace pto::ref::detail {

template <class T>
void check_tile(const TileRef<T>& t, const char* what) {
  PTO_CHECK(t.valid_rows >= 0 && t.valid_rows <= t.rows && t.valid_cols >= 0 &&
                t.valid_cols <= t.cols && t.cols <= t.stride,
            std::string(what) + " tile has an inconsistent shape");
  PTO_CHECK(t.data != nullptr || t.rows == 0 || t.cols == 0, std::string(what) + " is null");
}

// A source must cover the destination's valid region (rows x cols of it).
template <class S>
void check_covers(const TileRef<S>& src, int rows, int cols, const char* what) {
  check_tile(src, what);
  PTO_CHECK(src.valid_rows >= rows && src.valid_cols >= cols,
            std::string(what) + " valid region " + std::to_string(src.valid_rows) + "x" +
                std::to_string(src.valid_cols) + " does not cover " + std::to_string(rows) +
                "x" + std::to_string(cols));
}

template <class D, class F>
void for_each(TileRef<D> dst, F f) {
  check_tile(dst, "dst");
  for (int r = 0; r < dst.valid_rows; ++r)
    for (int c = 0; c < dst.valid_cols; ++c) dst.at(r, c) = f(r, c);
}

template <class D, class S, class F>
void unary(TileRef<D> dst, TileRef<S> src, F f) {
  check_covers(src, dst.valid_rows, dst.valid_cols, "src");
  for_each(dst, [&](int r, int c) { return f(src.at(r, c)); });
}

template <class D, class A, class B, class F>
void binary(TileRef<D> dst, TileRef<A> a, TileRef<B> b, F f) {
  check_covers(a, dst.valid_rows, dst.valid_cols, "src0");
  check_covers(b, dst.valid_rows, dst.valid_cols, "src1");
  for_each(dst, [&](int r, int c) { return f(a.at(r, c), b.at(r, c)); });
}

template <class D, class A, class B, class C, class F>
void ternary(TileRef<D> dst, TileRef<A> a, TileRef<B> b, TileRef<C> c, F f) {
  check_covers(a, dst.valid_rows, dst.valid_cols, "src0");
  check_covers(b, dst.valid_rows, dst.valid_cols, "src1");
  check_covers(c, dst.valid_rows, dst.valid_cols, "src2");
  for_each(dst, [&](int r, int k) { return f(a.at(r, k), b.at(r, k), c.at(r, k)); });
}

}  // namespace pto::ref::detail
