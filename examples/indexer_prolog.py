"""A quantized fused operator in the spirit of DeepSeek-V3.2's indexer prolog (seed 001): the
query path of the lightning indexer, W8A8.

    q32   = x_int8 @ w_int8                         int8 x int8 -> int32 on the cube (exact)
    q     = q32 * x_scale[t] * w_scale[n]          dequantize (vector)
    q     = rms_norm(q) * gamma                      per head of `dim` channels
    q     = rope(q[..., :rope_dim]) ++ q[..., rope_dim:]   rotate-half RoPE with cos/sin per token
    q_int8, q_scale = quantize(q)                   symmetric int8 per token and head

One pypto.loop runs the heads; each head is a cube kernel (the int8 matmul) and vector kernels.
Run: python examples/indexer_prolog.py (T=4096 K=1536 H=8 D=128) or with --quick (T=256
K=512 H=2, a few seconds).

The result is checked against a float64 numpy reference: q_scale within rtol 1e-5 (SCALE_RTOL)
and every int8 code within one step of the reference rounded (fp32 against float64: a value
within rounding of a .5 boundary may land one step away), at most 0.1% of them (OFF_BY_ONE).
Otherwise the example prints MISMATCH and exits with status 1. PYPTO_EXAMPLE_PERTURB=1 doubles
one q_scale before the check, to show that the check can fail.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

import pypto

EPS = 1e-6
SCALE_RTOL = 1e-5  # q_scale against the reference
OFF_BY_ONE = 1e-3  # the largest share of int8 codes one step from the reference (none further)
PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")


def make_indexer_prolog(tokens: int, hidden: int, heads: int, dim: int, rope_dim: int,
                        **jit_kwargs: Any) -> Callable[..., Any]:
    """prolog(x, x_scale, w, w_scale, gamma, cos, sin) -> (q_int8 [T, H*D], q_scale [T, H])."""
    T, K, H, D, R = tokens, hidden, heads, dim, rope_dim
    half = R // 2
    Ten = pypto.Tensor

    @pypto.jit(**jit_kwargs)
    def indexer_prolog(x: Ten((T, K), pypto.DT_INT8), x_scale: Ten((T, 1), pypto.DT_FP32),
                       w: Ten((K, H * D), pypto.DT_INT8), w_scale: Ten((1, H * D), pypto.DT_FP32),
                       gamma: Ten((1, D), pypto.DT_FP32), cos: Ten((T, half), pypto.DT_FP32),
                       sin: Ten((T, half), pypto.DT_FP32), q_int8: Ten((T, H * D), pypto.DT_INT8),
                       q_scale: Ten((T, H), pypto.DT_FP32)) -> None:
        normed = pypto.tensor((T, D), pypto.DT_FP32, "normed")
        roped = pypto.tensor((T, D), pypto.DT_FP32, "roped")
        for h in pypto.loop(H, name="LOOP_heads", idx_name="h"):
            # W8A8 matmul of this head's columns, exact in int32.
            pypto.set_cube_tile_shapes([64, 64], [128, 256], [D, D])
            acc = pypto.matmul(x, w[:, h * D:(h + 1) * D])
            # Dequantize, then RMS-normalize over the head dim.
            pypto.set_vec_tile_shapes(32, D)
            q = pypto.cast(acc, pypto.DT_FP32) * x_scale * w_scale[:, h * D:(h + 1) * D]
            normed[:] = pypto.rms_norm(q, gamma, EPS)
            # Rotate-half RoPE on the first rope_dim channels; the rest pass through.
            pypto.set_vec_tile_shapes(32, half)
            x1 = normed[:, 0:half]
            x2 = normed[:, half:R]
            pypto.assemble(x1 * cos - x2 * sin, [0, 0], roped)
            pypto.assemble(x2 * cos + x1 * sin, [0, half], roped)
            pypto.set_vec_tile_shapes(32, D - R)
            pypto.assemble(pypto.mul(normed[:, R:D], 1.0), [0, R], roped)
            # Symmetric int8 quantization per token: scale = max|q| / 127.
            pypto.set_vec_tile_shapes(32, D)
            scale = pypto.maximum(pypto.amax(pypto.abs(roped), dim=-1, keepdim=True), EPS) * (1.0 / 127.0)
            pypto.assemble(pypto.cast(roped / scale, pypto.DT_INT8, pypto.CastMode.CAST_RINT), [0, h * D], q_int8)
            pypto.assemble(scale, [0, h], q_scale)

    return indexer_prolog


def reference(x: np.ndarray, x_scale: np.ndarray, w: np.ndarray, w_scale: np.ndarray, gamma: np.ndarray,
              cos: np.ndarray, sin: np.ndarray, heads: int, dim: int, rope_dim: int) -> Tuple[np.ndarray, np.ndarray]:
    """float64 reference: (q before quantization [T, H*D], scale [T, H]). Vectorized over the
    heads. The int8 matmul runs in float64 (BLAS): every product is below 2^14 in magnitude, so
    the sum is exact while K < 2^39 (numpy's int64 matmul has no BLAS and takes ~100x longer)."""
    T = x.shape[0]
    half = rope_dim // 2
    q = (x.astype(np.float64) @ w.astype(np.float64)) * x_scale * w_scale
    q = q.reshape(T, heads, dim)
    q = q / np.sqrt((q * q).mean(axis=-1, keepdims=True) + EPS) * gamma.reshape(1, 1, dim)
    x1, x2 = q[..., :half], q[..., half:rope_dim]
    c, s = cos[:, None, :], sin[:, None, :]
    r = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s, q[..., rope_dim:]], axis=-1)
    scales = np.maximum(np.abs(r).max(axis=-1), EPS) / 127.0
    return r.reshape(T, heads * dim), scales


def random_inputs(tokens: int, hidden: int, heads: int, dim: int, rope_dim: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(tokens, hidden), dtype=np.int8)
    w = rng.integers(-128, 128, size=(hidden, heads * dim), dtype=np.int8)
    x_scale = rng.uniform(0.001, 0.01, size=(tokens, 1)).astype(np.float32)
    w_scale = rng.uniform(0.001, 0.01, size=(1, heads * dim)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, size=(1, dim)).astype(np.float32)
    angle = rng.uniform(0, 2 * np.pi, size=(tokens, rope_dim // 2))
    return x, x_scale, w, w_scale, gamma, np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def check(q_int8: np.ndarray, q_scale: np.ndarray, ref: np.ndarray, ref_scale: np.ndarray) -> Tuple[bool, str]:
    """(ok, text) of the outputs against the float64 reference (the tolerance in the docstring)."""
    dim = ref.shape[1] // ref_scale.shape[1]
    scale_err = float(np.abs(q_scale / ref_scale - 1).max())
    expect = np.clip(np.rint(ref / np.repeat(ref_scale, dim, axis=1)), -128, 127)
    diff = np.abs(q_int8.astype(np.float64) - expect)
    ok = scale_err <= SCALE_RTOL and diff.max() <= 1 and (diff > 0).mean() <= OFF_BY_ONE
    return ok, (f"q_scale max relative error {scale_err:.1e} (tolerance {SCALE_RTOL:g}); int8 codes: "
                f"{(diff > 0).mean() * 100:.4f}% one step off (tolerance {OFF_BY_ONE * 100:g}%), "
                f"max {diff.max():.0f} step(s) (tolerance 1): {'OK' if ok else 'MISMATCH'}")


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="the W8A8 indexer prolog, checked against numpy")
    ap.add_argument("--quick", action="store_true", help="small sizes (a few seconds), still checked")
    args = ap.parse_args(argv)
    T, K, H, D, R = (256, 512, 2, 128, 64) if args.quick else (4096, 1536, 8, 128, 64)
    inputs = random_inputs(T, K, H, D, R)
    fn = make_indexer_prolog(T, K, H, D, R)
    q_int8 = np.zeros((T, H * D), np.int8)
    q_scale = np.zeros((T, H), np.float32)
    fn(*inputs, q_int8, q_scale)  # the first call traces and compiles
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        fn(*inputs, q_int8, q_scale)
        times.append(time.perf_counter() - t0)
    ms = sorted(times)[2] * 1e3
    t0 = time.perf_counter()
    ref, ref_scale = reference(*inputs, H, D, R)
    ref_ms = (time.perf_counter() - t0) * 1e3
    if PERTURB:
        q_scale[0, 0] *= 2
    ok, text = check(q_int8, q_scale, ref, ref_scale)
    deq = q_int8.astype(np.float64) * np.repeat(q_scale, D, axis=1)
    print(f"max |dequantized - reference| = {np.abs(deq - ref).max():.3e} (one int8 step is ~{ref_scale.max():.3e})")
    print(f"check vs numpy: {text}")
    print(f"indexer prolog T={T} K={K} H={H} D={D}: pypto {ms:.1f} ms (warm call, median of 5), "
          f"int8 matmul {2 * T * K * H * D / ms / 1e6:.1f} GOP/s; numpy float64 reference {ref_ms:.1f} ms")
    if not ok:
        print("indexer_prolog: FAILED: the output is beyond the tolerance against numpy", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
