// Fast TMATMUL family. fp32/fp16/bf16 inputs accumulate in fp32 with one FMA chain per output in
// k order (so results do not depend on the tile position); int8/uint8 accumulate exactly in int32.
//
// AVX2: B is packed into 16-column panels (k-major, zero padded), A is read in place (or widened
// to float once for 16-bit inputs), and a 6x16 register-blocked micro-kernel keeps 12 ymm
// accumulators busy: per k it issues 2 loads + 6 broadcasts for 12 FMAs.
#pragma once

#include <algorithm>
#include <vector>

#include "pto/fast/map.hpp"
#include "pto/ref/matrix.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace fast {

// Reusable packing buffer so repeated small matmuls do not allocate.
inline std::vector<float>& pack_buffer() {
  thread_local std::vector<float> buf;
  return buf;
}

constexpr int kMR = 6, kNR = 16, kKC = 256;

// C[0:M, 0:N] = (acc ? C : 0) + A[0:M, 0:K] * B[0:K, 0:N], all float, row-major with strides.
inline void sgemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                  int ldc, bool acc);

#ifdef PTO_SIMD_AVX2
// Full-width MR x 16 block. The accumulators are named variables, not an array: GCC keeps an
// array of __m256 in memory across the k loop (a store per FMA), which costs half the speed.
template <int MR>
inline void micro_kernel_full(int K, const float* A, int lda, const float* Bp, float* C, int ldc,
                              bool acc) {
  static_assert(MR >= 1 && MR <= 6);
  const __m256 z = _mm256_setzero_ps();
  __m256 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z,
         c50 = z, c51 = z;
#define PTO_MK_ROWS(X) \
  X(0, c00, c01) X(1, c10, c11) X(2, c20, c21) X(3, c30, c31) X(4, c40, c41) X(5, c50, c51)
#define PTO_MK_LOAD(I, X0, X1)                \
  if constexpr (I < MR) {                     \
    if (acc) {                                \
      X0 = _mm256_loadu_ps(C + I * ldc);      \
      X1 = _mm256_loadu_ps(C + I * ldc + 8);  \
    }                                         \
  }
#define PTO_MK_FMA(I, X0, X1)                                   \
  if constexpr (I < MR) {                                       \
    const __m256 a = _mm256_broadcast_ss(A + I * lda + k);      \
    X0 = _mm256_fmadd_ps(a, b0, X0);                            \
    X1 = _mm256_fmadd_ps(a, b1, X1);                            \
  }
#define PTO_MK_STORE(I, X0, X1)             \
  if constexpr (I < MR) {                   \
    _mm256_storeu_ps(C + I * ldc, X0);      \
    _mm256_storeu_ps(C + I * ldc + 8, X1);  \
  }
  PTO_MK_ROWS(PTO_MK_LOAD)
  for (int k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_load_ps(Bp + k * kNR);
    const __m256 b1 = _mm256_load_ps(Bp + k * kNR + 8);
    PTO_MK_ROWS(PTO_MK_FMA)
  }
  PTO_MK_ROWS(PTO_MK_STORE)
#undef PTO_MK_ROWS
#undef PTO_MK_LOAD
#undef PTO_MK_FMA
#undef PTO_MK_STORE
}

template <int MR>
inline void micro_kernel(int K, const float* A, int lda, const float* Bp, float* C, int ldc,
                         bool acc, int ncols) {
  if (ncols == kNR) return micro_kernel_full<MR>(K, A, lda, Bp, C, ldc, acc);
  alignas(32) float edge[MR * kNR] = {};
  if (acc)
    for (int i = 0; i < MR; ++i) std::copy_n(C + i * ldc, ncols, edge + i * kNR);
  micro_kernel_full<MR>(K, A, lda, Bp, edge, kNR, acc);
  for (int i = 0; i < MR; ++i) std::copy_n(edge + i * kNR, ncols, C + i * ldc);
}

inline void sgemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                  int ldc, bool acc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!acc)
      for (int m = 0; m < M; ++m) std::fill_n(C + size_t(m) * ldc, N, 0.0f);
    return;
  }
  const int panels = (N + kNR - 1) / kNR;
  std::vector<float>& pack = pack_buffer();
  for (int k0 = 0; k0 < K; k0 += kKC) {
    const int kc = std::min(kKC, K - k0);
    pack.resize(size_t(panels) * kc * kNR + 8);
    // 32-byte align the packed panels.
    float* Bp = pack.data() + ((8 - (reinterpret_cast<uintptr_t>(pack.data()) / 4) % 8) % 8);
    for (int p = 0; p < panels; ++p) {
      const int n0 = p * kNR, nc = std::min(kNR, N - n0);
      float* dst = Bp + size_t(p) * kc * kNR;
      for (int k = 0; k < kc; ++k) {
        const float* src = B + size_t(k0 + k) * ldb + n0;
        std::copy_n(src, nc, dst + k * kNR);
        std::fill(dst + k * kNR + nc, dst + (k + 1) * kNR, 0.0f);
      }
    }
    const bool accumulate = acc || k0 > 0;
    for (int p = 0; p < panels; ++p) {
      const int n0 = p * kNR, nc = std::min(kNR, N - n0);
      const float* bp = Bp + size_t(p) * kc * kNR;
      int m = 0;
      for (; m + kMR <= M; m += kMR)
        micro_kernel<kMR>(kc, A + size_t(m) * lda + k0, lda, bp, C + size_t(m) * ldc + n0, ldc,
                          accumulate, nc);
      const float* a = A + size_t(m) * lda + k0;
      float* c = C + size_t(m) * ldc + n0;
      switch (M - m) {
        case 5: micro_kernel<5>(kc, a, lda, bp, c, ldc, accumulate, nc); break;
        case 4: micro_kernel<4>(kc, a, lda, bp, c, ldc, accumulate, nc); break;
        case 3: micro_kernel<3>(kc, a, lda, bp, c, ldc, accumulate, nc); break;
        case 2: micro_kernel<2>(kc, a, lda, bp, c, ldc, accumulate, nc); break;
        case 1: micro_kernel<1>(kc, a, lda, bp, c, ldc, accumulate, nc); break;
        default: break;
      }
    }
  }
}
#else
// Portable: one output row at a time, k outer so the inner loop is a vectorizable axpy.
inline void sgemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                  int ldc, bool acc) {
  for (int m = 0; m < M; ++m) {
    float* c = C + size_t(m) * ldc;
    if (!acc) std::fill_n(c, N, 0.0f);
    for (int k = 0; k < K; ++k) {
      const float a = A[size_t(m) * lda + k];
      const float* b = B + size_t(k) * ldb;
      for (int n = 0; n < N; ++n) c[n] = std::fma(a, b[n], c[n]);
    }
  }
}
#endif

// init: 0 = zero, 1 = accumulate into C, 2 = bias row.
template <class Acc, class In>
void matmul(TileRef<Acc> c, TileRef<In> a, TileRef<In> b, int init, const Acc* bias) {
  static_assert(ref::detail::valid_mm_v<In, Acc>, "unsupported TMATMUL dtypes");
  ref::detail::check_tile(c, "dst");
  const int M = c.valid_rows, N = c.valid_cols, K = a.valid_cols;
  ref::detail::check_covers(a, M, K, "src0");
  ref::detail::check_covers(b, K, N, "src1");
  if (init == 2)
    for (int m = 0; m < M; ++m) std::copy_n(bias, N, c.row(m));
  if constexpr (std::is_same_v<Acc, float>) {
    if constexpr (std::is_same_v<In, float>) {
      sgemm(M, N, K, a.data, a.stride, b.data, b.stride, c.data, c.stride, init != 0);
    } else {
      thread_local std::vector<float> wa, wb;
      wa.resize(size_t(M) * K);
      wb.resize(size_t(K) * N);
      for (int m = 0; m < M; ++m) simd::to_float(a.row(m), wa.data() + size_t(m) * K, K);
      for (int k = 0; k < K; ++k) simd::to_float(b.row(k), wb.data() + size_t(k) * N, N);
      sgemm(M, N, K, wa.data(), K, wb.data(), N, c.data, c.stride, init != 0);
    }
  } else {
    thread_local std::vector<int32_t> row;
    row.resize(N);
    for (int m = 0; m < M; ++m) {
      int32_t* out = c.row(m);
      if (init == 0) std::fill_n(row.data(), N, 0);
      else std::copy_n(out, N, row.data());
      for (int k = 0; k < K; ++k) {
        const int32_t av = a.at(m, k);
        const In* bk = b.row(k);
        // Exact: |a*b| <= 2^16 and int32 sums wrap like the reference's int64 -> int32.
        for (int n = 0; n < N; ++n)
          row[n] = int32_t(uint32_t(row[n]) + uint32_t(av * int32_t(bk[n])));
      }
      std::copy_n(row.data(), N, out);
    }
  }
}

}  // namespace fast

template <class Acc, class In>
void TMATMUL(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1) {
  fast::matmul(dst, src0, src1, 0, static_cast<const Acc*>(nullptr));
}
template <class Acc, class In>
void TMATMUL_ACC(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1) {
  fast::matmul(dst, src0, src1, 1, static_cast<const Acc*>(nullptr));
}
template <class Acc, class In>
void TMATMUL_BIAS(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1, TileRef<Acc> bias) {
  ref::detail::check_covers(bias, 1, dst.valid_cols, "bias");
  std::vector<Acc> b(bias.row(0), bias.row(0) + dst.valid_cols);  // bias may alias dst
  fast::matmul(dst, src0, src1, 2, b.data());
}
template <class Acc, class In>
void TGEMV(TileRef<Acc> dst, TileRef<In> src0, TileRef<In> src1) {
  PTO_CHECK(dst.valid_rows == 1, "TGEMV dst must be one row");
  TMATMUL(dst, src0, src1);
}

}  // namespace PTO_ISA_NS
}  // namespace pto
