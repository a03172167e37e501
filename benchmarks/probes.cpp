// Machine probes for the roofline: STREAM triad bandwidth and FP32 FMA peak, measured on this
// machine by the benchmark suite (compiled on the fly, loaded with ctypes).
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

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

// Independent FMA chains in registers: the FP32 FMA peak in GFLOP/s. Twelve named accumulators
// (an array of __m256 would live in memory at -O2 and measure store forwarding instead), kept
// in registers across iterations by an empty asm that the compiler cannot see through.
extern "C" double fma_gflops(int threads, int64_t iters) {
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    {
      __m256 a0 = _mm256_set1_ps(0.1f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
             a9 = a0, a10 = a0, a11 = a0;
      const __m256 m = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
      for (int64_t i = 0; i < iters; ++i) {
#define PYPTO_FMA1(x) x = _mm256_fmadd_ps(x, m, add);
        PYPTO_FMA1(a0) PYPTO_FMA1(a1) PYPTO_FMA1(a2) PYPTO_FMA1(a3) PYPTO_FMA1(a4) PYPTO_FMA1(a5)
        PYPTO_FMA1(a6) PYPTO_FMA1(a7) PYPTO_FMA1(a8) PYPTO_FMA1(a9) PYPTO_FMA1(a10) PYPTO_FMA1(a11)
#undef PYPTO_FMA1
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7),
                         "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
      }
      volatile float keep = _mm256_cvtss_f32(_mm256_add_ps(a0, a11));
      (void)keep;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return double(threads) * iters * 12 * 8 * 2 / best / 1e9;
}
