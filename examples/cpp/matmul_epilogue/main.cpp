// y = gelu_tanh(x @ w + bias) in bf16 with fp32 accumulation: a cube kernel (the matmul) and a
// vector kernel (the epilogue), over a dynamic number of rows. Compiled once, run twice on new
// buffers. Checks against a double reference of the bf16 inputs; exits 1 beyond the tolerance.
#include <pypto/pypto.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

using namespace pypto;

namespace {

uint16_t ToBf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float FromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

int main() {
  try {
    const int64_t k = 256, n = 192;
    Tensor x(DT_BF16, {DYNAMIC, k}, "x"), w(DT_BF16, {k, n}, "w"), bias(DT_FP32, {1, n}, "bias");
    Tensor y(DT_BF16, {DYNAMIC, n}, "y");
    FUNCTION("LinearGelu", {x, w, bias}, {y}) {
      TileShape::Current().SetCubeTile({64, 64}, {64, 256}, {64, 192});
      Tensor h = Matrix::Matmul(DT_FP32, x, w);  // cube kernel (AIC), fp32 accumulation
      TileShape::Current().SetVecTile(16, 192);
      Tensor z = h + bias;
      // gelu(z) = 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))
      Tensor t = Tanh(Mul(z + Mul(Mul(z, z), z) * 0.044715, Element(0.7978845608028654)));
      Assemble(Cast(Mul(z, t + 1.0) * 0.5, DT_BF16), {0, 0}, y);  // vector kernel (AIV)
    }
    CompiledFunction f = Compile("LinearGelu");
    std::printf("%d kernels\n", f.NumKernels());

    std::mt19937 gen(1);
    std::normal_distribution<float> normal;
    double worst = 0;
    for (int64_t m : {96, 130}) {
      std::vector<uint16_t> hx(m * k), hw(k * n), hy(m * n);
      std::vector<float> hb(n);
      for (auto& v : hx) v = ToBf16(normal(gen));
      for (auto& v : hw) v = ToBf16(normal(gen) * 0.0625f);
      for (auto& v : hb) v = normal(gen);
      f.Run({HostTensor(hx.data(), DT_BF16, {m, k}), HostTensor(hw.data(), DT_BF16, {k, n}),
             HostTensor(hb.data(), DT_FP32, {1, n})},
            {HostTensor(hy.data(), DT_BF16, {m, n})});
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double z = hb[j];
          for (int64_t t = 0; t < k; ++t) z += double(FromBf16(hx[i * k + t])) * FromBf16(hw[t * n + j]);
          double g = 0.5 * z * (1 + std::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
          // bf16 keeps 8 significant bits: one rounding of the result, plus fp32 accumulation
          double err = std::abs(FromBf16(hy[i * n + j]) - g) / (std::abs(g) + 1e-2);
          worst = std::max(worst, err);
        }
    }
    std::printf("gelu(x @ w + b), bf16, rows 96 and 130: max relative error = %.3g\n", worst);
    if (!(worst <= 1e-2)) {
      std::printf("FAILED: beyond 1e-2\n");
      return 1;
    }
    std::printf("OK\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
