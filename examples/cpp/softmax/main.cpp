// The softmax of the C++ API's seed: a dynamic batch, one loop iteration per batch entry, the
// reductions and the division fused into one kernel per row tile. Checks against a double
// reference and exits 1 beyond 1e-6.
#include <pypto/pypto.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

using namespace pypto;

void SoftmaxCompute(Tensor& input, Tensor& output) {
  SymbolicScalar b = GetInputShape(input, 0);
  int n1 = input.GetShape()[1], n2 = input.GetShape()[2], dim = input.GetShape()[3];
  LOOP("L0_bIdx", FunctionType::DYNAMIC_LOOP, bIdx, LoopRange(0, b, 1)) {
    TileShape::Current().SetVecTile({1, 4, 1, 64});
    auto v = View(input, {1, n1, n2, dim}, {bIdx, 0, 0, 0});
    auto e = Exp(Sub(v, Amax(v, -1, true)));
    Assemble(Div(e, Sum(e, -1, true)), {bIdx, 0, 0, 0}, output);
  }
}

int main() {
  try {
    Tensor x(DT_FP32, {DYNAMIC, 4, 8, 100}, "x"), y(DT_FP32, {DYNAMIC, 4, 8, 100}, "y");
    FUNCTION("Softmax", {x}, {y}) { SoftmaxCompute(x, y); }

    std::vector<float> hx(3 * 4 * 8 * 100), hy(hx.size());
    std::mt19937 gen(0);
    std::normal_distribution<float> normal;
    for (auto& v : hx) v = normal(gen);
    Run("Softmax", {HostTensor(hx.data(), DT_FP32, {3, 4, 8, 100})}, {HostTensor(hy.data(), DT_FP32, {3, 4, 8, 100})});

    double worst = 0;
    for (size_t row = 0; row < hx.size() / 100; ++row) {
      const float* in = &hx[row * 100];
      double m = *std::max_element(in, in + 100), s = 0;
      for (int j = 0; j < 100; ++j) s += std::exp(double(in[j]) - m);
      for (int j = 0; j < 100; ++j) worst = std::max(worst, std::abs(hy[row * 100 + j] - std::exp(in[j] - m) / s));
    }
    std::printf("softmax of [3, 4, 8, 100] fp32: max |error| against double = %.3g\n", worst);
    if (!(worst <= 1e-6)) {
      std::printf("FAILED: beyond 1e-6\n");
      return 1;
    }
    std::printf("OK\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
