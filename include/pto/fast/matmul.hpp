// Fast TMATMUL family. fp32/fp16/bf16 inputs accumulate in fp32 with one FMA chain per output in
// k order (so results do not depend on the tile position); int8/uint8 accumulate exactly in int32.
//
// AVX2, floats: B is packed into 16-column panels (k-major, zero padded, 16-bit inputs widened
// while packing), A is read in place (or widened to float once for 16-bit / non-row-major
// inputs), and a 6x16 register-blocked micro-kernel keeps 12 ymm accumulators busy: per k it
// issues 2 loads + 6 broadcasts for 12 FMAs.
//
// AVX2, int8/uint8: both operands are widened to int16 while packing: A rows as int16 (so each
// 32-bit word is a pair A[m, 2p], A[m, 2p + 1]) and B panels with rows 2p and 2p + 1 interleaved,
// so one _mm256_madd_epi16 gives 8 outputs two k steps each; a 6x16 block keeps 12 int32
// accumulators. Pair sums are at most 2 * 255^2, so every step is exact and the int32 sums wrap
// exactly like the reference's int64 sum converted to int32.
//
// Operands may be row-major, column-major or NZ (MatView): packing reads the fractals directly.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "pto/fast/map.hpp"
#include "pto/ref/matrix.hpp"
#include "pto/tile.hpp"

namespace pto {
inline namespace PTO_ISA_NS {
namespace fast {

// A matmul operand in any tile layout: element (r, c) of a rows x cols allocation.
template <class T>
struct MatView {
  const T* data;
  int rows, cols;  // allocated (NZ: whole fractals)
  int stride;      // row-major: elements between rows; column-major: between columns
  Layout layout;
  int valid_rows, valid_cols;
  static constexpr int kFracRows = 16;
  static constexpr int kFracCols = sizeof(T) <= 32 ? 32 / int(sizeof(T)) : 1;

  const T* ptr(int r, int c) const {
    if (layout == Layout::RowMajor) return data + size_t(r) * stride + c;
    if (layout == Layout::ColMajor) return data + size_t(c) * stride + r;
    const size_t block = size_t(c / kFracCols) * (rows / kFracRows) + r / kFracRows;
    return data + block * (kFracRows * kFracCols) + size_t(r % kFracRows) * kFracCols +
           c % kFracCols;
  }
  // How many of the n elements from (r, c) along the row are contiguous in memory.
  int run(int c, int n) const {
    if (layout == Layout::RowMajor) return n;
    if (layout == Layout::NZ) return std::min(n, kFracCols - c % kFracCols);
    return rows == 1 ? n : 1;
  }
};

template <class T>
MatView<T> view(TileRef<T> t) {
  return {t.data, t.rows, t.cols, t.stride, Layout::RowMajor, t.valid_rows, t.valid_cols};
}

// dst[0:n] = src[0:n] converted to O (exact: widening only).
template <class T, class O>
inline void widen_n(const T* src, int n, O* dst) {
  if constexpr (std::is_same_v<T, O>) {
    // Fixed-size blocks inline as vector moves; std::copy_n would call memmove per fractal row.
    constexpr int B = 32 / sizeof(T);
    int i = 0;
    for (; i + B <= n; i += B) std::memcpy(dst + i, src + i, 32);
    for (; i < n; ++i) dst[i] = src[i];
  } else if constexpr (std::is_same_v<O, float> && is16_v<T>) simd::to_float(src, dst, n);
  else
    for (int i = 0; i < n; ++i) dst[i] = O(src[i]);
}

// dst[0:n] = row r, columns c0 .. c0 + n of v, widened to O.
template <class T, class O>
inline void read_row(const MatView<T>& v, int r, int c0, int n, O* dst) {
  if (v.layout == Layout::RowMajor) return widen_n(v.ptr(r, c0), n, dst);
  if (v.layout == Layout::NZ) {  // 32-byte fractal rows, rows * kFracCols elements apart
    constexpr int F = MatView<T>::kFracCols;
    const T* base = v.ptr(r, c0 - c0 % F);
    for (int j = 0, off = c0 % F; j < n; off = 0, base += size_t(v.rows) * F) {
      const int m = std::min(n - j, F - off);
      widen_n(base + off, m, dst + j);
      j += m;
    }
    return;
  }
  for (int j = 0; j < n;) {
    const int m = v.run(c0 + j, n - j);
    widen_n(v.ptr(r, c0 + j), m, dst + j);
    j += m;
  }
}

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
#define PTO_MK_LOAD(I, X0, X1)               \
  if constexpr (I < MR) {                    \
    if (acc) {                               \
      X0 = _mm256_loadu_ps(C + I * ldc);     \
      X1 = _mm256_loadu_ps(C + I * ldc + 8); \
    }                                        \
  }
#define PTO_MK_FMA(I, X0, X1)                              \
  if constexpr (I < MR) {                                  \
    const __m256 a = _mm256_broadcast_ss(A + I * lda + k); \
    X0 = _mm256_fmadd_ps(a, b0, X0);                       \
    X1 = _mm256_fmadd_ps(a, b1, X1);                       \
  }
#define PTO_MK_STORE(I, X0, X1)            \
  if constexpr (I < MR) {                  \
    _mm256_storeu_ps(C + I * ldc, X0);     \
    _mm256_storeu_ps(C + I * ldc + 8, X1); \
  }
  PTO_MK_ROWS(PTO_MK_LOAD)
  for (int k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_load_ps(Bp + k * kNR);
    const __m256 b1 = _mm256_load_ps(Bp + k * kNR + 8);
    PTO_MK_ROWS(PTO_MK_FMA)
  }
  PTO_MK_ROWS(PTO_MK_STORE)
#undef PTO_MK_LOAD
#undef PTO_MK_FMA
#undef PTO_MK_STORE
}

// Runs an MR-row block on a partial (ncols < 16) panel through a 16-wide edge buffer.
template <int MR, class Acc, class Kernel>
inline void edge_block(Acc* C, int ldc, bool acc, int ncols, Kernel kernel) {
  if (ncols == kNR) return kernel(C, ldc);
  alignas(32) Acc edge[MR * kNR] = {};
  if (acc)
    for (int i = 0; i < MR; ++i) std::copy_n(C + i * ldc, ncols, edge + i * kNR);
  kernel(edge, kNR);
  for (int i = 0; i < MR; ++i) std::copy_n(edge + i * kNR, ncols, C + i * ldc);
}

// Calls block.template operator()<MR>(m) for 6-row blocks and the remaining rows.
template <class Block>
inline void for_row_blocks(int M, Block&& block) {
  int m = 0;
  for (; m + kMR <= M; m += kMR) block.template operator()<kMR>(m);
  switch (M - m) {
    case 5: block.template operator()<5>(m); break;
    case 4: block.template operator()<4>(m); break;
    case 3: block.template operator()<3>(m); break;
    case 2: block.template operator()<2>(m); break;
    case 1: block.template operator()<1>(m); break;
    default: break;
  }
}

// sgemm with B supplied by pack_b(k0, kc, n0, nc, dst): dst[k * 16 + j] = B[k0 + k, n0 + j] for
// j < nc, zero for nc <= j < 16.
template <class PackB>
inline void sgemm_packed(int M, int N, int K, const float* A, int lda, PackB&& pack_b, float* C,
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
    for (int p = 0; p < panels; ++p)
      pack_b(k0, kc, p * kNR, std::min(kNR, N - p * kNR), Bp + size_t(p) * kc * kNR);
    const bool accumulate = acc || k0 > 0;
    for (int p = 0; p < panels; ++p) {
      const int n0 = p * kNR, nc = std::min(kNR, N - n0);
      const float* bp = Bp + size_t(p) * kc * kNR;
      for_row_blocks(M, [&]<int MR>(int m) {
        const float* a = A + size_t(m) * lda + k0;
        edge_block<MR>(C + size_t(m) * ldc + n0, ldc, accumulate, nc, [&](float* c, int ld) {
          micro_kernel_full<MR>(kc, a, lda, bp, c, ld, accumulate);
        });
      });
    }
  }
}

inline void sgemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                  int ldc, bool acc) {
  sgemm_packed(
      M, N, K, A, lda,
      [&](int k0, int kc, int n0, int nc, float* dst) {
        for (int k = 0; k < kc; ++k) {
          std::copy_n(B + size_t(k0 + k) * ldb + n0, nc, dst + k * kNR);
          std::fill(dst + k * kNR + nc, dst + (k + 1) * kNR, 0.0f);
        }
      },
      C, ldc, acc);
}

// ---- int8 / uint8 -> int32 ----------------------------------------------------------------------

// MR x 16 block over kp k-pairs: A is MR int16 rows (lda int16 elements apart, pairs in 32-bit
// words), Bp the interleaved panel (32 int16 per pair).
template <int MR>
inline void imicro_kernel(int kp, const int16_t* A, int lda, const int16_t* Bp, int32_t* C, int ldc,
                          bool acc) {
  static_assert(MR >= 1 && MR <= 6);
  const __m256i z = _mm256_setzero_si256();
  __m256i c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c50 = z,
          c41 = z, c51 = z;
#define PTO_IK_LOAD(I, X0, X1)                                                    \
  if constexpr (I < MR) {                                                         \
    if (acc) {                                                                    \
      X0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(C + I * ldc));     \
      X1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(C + I * ldc + 8)); \
    }                                                                             \
  }
#define PTO_IK_MADD(I, X0, X1)                           \
  if constexpr (I < MR) {                                \
    int32_t w;                                           \
    std::memcpy(&w, A + I * lda + 2 * p, 4);             \
    const __m256i a = _mm256_set1_epi32(w);              \
    X0 = _mm256_add_epi32(X0, _mm256_madd_epi16(a, b0)); \
    X1 = _mm256_add_epi32(X1, _mm256_madd_epi16(a, b1)); \
  }
#define PTO_IK_STORE(I, X0, X1)                                           \
  if constexpr (I < MR) {                                                 \
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(C + I * ldc), X0);     \
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(C + I * ldc + 8), X1); \
  }
  PTO_MK_ROWS(PTO_IK_LOAD)
  for (int p = 0; p < kp; ++p) {
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + 32 * p));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(Bp + 32 * p + 16));
    PTO_MK_ROWS(PTO_IK_MADD)
  }
  PTO_MK_ROWS(PTO_IK_STORE)
#undef PTO_IK_LOAD
#undef PTO_IK_MADD
#undef PTO_IK_STORE
}

// 16 int8 / uint8 -> 16 int16.
template <class In>
inline __m256i widen16(const In* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return std::is_signed_v<In> ? _mm256_cvtepi8_epi16(x) : _mm256_cvtepu8_epi16(x);
}

// Packs rows k0 .. k0 + kc of B, columns n0 .. n0 + nc, as interleaved k-pairs: dst[32 p + 2 j]
// = B[k0 + 2p, n0 + j], dst[32 p + 2 j + 1] = B[k0 + 2p + 1, n0 + j] (zero outside).
template <class In>
inline void ipack_b(const MatView<In>& b, int k0, int kc, int n0, int nc, int16_t* dst) {
  const int kp = (kc + 1) / 2;
  const bool fast = nc == kNR && b.run(n0, kNR) == kNR;
  for (int p = 0; p < kp; ++p) {
    const int k = k0 + 2 * p;
    const bool second = 2 * p + 1 < kc;
    int16_t* d = dst + 32 * p;
    if (fast && second) {
      const __m256i x0 = widen16(b.ptr(k, n0)), x1 = widen16(b.ptr(k + 1, n0));
      const __m256i lo = _mm256_unpacklo_epi16(x0, x1), hi = _mm256_unpackhi_epi16(x0, x1);
      _mm256_store_si256(reinterpret_cast<__m256i*>(d), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_store_si256(reinterpret_cast<__m256i*>(d + 16),
                         _mm256_permute2x128_si256(lo, hi, 0x31));
      continue;
    }
    int16_t r0[kNR] = {}, r1[kNR] = {};
    read_row(b, k, n0, nc, r0);
    if (second) read_row(b, k + 1, n0, nc, r1);
    for (int j = 0; j < kNR; ++j) d[2 * j] = r0[j], d[2 * j + 1] = r1[j];
  }
}

template <class In>
inline void igemm(int M, int N, int K, const MatView<In>& a, const MatView<In>& b, int32_t* C,
                  int ldc, bool acc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!acc)
      for (int m = 0; m < M; ++m) std::fill_n(C + size_t(m) * ldc, N, 0);
    return;
  }
  // A as int16 rows of even length (a zero appended when K is odd).
  const int lda = (K + 1) & ~1;
  int16_t* A = simd::scratch<int16_t, 5>(size_t(M) * lda);
  for (int m = 0; m < M; ++m) {
    read_row(a, m, 0, K, A + size_t(m) * lda);
    if (K < lda) A[size_t(m) * lda + K] = 0;
  }
  const int panels = (N + kNR - 1) / kNR;
  struct alignas(32) Lane32 {
    int16_t v[16];
  };
  thread_local std::vector<Lane32> pack;
  for (int k0 = 0; k0 < K; k0 += kKC) {
    const int kc = std::min(kKC, K - k0), kp = (kc + 1) / 2;
    pack.resize(size_t(panels) * kp * 2);
    int16_t* Bp = reinterpret_cast<int16_t*>(pack.data());
    for (int p = 0; p < panels; ++p)
      ipack_b(b, k0, kc, p * kNR, std::min(kNR, N - p * kNR), Bp + size_t(p) * kp * 32);
    const bool accumulate = acc || k0 > 0;
    for (int p = 0; p < panels; ++p) {
      const int n0 = p * kNR, nc = std::min(kNR, N - n0);
      const int16_t* bp = Bp + size_t(p) * kp * 32;
      for_row_blocks(M, [&]<int MR>(int m) {
        const int16_t* am = A + size_t(m) * lda + k0;
        edge_block<MR>(C + size_t(m) * ldc + n0, ldc, accumulate, nc, [&](int32_t* c, int ld) {
          imicro_kernel<MR>(kp, am, lda, bp, c, ld, accumulate);
        });
      });
    }
  }
}
#undef PTO_MK_ROWS
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

// rows x cols of v as a dense row-major matrix of O: v's own storage when that is already it,
// else a conversion into per-thread scratch `Slot`.
template <int Slot, class O, class T>
inline const O* dense_rows(const MatView<T>& v, int rows, int cols, int& ld) {
  if constexpr (std::is_same_v<O, T>) {
    if (v.layout == Layout::RowMajor) {
      ld = v.stride;
      return v.data;
    }
  }
  O* out = simd::scratch<O, Slot>(size_t(rows) * cols);
  for (int r = 0; r < rows; ++r) read_row(v, r, 0, cols, out + size_t(r) * cols);
  ld = cols;
  return out;
}

// init: 0 = zero, 1 = accumulate into C, 2 = bias row.
template <class Acc, class In>
void matmul(TileRef<Acc> c, const MatView<In>& a, const MatView<In>& b, int init, const Acc* bias) {
  static_assert(ref::detail::valid_mm_v<In, Acc>, "unsupported TMATMUL dtypes");
  ref::detail::check_tile(c, "dst");
  const int M = c.valid_rows, N = c.valid_cols, K = a.valid_cols;
  PTO_CHECK(a.valid_rows >= M && b.valid_rows >= K && b.valid_cols >= N,
            "src0 / src1 valid regions do not cover M x K / K x N");
  if (init == 2)
    for (int m = 0; m < M; ++m) std::copy_n(bias, N, c.row(m));
  if constexpr (std::is_same_v<Acc, float>) {
    if constexpr (std::is_same_v<In, float>) {
      if (a.layout == Layout::RowMajor && b.layout == Layout::RowMajor)
        return sgemm(M, N, K, a.data, a.stride, b.data, b.stride, c.data, c.stride, init != 0);
    }
    int lda;
    const float* A = dense_rows<3, float>(a, M, K, lda);
#ifdef PTO_SIMD_AVX2
    sgemm_packed(
        M, N, K, A, lda,
        [&](int k0, int kc, int n0, int nc, float* dst) {
          const bool rows = b.layout == Layout::RowMajor;
          for (int k = 0; k < kc; ++k) {
            if (rows) widen_n(b.data + size_t(k0 + k) * b.stride + n0, nc, dst + k * kNR);
            else read_row(b, k0 + k, n0, nc, dst + k * kNR);
            std::fill(dst + k * kNR + nc, dst + (k + 1) * kNR, 0.0f);
          }
        },
        c.data, c.stride, init != 0);
#else
    int ldb;
    const float* B = dense_rows<4, float>(b, K, N, ldb);
    sgemm(M, N, K, A, lda, B, ldb, c.data, c.stride, init != 0);
#endif
  } else {
#ifdef PTO_SIMD_AVX2
    igemm(M, N, K, a, b, c.data, c.stride, init != 0);
#else
    int lda, ldb;
    const In* A = dense_rows<3, In>(a, M, K, lda);
    const In* B = dense_rows<4, In>(b, K, N, ldb);
    for (int m = 0; m < M; ++m) {
      int32_t* out = c.row(m);
      if (init == 0) std::fill_n(out, N, 0);
      for (int k = 0; k < K; ++k) {
        const int32_t av = A[size_t(m) * lda + k];
        const In* bk = B + size_t(k) * ldb;
        // Exact: |a*b| <= 2^16 and int32 sums wrap like the reference's int64 -> int32.
        for (int n = 0; n < N; ++n)
          out[n] = int32_t(uint32_t(out[n]) + uint32_t(av * int32_t(bk[n])));
      }
    }
#endif
  }
}

template <class Acc, class In>
void matmul(TileRef<Acc> c, TileRef<In> a, TileRef<In> b, int init, const Acc* bias) {
  ref::detail::check_tile(c, "dst");
  ref::detail::check_covers(a, c.valid_rows, a.valid_cols, "src0");
  ref::detail::check_covers(b, a.valid_cols, c.valid_cols, "src1");
  // The kernels read A and B while they write C: when dst shares bytes with a source, compute
  // into a private tile and copy the result back (dst may alias a source, as for every
  // instruction).
  auto bytes = [](const auto& t) {
    const char* p = reinterpret_cast<const char*>(t.data);
    return std::pair<const char*, const char*>(
        p, p + sizeof(*t.data) * (size_t(std::max(t.rows, 1) - 1) * t.stride + size_t(t.cols)));
  };
  auto overlap = [](std::pair<const char*, const char*> x, std::pair<const char*, const char*> y) {
    return x.first < y.second && y.first < x.second;
  };
  if (overlap(bytes(c), bytes(a)) || overlap(bytes(c), bytes(b))) {
    const int M = c.valid_rows, N = c.valid_cols;
    std::vector<Acc> tmp(size_t(M) * N);
    for (int m = 0; m < M; ++m) std::copy_n(c.row(m), N, tmp.data() + size_t(m) * N);
    matmul(TileRef<Acc>{tmp.data(), M, N, N, M, N}, view(a), view(b), init, bias);
    for (int m = 0; m < M; ++m) std::copy_n(tmp.data() + size_t(m) * N, N, c.row(m));
    return;
  }
  matmul(c, view(a), view(b), init, bias);
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
