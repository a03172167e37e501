"""Flash attention at the tensor level: online softmax over blocks of keys, causal or not.

For each block of Bq queries, the keys and values are visited in blocks of Bk. The running
row max m, row sum l and output acc are tensors of the function updated in place, so every
(query block, key block) step works on tiles that stay in cache:

    s     = (q_i @ k_j^T) * scale (+ a causal mask on the diagonal block)   cube, then vector
    m_new = max(m, rowmax(s));  p = exp(s - m_new);  alpha = exp(m - m_new)  vector
    l     = l * alpha + rowsum(p);  acc = acc * alpha + p @ v_j             vector, cube, vector

The causal version starts each query block with its diagonal block (masked) and then visits
the blocks left of it, so no step needs a condition. Run: python examples/flash_attention.py
([16, 2048, 64]) or with --quick ([2, 512, 64], a few seconds).

Each output is checked against a float64 numpy reference with np.allclose(rtol=RTOL=1e-4,
atol=ATOL=1e-5); beyond it the example prints MISMATCH and exits with status 1.
PYPTO_EXAMPLE_PERTURB=1 adds 1.0 to one output element before the check, to show that the
check can fail.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

import pypto

RTOL, ATOL = 1e-4, 1e-5  # the check against the float64 reference
PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")
NEG = -1e30  # the mask value: exp(NEG - m) is 0 for any finite row max m


def causal_mask(block: int) -> np.ndarray:
    """Additive mask of the diagonal block: 0 on and below the diagonal, NEG above it."""
    return np.triu(np.full((block, block), NEG, np.float32), k=1)


def default_blocks(seq: int, causal: bool) -> Tuple[int, int]:
    """(block_q, block_k) when not given. Larger blocks mean fewer launches and fewer rescales
    of the accumulator; a query block of several 128-row tiles shares each loaded key block
    among them. Causal needs block_q == block_k (its diagonal block is masked, so larger blocks
    waste more). Measured on 2 Zen 3 cores against smaller choices (docs/benchmarks.md)."""
    if causal:
        b = 256 if seq % 256 == 0 else 128
        return b, b
    return (512 if seq % 512 == 0 else 256 if seq % 256 == 0 else 128), (256 if seq % 256 == 0 else 128)


def make_attention(bh: int, seq: int, dim: int, causal: bool, block_q: int = 0, block_k: int = 0,
                   vec_rows: int = 0, **jit_kwargs: Any) -> Callable[..., Any]:
    """attention(q, k, v[, mask]) -> out, all [bh, seq, dim] fp32 (mask [block_q, block_k] if
    causal). `block_q`/`block_k`: queries and keys per step (default: `default_blocks`).
    `vec_rows`: rows of the vector and cube tiles (default: up to 128; a query block of several
    tiles shares each loaded key block among them)."""
    dq, dk = default_blocks(seq, causal)
    block_q = block_q or (block_k if causal and block_k else dq)
    block_k = block_k or (block_q if causal else dk)
    vrows = vec_rows or min(block_q, 128)
    if seq % block_q or seq % block_k:
        raise ValueError(f"seq {seq} must be a multiple of the blocks {block_q} and {block_k}")
    if causal and block_q != block_k:
        raise ValueError("the causal version needs block_q == block_k")
    scale = 1.0 / math.sqrt(dim)
    nq, nk = seq // block_q, seq // block_k
    shape = (bh, seq, dim)

    def step(q_i: Any, k_j: Any, v_j: Any, mask: Any, m: Any, l: Any, acc: Any, first: bool) -> None:
        pypto.set_cube_tile_shapes([vrows, vrows], [dim, dim], [block_k, block_k])
        s = pypto.matmul(q_i, k_j, b_trans=True)
        pypto.set_vec_tile_shapes(1, vrows, block_k)
        s = s * scale
        if mask is not None:
            s = s + mask
        row_max = pypto.amax(s, dim=-1, keepdim=True)
        if first:
            m_new = row_max
        else:
            m_new = pypto.maximum(m, row_max)
        p = pypto.exp(s - m_new)
        row_sum = pypto.sum(p, dim=-1, keepdim=True)
        pypto.set_cube_tile_shapes([vrows, vrows], [block_k, block_k], [dim, dim])
        pv = pypto.matmul(p, v_j)
        pypto.set_vec_tile_shapes(1, vrows, dim)
        if first:
            l[:] = row_sum
            acc[:] = pv
        else:
            alpha = pypto.exp(m - m_new)
            l[:] = l * alpha + row_sum
            acc[:] = acc * alpha + pv
        m[:] = m_new

    def body(q: Any, k: Any, v: Any, mask: Any, out: Any) -> None:
        m = pypto.tensor((bh, block_q, 1), pypto.DT_FP32, "row_max")
        l = pypto.tensor((bh, block_q, 1), pypto.DT_FP32, "row_sum")
        acc = pypto.tensor((bh, block_q, dim), pypto.DT_FP32, "acc")
        for i in pypto.loop(nq, name="LOOP_q", idx_name="i"):
            q_i = q[:, i * block_q:(i + 1) * block_q, :]
            if causal:
                # The diagonal block first (it initializes the state), then the blocks left of it.
                k_d = k[:, i * block_k:(i + 1) * block_k, :]
                v_d = v[:, i * block_k:(i + 1) * block_k, :]
                step(q_i, k_d, v_d, mask, m, l, acc, first=True)
                for j in pypto.loop(i, name="LOOP_kv", idx_name="j"):
                    step(q_i, k[:, j * block_k:(j + 1) * block_k, :], v[:, j * block_k:(j + 1) * block_k, :],
                         None, m, l, acc, first=False)
            else:
                step(q_i, k[:, 0:block_k, :], v[:, 0:block_k, :], None, m, l, acc, first=True)
                for j in pypto.loop(1, nk, name="LOOP_kv", idx_name="j"):
                    step(q_i, k[:, j * block_k:(j + 1) * block_k, :], v[:, j * block_k:(j + 1) * block_k, :],
                         None, m, l, acc, first=False)
            pypto.set_vec_tile_shapes(1, vrows, dim)
            pypto.assemble(acc / l, [0, i * block_q, 0], out)

    T = pypto.Tensor
    if causal:
        @pypto.jit(**jit_kwargs)
        def attention_causal(q: T(shape, pypto.DT_FP32), k: T(shape, pypto.DT_FP32), v: T(shape, pypto.DT_FP32),
                             mask: T((block_q, block_k), pypto.DT_FP32), out: T(shape, pypto.DT_FP32)) -> None:
            body(q, k, v, mask, out)
        return attention_causal

    @pypto.jit(**jit_kwargs)
    def attention(q: T(shape, pypto.DT_FP32), k: T(shape, pypto.DT_FP32), v: T(shape, pypto.DT_FP32),
                  out: T(shape, pypto.DT_FP32)) -> None:
        body(q, k, v, None, out)
    return attention


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) / math.sqrt(q.shape[-1])
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), k=1)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v.astype(np.float64)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="flash attention, causal and not, checked against numpy")
    ap.add_argument("--quick", action="store_true", help="small sizes (a few seconds), still checked")
    args = ap.parse_args(argv)
    bh, seq, dim = (2, 512, 64) if args.quick else (16, 2048, 64)
    reps = 3 if args.quick else 5
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((bh, seq, dim)).astype(np.float32) for _ in range(3))
    failed = False
    for causal in (False, True):
        fn = make_attention(bh, seq, dim, causal)
        out = np.zeros_like(q)
        args_ = (q, k, v, causal_mask(default_blocks(seq, causal)[0]), out) if causal else (q, k, v, out)
        fn(*args_)
        got = out.copy()
        if PERTURB:
            got.flat[0] += 1.0
        ref = reference(q, k, v, causal)
        err = np.abs(got - ref).max()
        ok = bool(np.allclose(got, ref, rtol=RTOL, atol=ATOL))
        failed |= not ok
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(*args_)
            times.append(time.perf_counter() - t0)
        ms = sorted(times)[reps // 2] * 1e3
        flops = 4 * bh * seq * seq * dim / (2 if causal else 1)
        print(f"attention causal={causal} [{bh}, {seq}, {dim}]: max error {err:.2e} "
              f"({'OK' if ok else 'MISMATCH'}, rtol {RTOL:g} atol {ATOL:g}), {ms:.1f} ms, "
              f"{flops / ms / 1e6:.1f} GFLOP/s")
    if failed:
        print("flash_attention: FAILED: the output is beyond the tolerance against numpy", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
