"""Matmul and a feed-forward block on the cube path.

    matmul:  c = a @ b                      fp32, or bf16 in / bf16 out with fp32 accumulation
    ffn:     y = silu(x @ w1) @ w2          two cube kernels and a vector kernel between them

Each matmul runs as cube (AIC) tasks over 256 x 256 output blocks (set_cube_tile_shapes
overrides it); SiLU runs on the vector side. Run: python examples/matmul_ffn.py
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

import pypto


def make_matmul(m: int, k: int, n: int, dtype: pypto.DataType = pypto.DT_FP32, **jit_kwargs: Any) -> Callable[..., Any]:
    @pypto.jit(**jit_kwargs)
    def matmul(a: pypto.Tensor((m, k), dtype), b: pypto.Tensor((k, n), dtype)):
        return pypto.matmul(a, b)
    return matmul


def make_ffn(tokens: int, dim: int, hidden: int, **jit_kwargs: Any) -> Callable[..., Any]:
    @pypto.jit(**jit_kwargs)
    def ffn(x: pypto.Tensor((tokens, dim), pypto.DT_FP32), w1: pypto.Tensor((dim, hidden), pypto.DT_FP32),
            w2: pypto.Tensor((hidden, dim), pypto.DT_FP32)):
        return pypto.matmul(pypto.silu(pypto.matmul(x, w1)), w2)
    return ffn


def ffn_reference(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    h = x.astype(np.float64) @ w1
    return (h / (1 + np.exp(-h))) @ w2


def median_ms(fn: Callable[..., Any], *args: Any, reps: int = 5) -> float:
    fn(*args)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return sorted(times)[reps // 2] * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    n = 2048
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    mm = make_matmul(n, n, n)
    err = np.abs(mm(a, b) - a.astype(np.float64) @ b).max()
    ms = median_ms(mm, a, b)
    print(f"matmul {n}^3 fp32: max error {err:.2e}, {ms:.1f} ms, {2 * n ** 3 / ms / 1e6:.1f} GFLOP/s")

    t, d, h = 2048, 1024, 4096
    x = rng.standard_normal((t, d)).astype(np.float32)
    w1 = (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32)
    w2 = (rng.standard_normal((h, d)) / np.sqrt(h)).astype(np.float32)
    ffn = make_ffn(t, d, h)
    err = np.abs(ffn(x, w1, w2) - ffn_reference(x, w1, w2)).max()
    ms = median_ms(ffn, x, w1, w2)
    print(f"ffn [{t},{d}] x [{d},{h}] x [{h},{d}] fp32: max error {err:.2e}, {ms:.1f} ms, "
          f"{4 * t * d * h / ms / 1e6:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
