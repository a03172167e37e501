#!/usr/bin/env python3
"""Compiles CANN PyPTO's C++ operator sources here, unchanged, and checks what they compute.

CANN PyPTO (hicann/pypto) is not part of this repository; point this script at a checkout of it
(a work tree, or a bare git directory such as the search tool's mirror):

    python scripts/run_cann_cpp.py /tmp/cann-pypto

Each source of SOURCES is copied as it is into a temporary CMake project that links
``pypto::cann`` (CANN's header names over PyPTO's C++ API, from the installed package), beside a
driver written here that records a FUNCTION calling the source's operator, runs it on the CPU
and compares it with a plain C++ reference. One line per source, then a count; exit 1 when one
does not build or does not match.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

OPERATORS = "framework/src/operator"
SOURCES = ["normalization/soft_max.cpp", "normalization/rms_norm.cpp", "activation/sigmoid.cpp"]

# The driver: one check per source, each its own FUNCTION, run and compared here.
DRIVER = r"""
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "tilefwk/tilefwk.h"

namespace npu::tile_fwk {
void SoftmaxDynamic(Tensor& input, Tensor& output);
Tensor RmsNorm(const Tensor& operand, const Tensor& gamma, float epsilon);
Tensor Sigmoid(Tensor& input);
}  // namespace npu::tile_fwk

using namespace npu::tile_fwk;

static std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

static int Report(const char* name, double err, double tol) {
  bool ok = err <= tol;
  std::printf("%s %s max error %.3g (tolerance %.1g)\n", ok ? "OK  " : "FAIL", name, err, tol);
  return ok ? 0 : 1;
}

static int CheckSoftmax() {
  Tensor x(DT_FP32, {DYNAMIC, 4, 8, 64}, "x"), y(DT_FP32, {DYNAMIC, 4, 8, 64}, "y");
  SoftmaxDynamic(x, y);  // records SOFTMAX_DYNAMIC_EXAMPLE
  int64_t b = 3;
  auto hx = Random(b * 4 * 8 * 64, 1);
  std::vector<float> hy(hx.size(), -1);
  pypto::Run("SOFTMAX_DYNAMIC_EXAMPLE", {HostTensor(hx.data(), DT_FP32, {b, 4, 8, 64})},
             {HostTensor(hy.data(), DT_FP32, {b, 4, 8, 64})});
  double err = 0;
  for (size_t r = 0; r < hx.size() / 64; ++r) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 64; ++j) m = std::max(m, double(hx[r * 64 + j]));
    for (int j = 0; j < 64; ++j) s += std::exp(hx[r * 64 + j] - m);
    for (int j = 0; j < 64; ++j) err = std::max(err, std::abs(hy[r * 64 + j] - std::exp(hx[r * 64 + j] - m) / s));
  }
  return Report("soft_max.cpp  SoftmaxDynamic [3, 4, 8, 64]", err, 1e-6);
}

static int CheckRmsNorm() {
  Tensor x(DT_FP32, {16, 128}, "x"), g(DT_FP32, {128}, "g"), y(DT_FP32, {16, 128}, "y");
  FUNCTION("RMS_NORM_CHECK", {x, g}, {y}) {
    TileShape::Current().SetVecTile({8, 128});
    y = RmsNorm(x, g, 1e-6f);
  }
  auto hx = Random(16 * 128, 2), hg = Random(128, 3);
  std::vector<float> hy(hx.size(), -1);
  pypto::Run("RMS_NORM_CHECK", {HostTensor(hx.data(), DT_FP32, {16, 128}), HostTensor(hg.data(), DT_FP32, {128})},
             {HostTensor(hy.data(), DT_FP32, {16, 128})});
  double err = 0;
  for (int i = 0; i < 16; ++i) {
    double ms = 0;
    for (int j = 0; j < 128; ++j) ms += double(hx[i * 128 + j]) * hx[i * 128 + j] / 128;
    for (int j = 0; j < 128; ++j)
      err = std::max(err, std::abs(hy[i * 128 + j] - hg[j] * hx[i * 128 + j] / std::sqrt(ms + 1e-6)) /
                              (1 + std::abs(hg[j] * hx[i * 128 + j])));
  }
  return Report("rms_norm.cpp  RmsNorm(x, gamma, eps) [16, 128]", err, 1e-5);
}

static int CheckSigmoid() {
  Tensor x(DT_FP32, {32, 64}, "x"), y(DT_FP32, {32, 64}, "y");
  FUNCTION("SIGMOID_CHECK", {x}, {y}) {
    TileShape::Current().SetVecTile({16, 64});
    Tensor in = x;
    y = Sigmoid(in);
  }
  auto hx = Random(32 * 64, 4);
  std::vector<float> hy(hx.size(), -1);
  pypto::Run("SIGMOID_CHECK", {HostTensor(hx.data(), DT_FP32, {32, 64})}, {HostTensor(hy.data(), DT_FP32, {32, 64})});
  double err = 0;
  for (size_t i = 0; i < hx.size(); ++i) err = std::max(err, std::abs(hy[i] - 1 / (1 + std::exp(-double(hx[i])))));
  return Report("sigmoid.cpp   Sigmoid [32, 64]", err, 1e-6);
}

int main(int argc, char** argv) {
  std::string only = argc > 1 ? argv[1] : "";
  int bad = 0;
  if (only.empty() || only == "soft_max.cpp") bad += CheckSoftmax();
  if (only.empty() || only == "rms_norm.cpp") bad += CheckRmsNorm();
  if (only.empty() || only == "sigmoid.cpp") bad += CheckSigmoid();
  return bad ? 1 : 0;
}
"""

CMAKE = """cmake_minimum_required(VERSION 3.20)
project(cann_sources LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(pypto CONFIG REQUIRED)
add_executable(cann_check driver.cpp {sources})
target_link_libraries(cann_check PRIVATE pypto::cann)
"""


def read_source(checkout: Path, rel: str) -> str:
    path = checkout / OPERATORS / rel
    if path.is_file():
        return path.read_text()
    out = subprocess.run(["git", "-C", str(checkout), "show", f"HEAD:{OPERATORS}/{rel}"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"{rel}: not in {checkout} ({OPERATORS}/{rel}), nor in its git HEAD")
    return out.stdout


def pypto_cmake_dir() -> str:
    out = subprocess.run([sys.executable, "-m", "pypto", "--cmake-dir"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def build(work: Path, sources: Dict[str, str]) -> Tuple[bool, str]:
    for name, text in sources.items():
        (work / name).write_text(text)  # unchanged
    (work / "driver.cpp").write_text(DRIVER)
    (work / "CMakeLists.txt").write_text(CMAKE.format(sources=" ".join(sources)))
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    cfg = subprocess.run(["cmake", "-S", str(work), "-B", str(work / "build"), *gen, f"-Dpypto_DIR={pypto_cmake_dir()}",
                          "-DCMAKE_BUILD_TYPE=Release"], capture_output=True, text=True)
    if cfg.returncode != 0:
        return False, cfg.stdout + cfg.stderr
    b = subprocess.run(["cmake", "--build", str(work / "build")], capture_output=True, text=True)
    return b.returncode == 0, b.stdout + b.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkout", type=Path, help="a checkout of hicann/pypto (work tree or bare git dir)")
    args = ap.parse_args()
    sources = {Path(rel).name: read_source(args.checkout, rel) for rel in SOURCES}
    results: List[Tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="cann-cpp-") as tmp:
        ok, log = build(Path(tmp), sources)
        if not ok:
            print(log[-4000:])
            print(f"\n0/{len(SOURCES)} built: the sources above did not compile")
            return 1
        exe = Path(tmp) / "build" / "cann_check"
        for name in sources:
            run = subprocess.run([str(exe), name], capture_output=True, text=True, timeout=600)
            line = (run.stdout.strip().splitlines() or [run.stderr.strip()[-300:]])[-1]
            results.append((name, line if run.returncode == 0 else f"FAIL {line}"))
    for name, line in results:
        print(f"{name:16s} {line}")
    passed = sum(1 for _, line in results if not line.startswith("FAIL"))
    print(f"\n{passed}/{len(SOURCES)} CANN sources compiled unchanged and match their references")
    return 0 if passed == len(SOURCES) else 1


if __name__ == "__main__":
    sys.exit(main())
