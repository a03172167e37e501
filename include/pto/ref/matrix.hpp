// Reference matrix instructions (the cube unit): TMATMUL, TMATMUL_ACC, TMATMUL_BIAS, TGEMV.
#pragma once

#include <vector>

#include "pto/ref/common.hpp"

namespace pto::ref {
namespace detail {

// Legal (input, accumulator) pairs: fp32/fp16/bf16 -> fp32, int8/uint8 -> int32.
template <class In, class Acc>
inline constexpr bool valid_mm_v =
    (std::is_same_v<Acc, float> && is_float_v<In> && !std::is_same_v<In, double>) ||
    (std::is_same_v<Acc, int32_t> && (std::is_same_v<In, int8_t> || std::is_same_v<In, uint8_t>));

// C[m, n] = init(m, n) + sum_k A[m, k] * B[k, n] for m < C.valid_rows, n < C.valid_cols,
// k < A.valid_cols. Floats accumulate exactly enough in double and round once; ints are exact
// in int64 and wrap to int32.
template <class Acc, class In, class Init>
void matmul(TileRef<Acc> c, TileRef<In> a, TileRef<In> b, Init init) {
  static_assert(valid_mm_v<In, Acc>, "unsupported TMATMUL dtypes");
  check_tile(c, "dst");
  const int M = c.valid_rows, N = c.valid_cols, K = a.valid_cols;
  check_covers(a, M, K, "src0");
  check_covers(b, K, N, "src1");
  using Wide = std::conditional_t<std::is_same_v<Acc, float>, double, int64_t>;
  std::vector<Wide> row(N);
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) row[n] = Wide(init(m, n));
    for (int k = 0; k < K; ++k) {
      const Wide av = Wide(elem::to_double(a.at(m, k)));
      for (int n = 0; n < N; ++n) row[n] += av * Wide(elem::to_double(b.at(k, n)));
    }
    for (int n = 0; n < N; ++n) c.at(m, n) = Acc(row[n]);
  }
}

}  // namespace detail

template <class Acc, class In>
void TMATMUL(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1) {
  detail::matmul(dst, src0, src1, [](int, int) { return Acc(0); });
}
// dst += src0 x src1 (the sum and dst's old value are rounded once together).
template <class Acc, class In>
void TMATMUL_ACC(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1) {
  detail::matmul(dst, src0, src1, [dst](int m, int n) { return dst.at(m, n); });
}
// dst = src0 x src1 + bias (bias is a 1 x N row of the accumulator type).
template <class Acc, class In>
void TMATMUL_BIAS(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1, TileRef<Acc> bias) {
  detail::check_covers(bias, 1, dst.valid_cols, "bias");
  detail::matmul(dst, src0, src1, [bias](int, int n) { return bias.at(0, n); });
}
// dst (1 x N) = src0 (1 x K) x src1 (K x N).
template <class Acc, class In>
void TGEMV(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1) {
  PTO_CHECK(dst.valid_rows == 1, "TGEMV dst must be one row");
  ref::TMATMUL(dst, src0, src1);
}

}  // namespace pto::ref
