// Helpers for the PTO-ISA tests: owned tile buffers with padding sentinels and random fills.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <algorithm>
#include <random>
#include <vector>

#include <pto/pto.hpp>

namespace pto_test {

using pto::bfloat16;
using pto::half;

// A rows x cols tile stored with `stride`; everything outside the valid region holds a sentinel so
// tests can check that instructions never write there.
template <class T>
struct Buf {
  int rows, cols, stride, vr, vc;
  std::unique_ptr<T[]> v;  // not std::vector: vector<bool> has no data()
  Buf(int r, int c, int vr_ = -1, int vc_ = -1, int pad = 3)
      : rows(r), cols(c), stride(c + pad), vr(vr_ < 0 ? r : vr_), vc(vc_ < 0 ? c : vc_),
        v(new T[size_t(r) * stride]) {
    std::fill(v.get(), v.get() + size_t(r) * stride, sentinel());
  }
  static T sentinel() {
    if constexpr (std::is_same_v<T, bool>) return true;
    else return T(77);
  }
  pto::TileRef<T> ref() { return {v.get(), rows, cols, stride, vr, vc}; }
  T& operator()(int r, int c) { return v[size_t(r) * stride + c]; }
  // True if every element outside the valid region still holds the sentinel.
  bool padding_untouched() const {
    const T s = sentinel();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < stride; ++c)
        if ((r >= vr || c >= vc) && std::memcmp(&v[size_t(r) * stride + c], &s, sizeof(T)) != 0)
          return false;
    return true;
  }
};

template <class T>
void fill_random(Buf<T>& b, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  for (int r = 0; r < b.vr; ++r)
    for (int c = 0; c < b.vc; ++c) {
      if constexpr (std::is_same_v<T, bool>) b(r, c) = d(rng) > 0.5 * (lo + hi);
      else if constexpr (pto::is_float_v<T>) b(r, c) = pto::elem::from_double<T>(d(rng));
      else b(r, c) = T(std::llround(d(rng)));
    }
}

inline double dbl(float x) { return x; }
inline double dbl(double x) { return x; }
inline double dbl(half x) { return float(x); }
inline double dbl(bfloat16 x) { return float(x); }
template <class T>
  requires std::is_integral_v<T>
double dbl(T x) {
  return double(x);
}

// Bitwise-or-both-NaN equality (so -0 vs +0 and NaN payloads are compared exactly where needed).
template <class T>
bool same(T a, T b) {
  if constexpr (pto::is_float_v<T>) {
    if (std::isnan(dbl(a)) && std::isnan(dbl(b))) return true;
  }
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace pto_test
