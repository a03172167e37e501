// PTO-ISA microbenchmark (not a test): throughput of the main instruction families on
// L1/L2-resident tiles, as a percentage of this machine's measured bandwidth or FMA peak.
//
//   g++ -O3 -march=native -std=c++20 -I include tests/cpp/pto/bench/pto_bench.cpp -o pto_bench
//   ./pto_bench [seconds_per_case=0.2]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <pto/pto.hpp>
#include <random>
#include <vector>

#ifdef PTO_SIMD_AVX2
#include <immintrin.h>
#endif

namespace {

double g_seconds = 0.2;

// Runs f repeatedly for about g_seconds; returns seconds per call (best of 3 runs).
template <class F>
double time_per_call(F&& f) {
  using clk = std::chrono::steady_clock;
  f();
  long iters = 1;
  for (;;) {  // calibrate
    const auto t0 = clk::now();
    for (long i = 0; i < iters; ++i) f();
    const double dt = std::chrono::duration<double>(clk::now() - t0).count();
    if (dt > g_seconds / 10) {
      iters = std::max(1L, long(iters * (g_seconds / 3) / dt));
      break;
    }
    iters *= 2;
  }
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = clk::now();
    for (long i = 0; i < iters; ++i) f();
    best = std::min(best, std::chrono::duration<double>(clk::now() - t0).count() / iters);
  }
  return best;
}

template <class T>
void escape(T* p) {
  asm volatile("" : : "g"(p) : "memory");
}

// ---- machine peaks -----------------------------------------------------------------------------

// fp32 FMA peak of one core: 12 independent 8-wide FMA chains (enough to cover latency x ports).
double fma_peak_gflops() {
#ifdef PTO_SIMD_AVX2
  const long n = 1 << 16;
  float out[8];
  const double t = time_per_call([&] {
    __m256 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i));
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
    for (long k = 0; k < n; ++k)
      for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    __m256 s = acc[0];
    for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
    _mm256_storeu_ps(out, s);
    escape(out);
  });
  return 2.0 * 8 * 12 * n / t / 1e9;
#else
  return 0;
#endif
}

// Read bandwidth (GB/s) over a buffer of `bytes`, and copy bandwidth (bytes read + written).
double read_bw(size_t bytes) {
  std::vector<float> buf(bytes / 4, 1.0f);
  float out;
  const double t = time_per_call([&] {
#ifdef PTO_SIMD_AVX2
    // 8 independent accumulators: enough to hide the add latency behind 2 loads per cycle.
    using pto::simd::vf;
    using pto::simd::vload;
    vf s0{}, s1{}, s2{}, s3{}, s4{}, s5{}, s6{}, s7{};
    const float* p = buf.data();
    for (size_t i = 0; i < buf.size(); i += 64) {
      s0 += vload(p + i), s1 += vload(p + i + 8), s2 += vload(p + i + 16);
      s3 += vload(p + i + 24), s4 += vload(p + i + 32), s5 += vload(p + i + 40);
      s6 += vload(p + i + 48), s7 += vload(p + i + 56);
    }
    out = ((s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7))[0];
#else
    float s = 0;
    for (float x : buf) s += x;
    out = s;
#endif
    escape(&out);
  });
  return bytes / t / 1e9;
}
// Copy bandwidth (bytes read + written) over two buffers of bytes / 2, with pto's vector copy
// or with glibc memcpy.
double copy_bw(size_t bytes, bool glibc) {
  std::vector<float> a(bytes / 8, 1.0f), b(bytes / 8);
  const double t = time_per_call([&] {
    if (glibc) std::memcpy(b.data(), a.data(), bytes / 2);
    else pto::simd::copy_bytes(b.data(), a.data(), bytes / 2);
    escape(b.data());
  });
  return bytes / t / 1e9;
}

// ---- instruction cases
// ---------------------------------------------------------------------------

template <class T>
std::vector<T> random_vec(size_t n, float lo, float hi) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = T(d(rng));
  return v;
}

template <class T>
pto::TileRef<T> tile(std::vector<T>& v, int r, int c) {
  return {v.data(), r, c, c, r, c};
}

void report(const char* name, const char* what, double value, const char* unit, double peak) {
  std::printf("%-34s %-22s %9.2f %-7s %6.1f %%\n", name, what, value, unit, 100.0 * value / peak);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_seconds = std::atof(argv[1]);
  std::printf("PTO-ISA microbenchmark, fast layer = %s\n\n", pto::simd::isa_name());
  const double peak = fma_peak_gflops();
  const double l1 = read_bw(16 << 10), l2 = read_bw(256 << 10);
  const double l1c = copy_bw(16 << 10, false), l2c = copy_bw(256 << 10, false);
  const double l1g = copy_bw(16 << 10, true), l2g = copy_bw(256 << 10, true);
  std::printf("machine (one core): fp32 FMA peak %.1f GFLOP/s\n", peak);
  std::printf("  read  bandwidth: L1 (16 KiB) %.1f GB/s, L2 (256 KiB) %.1f GB/s\n", l1, l2);
  std::printf("  copy  bandwidth: L1 (16 KiB) %.1f GB/s, L2 (256 KiB) %.1f GB/s\n", l1c, l2c);
  std::printf("  glibc memcpy:    L1 (16 KiB) %.1f GB/s, L2 (256 KiB) %.1f GB/s\n\n", l1g, l2g);
  std::printf("%-34s %-22s %9s %-7s %8s\n", "instruction (tile)", "metric", "value", "unit",
              "of peak");

  // Elementwise / axis on L1-resident 32 x 64 fp32 tiles (8 KiB each) and L2-resident 128 x 256.
  for (auto [R, C, lvl, bw] : {std::tuple{32, 64, "L1", l1}, std::tuple{128, 256, "L2", l2}}) {
    const size_t n = size_t(R) * C;
    auto a = random_vec<float>(n, -4, 4), b = random_vec<float>(n, 0.5f, 4),
         d = random_vec<float>(n, 0, 1);
    auto rowv = random_vec<float>(R, 1, 2);
    auto A = tile(a, R, C), B = tile(b, R, C), D = tile(d, R, C);
    pto::TileRef<float> RV{rowv.data(), R, 1, 1, R, 1};
    char name[64];
    auto gbps = [&](double bytes, auto f) { return bytes / time_per_call(f) / 1e9; };
    std::snprintf(name, sizeof name, "TADD f32 %dx%d (%s)", R, C, lvl);
    report(name, "bytes r+w / s",
           gbps(12.0 * n,
                [&] {
                  pto::TADD(D, A, B);
                  escape(d.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TMULS f32 %dx%d (%s)", R, C, lvl);
    report(name, "bytes r+w / s",
           gbps(8.0 * n,
                [&] {
                  pto::TMULS(D, A, 1.5f);
                  escape(d.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TEXP f32 %dx%d (%s)", R, C, lvl);
    report(name, "bytes r+w / s",
           gbps(8.0 * n,
                [&] {
                  pto::TEXP(D, A);
                  escape(d.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TROWSUM f32 %dx%d (%s)", R, C, lvl);
    report(name, "bytes read / s",
           gbps(4.0 * n,
                [&] {
                  pto::TROWSUM(RV, A);
                  escape(rowv.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TROWMAX f32 %dx%d (%s)", R, C, lvl);
    report(name, "bytes read / s",
           gbps(4.0 * n,
                [&] {
                  pto::TROWMAX(RV, A);
                  escape(rowv.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TCOLSUM f32 %dx%d (%s)", R, C, lvl);
    pto::TileRef<float> CV{d.data(), 1, C, C, 1, C};
    report(name, "bytes read / s",
           gbps(4.0 * n,
                [&] {
                  pto::TCOLSUM(CV, A);
                  escape(d.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TROWEXPANDSUB f32 %dx%d (%s)", R, C, lvl);
    report(name, "bytes r+w / s",
           gbps(8.0 * n,
                [&] {
                  pto::TROWEXPANDSUB(D, A, RV);
                  escape(d.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TROWEXPANDEXPDIF f32 %dx%d (%s)", R, C, lvl);
    report(name, "bytes r+w / s",
           gbps(8.0 * n,
                [&] {
                  pto::TROWEXPANDEXPDIF(D, A, RV);
                  escape(d.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TLOAD f32 %dx%d (%s)", R, C, lvl);
    auto g = random_vec<float>(n, 0, 1);
    const auto gv = pto::make_global_2d(g.data(), R, C, C);
    report(name, "bytes r+w / s",
           gbps(8.0 * n,
                [&] {
                  pto::TLOAD(D, gv);
                  escape(d.data());
                }),
           "GB/s", lvl[1] == '1' ? l1c : l2c);
    auto h = random_vec<pto::half>(n, -4, 4), h2 = random_vec<pto::half>(n, -4, 4);
    auto H = tile(h, R, C), H2 = tile(h2, R, C);
    std::snprintf(name, sizeof name, "TADD f16 %dx%d (%s)", R, C, lvl);
    report(name, "bytes r+w / s",
           gbps(6.0 * n,
                [&] {
                  pto::TADD(H2, H, H);
                  escape(h2.data());
                }),
           "GB/s", bw);
    std::snprintf(name, sizeof name, "TCVT f32->f16 %dx%d (%s)", R, C, lvl);
    report(name, "bytes r+w / s",
           gbps(6.0 * n,
                [&] {
                  pto::TCVT(H, A);
                  escape(h.data());
                }),
           "GB/s", bw);
  }
  std::printf("\n");
  // Matmul on cache-resident tiles.
  for (int S : {32, 64, 128}) {
    const int M = S, N = S, K = S;
    auto a = random_vec<float>(size_t(M) * K, -1, 1), b = random_vec<float>(size_t(K) * N, -1, 1);
    std::vector<float> c(size_t(M) * N);
    auto A = tile(a, M, K), B = tile(b, K, N), C = tile(c, M, N);
    const double flops = 2.0 * M * N * K;
    char name[64];
    std::snprintf(name, sizeof name, "TMATMUL f32 %dx%dx%d", M, N, K);
    report(name, "GFLOP/s", flops / time_per_call([&] {
                              pto::TMATMUL(C, A, B);
                              escape(c.data());
                            }) / 1e9,
           "GFLOP/s", peak);
    std::snprintf(name, sizeof name, "TMATMUL_ACC f32 %dx%dx%d", M, N, K);
    report(name, "GFLOP/s", flops / time_per_call([&] {
                              pto::TMATMUL_ACC(C, A, B);
                              escape(c.data());
                            }) / 1e9,
           "GFLOP/s", peak);
    auto ha = random_vec<pto::half>(size_t(M) * K, -1, 1),
         hb = random_vec<pto::half>(size_t(K) * N, -1, 1);
    auto HA = tile(ha, M, K), HB = tile(hb, K, N);
    std::snprintf(name, sizeof name, "TMATMUL f16->f32 %dx%dx%d", M, N, K);
    report(name, "GFLOP/s", flops / time_per_call([&] {
                              pto::TMATMUL(C, HA, HB);
                              escape(c.data());
                            }) / 1e9,
           "GFLOP/s", peak);
    auto ba = random_vec<pto::bfloat16>(size_t(M) * K, -1, 1),
         bb = random_vec<pto::bfloat16>(size_t(K) * N, -1, 1);
    auto BA = tile(ba, M, K), BB = tile(bb, K, N);
    std::snprintf(name, sizeof name, "TMATMUL bf16->f32 %dx%dx%d", M, N, K);
    report(name, "GFLOP/s", flops / time_per_call([&] {
                              pto::TMATMUL(C, BA, BB);
                              escape(c.data());
                            }) / 1e9,
           "GFLOP/s", peak);
    // int8: "GOP/s" counts a multiply and an add per k step; the % is of the fp32 FMA peak.
    std::vector<int8_t> ia(size_t(M) * K), ib(size_t(K) * N);
    std::mt19937 rng(3);
    for (auto& x : ia) x = int8_t(rng());
    for (auto& x : ib) x = int8_t(rng());
    std::vector<int32_t> ic(size_t(M) * N);
    auto IA = tile(ia, M, K), IB = tile(ib, K, N);
    auto IC = tile(ic, M, N);
    std::snprintf(name, sizeof name, "TMATMUL i8->i32 %dx%dx%d", M, N, K);
    report(name, "GOP/s", flops / time_per_call([&] {
                            pto::TMATMUL(IC, IA, IB);
                            escape(ic.data());
                          }) / 1e9,
           "GOP/s", peak);
  }
#ifdef PTO_BENCH_NZ
  // NZ operands straight into TMATMUL, against the row-major call.
  {
    using namespace pto;
    constexpr int S = 64;
    auto a = std::make_unique<Tile<float, S, S, Loc::Left, Layout::NZ>>();
    auto b = std::make_unique<Tile<float, S, S, Loc::Right, Layout::NZ>>();
    auto c = std::make_unique<AccTile<float, S, S>>();
    for (int i = 0; i < S * S; ++i) a->data[i] = float(i % 7), b->data[i] = float(i % 5);
    report("TMATMUL f32 64x64x64 NZ operands", "GFLOP/s", 2.0 * S * S * S / time_per_call([&] {
                                                            TMATMUL(*c, *a, *b);
                                                            escape(c->data);
                                                          }) / 1e9,
           "GFLOP/s", peak);
  }
#endif
  std::printf("\n");
  // Small-tile row reductions (per-row overheads dominate): ns per call.
  for (auto [R, C] : {std::pair{8, 64}, std::pair{16, 32}, std::pair{64, 16}, std::pair{8, 2048}}) {
    auto a = random_vec<float>(size_t(R) * C, -4, 4);
    auto rowv = random_vec<float>(R, 1, 2);
    auto A = tile(a, R, C);
    pto::TileRef<float> RV{rowv.data(), R, 1, 1, R, 1};
    char name[64];
    std::snprintf(name, sizeof name, "TROWSUM f32 %dx%d", R, C);
    const double ts = time_per_call([&] {
      pto::TROWSUM(RV, A);
      escape(rowv.data());
    });
    std::printf("%-34s %-22s %9.1f ns   %6.1f GB/s\n", name, "time per call", ts * 1e9,
                4.0 * R * C / ts / 1e9);
    std::snprintf(name, sizeof name, "TROWMAX f32 %dx%d", R, C);
    const double tm = time_per_call([&] {
      pto::TROWMAX(RV, A);
      escape(rowv.data());
    });
    std::printf("%-34s %-22s %9.1f ns   %6.1f GB/s\n", name, "time per call", tm * 1e9,
                4.0 * R * C / tm / 1e9);
  }
  std::printf("\n");
  // Complex / indexed instructions, fast against the reference: million elements per second.
  {
    constexpr int R = 32, C = 64;
    const size_t n = size_t(R) * C;
    auto a = random_vec<float>(n, -4, 4), d = random_vec<float>(n, 0, 1),
         m = random_vec<float>(n, 0, 1);
    auto A = tile(a, R, C), D = tile(d, R, C), Mt = tile(m, R, C);
    std::vector<int32_t> ix(n), jx(n), ci(n);
    std::mt19937 rng(5);
    for (auto& x : ix) x = int32_t(rng() % n);
    auto IX = tile(ix, R, C), JX = tile(jx, R, C), CI = tile(ci, R, C);
    pto::TileRef<float> D2{d.data(), C, R, R, C, R};
    auto g = random_vec<float>(n, 0, 1);
    const auto gv = pto::make_global_2d(g.data(), R, C, C);
    auto both = [&](const char* name, auto fast, auto refc) {
      const double tf = time_per_call(fast), tr = time_per_call(refc);
      std::printf("%-34s fast %8.1f Melem/s   ref %8.1f Melem/s   x%.1f\n", name, n / tf / 1e6,
                  n / tr / 1e6, tr / tf);
    };
    namespace ref = pto::ref;
    // Sort and merge cycle through 16 inputs: on one repeated input the reference's branches
    // would be learnt by the predictor, which real data does not allow.
    constexpr int kSets = 16;
    std::vector<float> sa(kSets * n), sv(kSets * n);
    std::vector<int32_t> sx(kSets * n);
    std::uniform_real_distribution<float> u(-4, 4);
    for (auto& x : sa) x = u(rng);
    std::vector<pto::TileRef<float>> SA, SV;
    std::vector<pto::TileRef<int32_t>> SX;
    for (int k = 0; k < kSets; ++k) {
      SA.push_back({sa.data() + k * n, R, C, C, R, C});
      SV.push_back({sv.data() + k * n, R, C, C, R, C});
      SX.push_back({sx.data() + k * n, R, C, C, R, C});
      ref::TSORT32(SV[k], SA[k], SX[k]);
    }
    int k = 0;
    both(
        "TSORT32 f32 32x64",
        [&] {
          pto::TSORT32(D, SA[k], JX);
          k = (k + 1) % kSets;
          escape(d.data());
        },
        [&] {
          ref::TSORT32(D, SA[k], JX);
          k = (k + 1) % kSets;
          escape(d.data());
        });
    both(
        "TMRGSORT f32 32x64 run 32",
        [&] {
          pto::TMRGSORT(Mt, CI, SV[k], SX[k], 32);
          k = (k + 1) % kSets;
          escape(m.data());
        },
        [&] {
          ref::TMRGSORT(Mt, CI, SV[k], SX[k], 32);
          k = (k + 1) % kSets;
          escape(m.data());
        });
    both(
        "TGATHER f32 32x64",
        [&] {
          pto::TGATHER(D, A, IX);
          escape(d.data());
        },
        [&] {
          ref::TGATHER(D, A, IX);
          escape(d.data());
        });
    both(
        "TSCATTER f32 32x64",
        [&] {
          pto::TSCATTER(D, A, IX);
          escape(d.data());
        },
        [&] {
          ref::TSCATTER(D, A, IX);
          escape(d.data());
        });
    both(
        "MGATHER f32 32x64",
        [&] {
          pto::MGATHER(D, gv, IX);
          escape(d.data());
        },
        [&] {
          ref::MGATHER(D, gv, IX);
          escape(d.data());
        });
    both(
        "MSCATTER f32 32x64",
        [&] {
          pto::MSCATTER(gv, A, IX);
          escape(g.data());
        },
        [&] {
          ref::MSCATTER(gv, A, IX);
          escape(g.data());
        });
    both(
        "TSTORE atomic add f32 32x64",
        [&] {
          pto::TSTORE(gv, A, pto::AtomicMode::ADD);
          escape(g.data());
        },
        [&] {
          ref::TSTORE(gv, A, pto::AtomicMode::ADD);
          escape(g.data());
        });
    both(
        "TRESHAPE f32 32x64 -> 64x32",
        [&] {
          pto::TRESHAPE(D2, A);
          escape(d.data());
        },
        [&] {
          ref::TRESHAPE(D2, A);
          escape(d.data());
        });
    both(
        "TCI i32 32x64",
        [&] {
          pto::TCI(CI, 5);
          escape(ci.data());
        },
        [&] {
          ref::TCI(CI, 5);
          escape(ci.data());
        });
    both(
        "TTRI f32 32x64",
        [&] {
          pto::TTRI(D, 3, false);
          escape(d.data());
        },
        [&] {
          ref::TTRI(D, 3, false);
          escape(d.data());
        });
  }
  return 0;
}
