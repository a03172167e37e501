"""Matmul and a feed-forward block on the cube path.

    matmul:  c = a @ b                      fp32, or bf16 in / bf16 out with fp32 accumulation
    ffn:     y = silu(x @ w1) @ w2          two cube kernels and a vector kernel between them

Each matmul runs as cube (AIC) tasks over 256 x 256 output blocks (set_cube_tile_shapes
overrides it); SiLU runs on the vector side. Run: python examples/matmul_ffn.py
(2048^3 matmul, FFN [2048, 1024] x [1024, 4096] x [4096, 1024]) or with --quick (small sizes,
a few seconds).

Each result is checked against a float64 numpy reference: the max absolute error must be at
most 1e-5 x the largest |reference| (TOL; fp32 inputs, fp32 accumulation). Beyond it the
example prints MISMATCH and exits with status 1. PYPTO_EXAMPLE_PERTURB=1 adds 1.0 to one
output element before the check, to show that the check can fail.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

import pypto

TOL = 1e-5  # max |error| <= TOL * max |reference|
PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")


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


def check(out: np.ndarray, ref: np.ndarray) -> Tuple[bool, str]:
    """(ok, text): the max error against the float64 reference and the tolerance."""
    if PERTURB:
        out = out.copy()
        out.flat[0] += 1.0
    err, bound = float(np.abs(out - ref).max()), TOL * float(np.abs(ref).max())
    ok = err <= bound  # False for NaN
    return ok, f"max error {err:.2e} ({'OK' if ok else 'MISMATCH'}, tolerance {bound:.2e})"


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="matmul and FFN on the cube path, checked against numpy")
    ap.add_argument("--quick", action="store_true", help="small sizes (a few seconds), still checked")
    args = ap.parse_args(argv)
    reps = 3 if args.quick else 5
    rng = np.random.default_rng(0)
    n = 256 if args.quick else 2048
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    mm = make_matmul(n, n, n)
    ok1, text = check(mm(a, b), a.astype(np.float64) @ b)
    ms = median_ms(mm, a, b, reps=reps)
    print(f"matmul {n}^3 fp32: {text}, {ms:.1f} ms, {2 * n ** 3 / ms / 1e6:.1f} GFLOP/s")

    t, d, h = (256, 128, 512) if args.quick else (2048, 1024, 4096)
    x = rng.standard_normal((t, d)).astype(np.float32)
    w1 = (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32)
    w2 = (rng.standard_normal((h, d)) / np.sqrt(h)).astype(np.float32)
    ffn = make_ffn(t, d, h)
    ok2, text = check(ffn(x, w1, w2), ffn_reference(x, w1, w2))
    ms = median_ms(ffn, x, w1, w2, reps=reps)
    print(f"ffn [{t},{d}] x [{d},{h}] x [{h},{d}] fp32: {text}, {ms:.1f} ms, "
          f"{4 * t * d * h / ms / 1e6:.1f} GFLOP/s")
    if not (ok1 and ok2):
        print("matmul_ffn: FAILED: an error is beyond the tolerance against numpy", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
