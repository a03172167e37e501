"""A tensor-parallel projection over the ranks of this host: each rank multiplies its slice of the
activations by its slice of the weight, the partial products are summed with an allreduce (in the
rank's function: pld.tensor.allreduce on a window), and every rank adds the residual and applies
RMSNorm to the sum. Ranks are processes of this machine sharing the window (docs/distributed.md).

Run: python examples/distributed_allreduce.py [--ranks 2] [--quick]
Checked against numpy (fp32, np.allclose(rtol=1e-4, atol=1e-4)); beyond it the example prints
MISMATCH and exits with status 1 (PYPTO_EXAMPLE_PERTURB=1 shows the check failing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional

import numpy as np

import pypto
import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")
EPS = 1e-6


@pl.jit
def block(x: pl.Tensor, w: pl.Tensor, residual: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor],
          acc: pld.DistributedTensor[[pypto.STATIC, pypto.STATIC], pl.FP32],
          sig: pld.DistributedTensor[[pypto.STATIC, 1], pl.INT32]):
    """Rank r: out = rmsnorm(residual + sum over ranks of x_r @ w_r) * gamma."""
    acc[:] = pypto.matmul(x, w, pypto.DT_FP32)          # this rank's partial product, in its window
    acc = pld.tensor.allreduce(acc, sig, mode="ring")   # now every rank's window holds the sum
    h = acc + residual
    out[:] = h * pypto.rsqrt(pypto.mean(h * h, -1, keepdim=True) + EPS) * gamma
    return out


@pl.jit.host
def tensor_parallel(x: pl.Tensor, w: pl.Tensor, residual: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor]):
    n = pld.world_size()
    rows, cols = residual.shape
    acc_buf = pld.alloc_window_buffer([rows, cols], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        block(x[r], w[r], residual, gamma, out[r], pld.window(acc_buf, [rows, cols], dtype=pl.FP32),
              pld.window(sig_buf, [n, 1], dtype=pl.INT32), device=r)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds), still checked")
    ap.add_argument("--hosts", type=int, default=None,
                    help="spread the ranks over this many simulated hosts (MPI on loopback; docs/distributed.md)")
    args = ap.parse_args(argv)
    n = args.ranks
    rows, k, cols = (16, 128, 256) if args.quick else (64, 2048, 4096)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, rows, k // n)).astype(np.float32)       # the activations, split along k
    w = (rng.standard_normal((n, k // n, cols)) / np.sqrt(k)).astype(np.float32)
    residual = rng.standard_normal((rows, cols)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, (1, cols)).astype(np.float32)
    out = np.zeros((n, rows, cols), np.float32)
    config = RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), hosts=args.hosts))

    t0 = time.perf_counter()
    tensor_parallel(x, w, residual, gamma, out, config=config)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    tensor_parallel(x, w, residual, gamma, out, config=config)
    again = time.perf_counter() - t0

    h = residual + np.einsum("rmk,rkn->mn", x.astype(np.float64), w.astype(np.float64))
    want = (h / np.sqrt((h * h).mean(-1, keepdims=True) + EPS) * gamma).astype(np.float32)
    if PERTURB:
        out[n - 1, 0, 0] += 1.0
    ok = all(np.allclose(out[r], want, rtol=1e-4, atol=1e-4) for r in range(n))
    print(f"distributed_allreduce: {n} ranks, [{rows}, {k}] @ [{k}, {cols}] split along k, allreduce + rmsnorm "
          f"({'OK' if ok else 'MISMATCH'}); first call {first:.2f} s (ranks start, kernels compile), "
          f"then {again * 1e3:.1f} ms")
    if not ok:
        print("distributed_allreduce: FAILED: a rank's result is beyond the tolerance against numpy", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
