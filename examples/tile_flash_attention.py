"""Flash attention at the tile level (`import pypto.language as pl`): QK^T on a cube (AIC)
function, the online softmax on a vector (AIV) function, P.V on the cube again, with the tiles
handed over through the cross-core pipe (pl.tpush_to_aiv / pl.tpop_from_aic and back).

For each (batch-head, block of BQ queries) -- independent tasks of a pl.parallel loop -- the
key/value blocks j are visited in order, and each step is four functions:

    qk_cube         AIC  s = q_i @ k_j^T                               -> push s
    softmax_update  AIV  pop s; m_new = max(m, rowmax(s * scale [+ mask]))
                         p = exp(s - m_new); l = l * exp(m - m_new) + rowsum(p)   -> push p
    pv_cube         AIC  pop p; pv = p @ v_j                            -> push pv
    acc_update      AIV  pop pv; acc = acc * exp(m - m_new) + pv

m, l and acc are global tensors (pl.create_tensor) each task reads and writes in its own rows.
The causal version starts each query block with its (masked) diagonal block and then visits the
blocks left of it. Q, K, V are [batch * heads * seq, dim] fp32 (one 2-D matrix per tensor).

Run: python examples/tile_flash_attention.py [--quick]. Each output is checked against a
float64 numpy reference (np.allclose rtol=1e-4, atol=1e-5); beyond it the example prints
MISMATCH and exits with status 1 (PYPTO_EXAMPLE_PERTURB=1 shows the check failing).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, Callable, List, Optional

import numpy as np

import pypto.language as pl

RTOL, ATOL = 1e-4, 1e-5
PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")
NEG = -1e30  # the mask value: exp(NEG - m) is 0 for any finite row max m


def make_attention(bh: int, seq: int, dim: int, causal: bool, block: int = 128,
                   block_q: int = 0) -> Callable[..., Any]:
    """attention(q, k, v[, mask], out) on [bh * seq, dim] fp32 matrices, out written in place
    (mask [block, block] when causal). Steps take `block_q` queries (default: 256 when not causal
    and seq allows it, else `block`) against `block` keys: larger query blocks mean fewer
    launches and each loaded key block serves more queries."""
    if not block_q:
        block_q = 256 if not causal and seq % 256 == 0 else block
    if causal and block_q != block:
        raise ValueError("the causal version needs block_q == block (its diagonal block is masked)")
    if seq % block or seq % block_q:
        raise ValueError(f"seq {seq} must be a multiple of the blocks {block_q} and {block}")
    nq, nk = seq // block_q, seq // block
    scale = 1.0 / math.sqrt(dim)
    rows = bh * seq

    @pl.jit.incore(level=pl.Level.AIC)
    def qk_cube(q: Any, k: Any, qrow: Any, krow: Any) -> None:
        tq = pl.load(q, [qrow, 0], [block_q, dim], target_memory=pl.MemorySpace.Left)
        tk = pl.load(k, [krow, 0], [block, dim], target_memory=pl.MemorySpace.Right)
        pl.tpush_to_aiv(pl.matmul(tq, tk, b_trans=True), split=0)

    @pl.jit.incore(level=pl.Level.AIV)
    def softmax_update(m: Any, row_sum_t: Any, qrow: Any, mask: Any, first: bool) -> Any:
        s = pl.tpop_from_aic(shape=[block_q, block], dtype=pl.FP32)
        x = pl.muls(s, scale)
        if mask is not None:
            x = pl.add(x, pl.load(mask, [0, 0], [block, block]))
        row_max = pl.row_max(x)
        if first:
            m_new, alpha = row_max, None
            p = pl.row_expand_expdif(x, m_new)
            pl.store(pl.row_sum(p), [qrow, 0], row_sum_t)
        else:
            m_old = pl.load(m, [qrow, 0], [block_q, 1])
            m_new = pl.maximum(m_old, row_max)
            p = pl.row_expand_expdif(x, m_new)
            alpha = pl.exp(pl.sub(m_old, m_new))
            l_old = pl.load(row_sum_t, [qrow, 0], [block_q, 1])
            pl.store(pl.add(pl.mul(l_old, alpha), pl.row_sum(p)), [qrow, 0], row_sum_t)
        pl.store(m_new, [qrow, 0], m)
        pl.tfree_to_aic(s)
        pl.tpush_to_aic(p, split=0)
        return alpha

    @pl.jit.incore(level=pl.Level.AIC)
    def pv_cube(v: Any, krow: Any) -> None:
        p = pl.tpop_from_aiv(shape=[block_q, block], dtype=pl.FP32)
        tv = pl.load(v, [krow, 0], [block, dim], target_memory=pl.MemorySpace.Right)
        pl.tpush_to_aiv(pl.matmul(p, tv), split=0)
        pl.tfree_to_aiv(p)

    @pl.jit.incore(level=pl.Level.AIV)
    def acc_update(acc: Any, qrow: Any, alpha: Any) -> None:
        pv = pl.tpop_from_aic(shape=[block_q, dim], dtype=pl.FP32)
        if alpha is None:
            pl.store(pv, [qrow, 0], acc)
        else:
            pl.store(pl.add(pl.row_expand_mul(pl.load(acc, [qrow, 0], [block_q, dim]), alpha), pv), [qrow, 0], acc)
        pl.tfree_to_aic(pv)

    @pl.jit.incore(level=pl.Level.AIV)
    def finish(acc: Any, row_sum_t: Any, out: Any, qrow: Any) -> None:
        o = pl.row_expand_div(pl.load(acc, [qrow, 0], [block_q, dim]), pl.load(row_sum_t, [qrow, 0], [block_q, 1]))
        pl.store(o, [qrow, 0], out)

    def step(q: Any, k: Any, v: Any, m: Any, row_sum_t: Any, acc: Any, qrow: Any, krow: Any, mask: Any,
             first: bool) -> None:
        qk_cube(q, k, qrow, krow)
        alpha = softmax_update(m, row_sum_t, qrow, mask, first)
        pv_cube(v, krow)
        acc_update(acc, qrow, alpha)

    def body(q: Any, k: Any, v: Any, mask: Any, out: Any) -> None:
        m = pl.create_tensor([rows, 1], dtype=pl.FP32)
        row_sum_t = pl.create_tensor([rows, 1], dtype=pl.FP32)
        acc = pl.create_tensor([rows, dim], dtype=pl.FP32)
        for t in pl.parallel(bh * nq):  # one task chain per (batch-head, query block)
            b, i = t // nq, t % nq
            qrow = b * seq + i * block_q
            if causal:
                step(q, k, v, m, row_sum_t, acc, qrow, qrow, mask, first=True)  # the diagonal block, masked
                for j in pl.range(i):
                    step(q, k, v, m, row_sum_t, acc, qrow, b * seq + j * block, None, first=False)
            else:
                step(q, k, v, m, row_sum_t, acc, qrow, b * seq, None, first=True)
                for j in pl.range(1, nk):
                    step(q, k, v, m, row_sum_t, acc, qrow, b * seq + j * block, None, first=False)
            finish(acc, row_sum_t, out, qrow)

    F = pl.FP32
    if causal:
        @pl.jit
        def tile_attention_causal(q: pl.Tensor[[rows, dim], F], k: pl.Tensor[[rows, dim], F],
                                  v: pl.Tensor[[rows, dim], F], mask: pl.Tensor[[block, block], F],
                                  out: pl.Out[pl.Tensor[[rows, dim], F]]) -> Any:
            body(q, k, v, mask, out)
            return out
        return tile_attention_causal

    @pl.jit
    def tile_attention(q: pl.Tensor[[rows, dim], F], k: pl.Tensor[[rows, dim], F], v: pl.Tensor[[rows, dim], F],
                       out: pl.Out[pl.Tensor[[rows, dim], F]]) -> Any:
        body(q, k, v, None, out)
        return out
    return tile_attention


def causal_mask(block: int) -> np.ndarray:
    return np.triu(np.full((block, block), NEG, np.float32), k=1)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """[bh, seq, dim] float64 attention."""
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) / math.sqrt(q.shape[-1])
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), k=1)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v.astype(np.float64)


def run(bh: int, seq: int, dim: int, causal: bool, reps: int = 3, block: int = 128) -> bool:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((bh, seq, dim)).astype(np.float32) for _ in range(3))
    fn = make_attention(bh, seq, dim, causal, block)
    flat = [x.reshape(bh * seq, dim) for x in (q, k, v)]
    out = np.zeros((bh * seq, dim), np.float32)
    args = (*flat, causal_mask(block), out) if causal else (*flat, out)
    fn(*args)
    got = out.reshape(bh, seq, dim).copy()
    if PERTURB:
        got.flat[0] += 1.0
    ref = reference(q, k, v, causal)
    err = float(np.abs(got - ref).max())
    ok = bool(np.allclose(got, ref, rtol=RTOL, atol=ATOL))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    ms = sorted(times)[reps // 2] * 1e3
    flops = 4 * bh * seq * seq * dim / (2 if causal else 1)
    print(f"tile attention causal={causal} [{bh}, {seq}, {dim}]: max error {err:.2e} "
          f"({'OK' if ok else 'MISMATCH'}, rtol {RTOL:g} atol {ATOL:g}), {ms:.1f} ms, {flops / ms / 1e6:.1f} GFLOP/s")
    return ok


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="tile-level flash attention (AIC + AIV functions), checked against numpy")
    ap.add_argument("--quick", action="store_true", help="small sizes (a few seconds), still checked")
    args = ap.parse_args(argv)
    bh, seq, dim = (2, 512, 64) if args.quick else (16, 2048, 64)
    ok = all([run(bh, seq, dim, causal) for causal in (False, True)])
    if not ok:
        print("tile_flash_attention: FAILED: the output is beyond the tolerance against numpy", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
