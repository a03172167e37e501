// Per-instruction cost of the softmax tile chain on one 8 x 2048 fp32 tile (64 KiB, L2
// resident): the profile behind the softmax figure in docs/benchmarks.md.
//   c++ -O3 -march=native -std=c++20 -fno-math-errno -I include benchmarks/tile_profile.cpp -o tile_profile
#include <pto/pto.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

using namespace pto;

int main() {
  const int R = 8, C = 2048;
  std::vector<float> a(R * C), b(R * C), m(R), s(R);
  for (int i = 0; i < R * C; ++i) a[i] = (i % 97) * 0.01f;
  TileRef<float> A{a.data(), R, C, C, R, C}, B{b.data(), R, C, C, R, C};
  TileRef<float> M{m.data(), R, 1, 1, R, 1}, S{s.data(), R, 1, 1, R, 1};
  GlobalRef<float> g{b.data(), {1, 1, 1, R, C}, {0, 0, 0, C, 1}};
  auto bench = [&](const char* name, auto f) {
    const int n = 3000;
    for (int i = 0; i < 100; ++i) f();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
    std::printf("%-18s %7.2f us per tile  %6.2f ns per element\n", name, us, us * 1e3 / (R * C));
  };
  bench("TLOAD", [&] { TLOAD(A, g); });
  bench("TROWMAX", [&] { TROWMAX(M, A); });
  bench("TROWEXPANDSUB", [&] { TROWEXPANDSUB(B, A, M); });
  bench("TEXP", [&] { TEXP(B, A); });
  bench("TROWEXPANDEXPDIF", [&] { TROWEXPANDEXPDIF(B, A, M); });
  bench("TROWSUM", [&] { TROWSUM(S, B); });
  bench("TROWEXPANDMUL", [&] { TROWEXPANDMUL(B, A, S); });
  bench("TROWEXPANDDIV", [&] { TROWEXPANDDIV(B, A, S); });
  bench("TSTORE", [&] { TSTORE(g, A); });
}
