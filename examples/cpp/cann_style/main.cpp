// An operator in CANN PyPTO's C++ style: its headers and namespace, `out = expr` into the
// function's output, an IF / ELSE whose bodies rebind one handle, a dynamic LOOP. It computes,
// per row i of x: y[i] = (i even ? x[i] * 2 : x[i] - 1) + 0.5, and checks itself.
#include <cmath>
#include <cstdio>
#include <random>

#include "tilefwk/tilefwk.h"

using namespace npu::tile_fwk;

namespace npu::tile_fwk {
void RowsCompute(Tensor& x, Tensor& y) {
  SymbolicScalar rows = GetInputShape(x, 0);
  int cols = x.GetShape()[1];
  LOOP("ROWS", FunctionType::DYNAMIC_LOOP, i, LoopRange(0, rows, 1)) {
    TileShape::Current().SetVecTile({1, 64});
    auto r = View(x, {1, cols}, {i, 0});
    IF(i % 2 == 0) { r = Mul(r, Element(DataType::DT_FP32, 2.0)); }
    ELSE { r = Sub(r, Element(DataType::DT_FP32, 1.0)); }
    Assemble(Add(r, Element(DataType::DT_FP32, 0.5)), {i, 0}, y);
  }
}
}  // namespace npu::tile_fwk

int main() {
  try {
    Tensor x(DataType::DT_FP32, {DYNAMIC, 64}, "x"), y(DataType::DT_FP32, {DYNAMIC, 64}, "y");
    FUNCTION("Rows", {x}, {y}) { RowsCompute(x, y); }
    const int64_t n = 7;
    std::vector<float> hx(n * 64), hy(hx.size(), -1.0f);
    std::mt19937 gen(0);
    std::normal_distribution<float> normal;
    for (auto& v : hx) v = normal(gen);
    pypto::Run("Rows", {HostTensor(hx.data(), DT_FP32, {n, 64})}, {HostTensor(hy.data(), DT_FP32, {n, 64})});
    for (int64_t i = 0; i < n; ++i)
      for (int j = 0; j < 64; ++j) {
        float v = hx[i * 64 + j], want = (i % 2 == 0 ? v * 2.0f : v - 1.0f) + 0.5f;
        if (hy[i * 64 + j] != want) {
          std::printf("FAILED: y[%lld][%d] = %g, expected %g\n", static_cast<long long>(i), j, hy[i * 64 + j], want);
          return 1;
        }
      }
    std::printf("rows of [%lld, 64] through IF / ELSE: every element exact\nOK\n", static_cast<long long>(n));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
