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

// Independent FMA chains in registers: the FP32 FMA peak in GFLOP/s.
extern "C" double fma_gflops(int threads, int64_t iters) {
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    {
      __m256 acc[10];
      for (int k = 0; k < 10; ++k) acc[k] = _mm256_set1_ps(0.001f * k);
      const __m256 m = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
      for (int64_t i = 0; i < iters; ++i)
        for (int k = 0; k < 10; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, add);
      float sink = 0;
      for (int k = 0; k < 10; ++k) sink += _mm256_cvtss_f32(acc[k]);
      volatile float keep = sink;
      (void)keep;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return double(threads) * iters * 10 * 8 * 2 / best / 1e9;
}
