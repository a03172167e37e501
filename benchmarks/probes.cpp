// Machine probes for the roofline, measured on this machine by the benchmark suite (compiled on
// the fly, loaded with ctypes): STREAM triad bandwidth, and the true compute peak per dtype with
// the best instruction this CPU has for it: fp32 FMA, bf16 dot products (VDPBF16PS), int8 dot
// products (VPDPBUSD zmm / ymm, else VPMADDWD + VPADDD), and AMX tiles (TDPBF16PS, TDPBSSD).
//
// Each probe keeps enough independent chains in flight to fill every port: latency x ports
// (e.g. 4 cycles x two 512-bit FMA pipes = 8 chains; 16 are used), named register variables kept
// live across iterations by empty asm statements the compiler cannot see through (an array of
// vectors would live in memory and measure store forwarding instead). Every kernel is compiled
// for its own target (function attributes) and run only where CPUID says the CPU has it, so the
// file compiles with any -march.
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" double triad_gbs(int64_t n, int threads, int reps) {
  double* a = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  double* b = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  double* c = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  std::free(a);
  std::free(b);
  std::free(c);
  return 3.0 * n * sizeof(double) / best / 1e9;  // STREAM counts 2 reads + 1 write
}

namespace {

struct Cpu {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512_vnni = false, avx512_bf16 = false,
       avx_vnni = false, amx = false;
};

const Cpu& HostCpu() {
  static const Cpu c = [] {
    Cpu c;
    unsigned a, b, cx, d;
    __cpuid_count(1, 0, a, b, cx, d);
    const bool osxsave = cx & (1u << 27);
    c.fma = cx & (1u << 12);
    uint64_t xcr0 = 0;
    if (osxsave) {
      uint32_t lo, hi;
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      xcr0 = (uint64_t(hi) << 32) | lo;
    }
    const bool os_avx = (xcr0 & 6) == 6, os_zmm = os_avx && (xcr0 & 0xE0) == 0xE0;
    const bool os_amx = (xcr0 & (3ull << 17)) == (3ull << 17);
    __cpuid_count(7, 0, a, b, cx, d);
    const unsigned sub = a;
    c.avx2 = os_avx && (b & (1u << 5));
    c.fma = c.fma && os_avx;
    c.avx512f = os_zmm && (b & (1u << 16));
    c.avx512bw = c.avx512f && (b & (1u << 30));
    c.avx512_vnni = c.avx512f && (cx & (1u << 11));
    bool amx = os_amx && (d & (1u << 22)) && (d & (1u << 24)) && (d & (1u << 25));
    if (sub >= 1) {
      __cpuid_count(7, 1, a, b, cx, d);
      c.avx_vnni = c.avx2 && (a & (1u << 4));
      c.avx512_bf16 = c.avx512f && (a & (1u << 5));
    }
    // Linux: the process asks for the AMX tile data once (pypto's runtime asks too).
    if (amx) amx = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
    c.amx = amx;
    return c;
  }();
  return c;
}

// Runs body(iters) on `threads` threads, best of 3; returns seconds.
template <class F>
double Best(int threads, F body) {
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    body();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

// 16 independent chains x = op(x, ...) of the vector type V, pinned in registers by empty asm.
// clang-format off
#define PYPTO_CHAINS(V, INIT, OP)                                                                     \
  V x0 = INIT, x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0, x6 = x0, x7 = x0, x8 = x0, x9 = x0,        \
    x10 = x0, x11 = x0, x12 = x0, x13 = x0, x14 = x0, x15 = x0;                                         \
  for (int64_t i = 0; i < iters; ++i) {                                                                 \
    OP(x0) OP(x1) OP(x2) OP(x3) OP(x4) OP(x5) OP(x6) OP(x7)                                             \
    OP(x8) OP(x9) OP(x10) OP(x11) OP(x12) OP(x13) OP(x14) OP(x15)                                       \
    __asm__ volatile("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5), "+v"(x6), "+v"(x7)); \
    __asm__ volatile("" : "+v"(x8), "+v"(x9), "+v"(x10), "+v"(x11), "+v"(x12), "+v"(x13), "+v"(x14),    \
                     "+v"(x15));                                                                        \
  }                                                                                                     \
  __asm__ volatile("" ::"v"(x0), "v"(x15));
// 12 chains for ymm code on CPUs without AVX-512: 16 registers in all, two of them constants.
#define PYPTO_CHAINS12(V, INIT, OP)                                                                   \
  V x0 = INIT, x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0, x6 = x0, x7 = x0, x8 = x0, x9 = x0,        \
    x10 = x0, x11 = x0;                                                                                 \
  for (int64_t i = 0; i < iters; ++i) {                                                                 \
    OP(x0) OP(x1) OP(x2) OP(x3) OP(x4) OP(x5) OP(x6) OP(x7) OP(x8) OP(x9) OP(x10) OP(x11)               \
    __asm__ volatile("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5));                  \
    __asm__ volatile("" : "+v"(x6), "+v"(x7), "+v"(x8), "+v"(x9), "+v"(x10), "+v"(x11));                \
  }                                                                                                     \
  __asm__ volatile("" ::"v"(x0), "v"(x11));
// clang-format on

__attribute__((target("avx512f"))) void Fp32Zmm(int64_t iters) {
  const __m512 m = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
#define OP(x) x = _mm512_fmadd_ps(x, m, add);
  PYPTO_CHAINS(__m512, _mm512_set1_ps(0.1f), OP)
#undef OP
}
__attribute__((target("avx2,fma"))) void Fp32Ymm(int64_t iters) {
  const __m256 m = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
#define OP(x) x = _mm256_fmadd_ps(x, m, add);
  PYPTO_CHAINS12(__m256, _mm256_set1_ps(0.1f), OP)
#undef OP
}
__attribute__((target("avx512f,avx512bf16"))) void Bf16Zmm(int64_t iters) {
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x33003300);
#define OP(x) x = _mm512_dpbf16_ps(x, a, b);
  PYPTO_CHAINS(__m512, _mm512_set1_ps(0.1f), OP)
#undef OP
}
__attribute__((target("avx512f,avx512vnni"))) void Int8Zmm(int64_t iters) {
  const __m512i a = _mm512_set1_epi32(0x01010101), b = _mm512_set1_epi32(0x01010101);
#define OP(x) x = _mm512_dpbusd_epi32(x, a, b);
  PYPTO_CHAINS(__m512i, _mm512_set1_epi32(1), OP)
#undef OP
}
__attribute__((target("avx2,avxvnni"))) void Int8YmmVnni(int64_t iters) {
  const __m256i a = _mm256_set1_epi32(0x01010101), b = _mm256_set1_epi32(0x01010101);
#define OP(x) x = _mm256_dpbusd_avx_epi32(x, a, b);
  PYPTO_CHAINS12(__m256i, _mm256_set1_epi32(1), OP)
#undef OP
}
// VPMADDWD + VPADDD: 16 int16 MACs per pair of instructions (what the cube's AVX2 int8 path runs).
__attribute__((target("avx2"))) void Int8YmmMadd(int64_t iters) {
  __m256i a = _mm256_set1_epi32(0x00010001), b = _mm256_set1_epi32(0x00010001);
#define OP(x)                     \
  __asm__ volatile("" : "+v"(a)); \
  x = _mm256_add_epi32(x, _mm256_madd_epi16(a, b));
  PYPTO_CHAINS12(__m256i, _mm256_set1_epi32(1), OP)
#undef OP
}

// AMX: TDPBF16PS / TDPBSSD into four accumulator tiles from two A and two B tiles (the cube's
// 2 x 2 blocking) without loads in the loop: the tile unit's own peak.
struct alignas(64) TileConfig {
  uint8_t palette_id, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) void Amx(int64_t iters, bool bf16) {
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof(cfg));
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  alignas(64) static thread_local unsigned char buf[16 * 64];
  std::memset(buf, 0, sizeof(buf));
  _tile_loadd(4, buf, 64);
  _tile_loadd(5, buf, 64);
  _tile_loadd(6, buf, 64);
  _tile_loadd(7, buf, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  if (bf16) {
    for (int64_t i = 0; i < iters; ++i) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  } else {
    for (int64_t i = 0; i < iters; ++i) {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  }
  _tile_stored(0, buf, 64);
  _tile_release();
}

}  // namespace

/// The compute peak (GFLOP/s; GOP/s for int8) of `what` on `threads` threads: "fp32", "bf16",
/// "int8", "amx_bf16", "amx_int8". *isa gets the instruction measured ("" and 0 when the CPU has
/// nothing for it: AMX absent). bf16 without a bf16 dot product runs on the fp32 FMA units (the
/// cube widens it): its peak is fp32's.
extern "C" double compute_peak(const char* what, int threads, int64_t iters, char* isa, int isa_len) {
  const Cpu& c = HostCpu();
  void (*fn)(int64_t) = nullptr;
  double ops = 0;  // per iteration and thread
  const char* name = "";
  const std::string w = what;
  auto fp32 = [&] {
    if (c.avx512f) {
      fn = Fp32Zmm, ops = 16 * 16 * 2, name = "fp32 FMA zmm (VFMADD231PS), 16 chains";
    } else if (c.avx2 && c.fma) {
      fn = Fp32Ymm, ops = 12 * 8 * 2, name = "fp32 FMA ymm (VFMADD231PS), 12 chains";
    }
  };
  if (w == "fp32") {
    fp32();
  } else if (w == "bf16") {
    if (c.avx512_bf16)
      fn = Bf16Zmm, ops = 16 * 32 * 2, name = "bf16 dot products zmm (VDPBF16PS), 16 chains";
    else
      fp32();
  } else if (w == "int8") {
    if (c.avx512_vnni)
      fn = Int8Zmm, ops = 16 * 64 * 2, name = "int8 dot products zmm (VPDPBUSD), 16 chains";
    else if (c.avx_vnni)
      fn = Int8YmmVnni, ops = 12 * 32 * 2, name = "int8 dot products ymm (VPDPBUSD, AVX-VNNI), 12 chains";
    else if (c.avx2)
      fn = Int8YmmMadd, ops = 12 * 16 * 2, name = "int16 pairs ymm (VPMADDWD + VPADDD), 12 chains";
  } else if ((w == "amx_bf16" || w == "amx_int8") && c.amx) {
    const bool bf16 = w == "amx_bf16";
    const double t = Best(threads, [&] { Amx(iters / 16, bf16); });
    std::snprintf(isa, isa_len, "%s", bf16 ? "AMX TDPBF16PS, 4 accumulator tiles" : "AMX TDPBSSD, 4 accumulator tiles");
    // 16 x 16 outputs x (32 bf16 or 64 int8) MACs per instruction, 4 per iteration.
    return double(threads) * (iters / 16) * 4 * 16 * 16 * (bf16 ? 32 : 64) * 2 / t / 1e9;
  }
  std::snprintf(isa, isa_len, "%s", name);
  if (!fn) return 0;
  const double t = Best(threads, [&] { fn(iters); });
  return double(threads) * iters * ops / t / 1e9;
}

/// The FP32 FMA peak in GFLOP/s (compute_peak("fp32")).
extern "C" double fma_gflops(int threads, int64_t iters) {
  char isa[128];
  return compute_peak("fp32", threads, iters, isa, sizeof(isa));
}
