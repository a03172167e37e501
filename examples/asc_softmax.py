"""Row softmax as a PyAsc-style element-level kernel (`import pypto.asc as asc`), double
buffered with TQue: one row per step, copied in on MTE2, reduced and normalized on V (the row
max and sum read back by the scalar unit after a V_S event), copied out on MTE3. The queues
synchronize the pipes by themselves; the kernel runs clean in checked mode.

Run: python examples/asc_softmax.py [--quick]. The result is checked against a float64 numpy
softmax (np.allclose rtol=1e-5, atol=1e-7); beyond it the example prints MISMATCH and exits 1
(PYPTO_EXAMPLE_PERTURB=1 shows the check failing). It also runs the kernel once with
asc.check and exits 1 if the checked mode reports anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional

import numpy as np

import pypto.asc as asc

BUFFER_NUM = 2
PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")


@asc.jit
def softmax_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, rows_per_block: int, cols: asc.ConstExpr[int]):
    row0 = asc.get_block_idx() * rows_per_block
    x_gm = asc.GlobalTensor()
    z_gm = asc.GlobalTensor()
    x_gm.set_global_buffer(x + row0 * cols, rows_per_block * cols)
    z_gm.set_global_buffer(z + row0 * cols, rows_per_block * cols)
    pipe = asc.TPipe()
    in_q = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    out_q = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    work = asc.TBuf(asc.TPosition.VECCALC)
    stat = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(in_q, BUFFER_NUM, cols * x.dtype.sizeof())
    pipe.init_buffer(out_q, BUFFER_NUM, cols * x.dtype.sizeof())
    pipe.init_buffer(work, cols * x.dtype.sizeof())
    pipe.init_buffer(stat, 64)
    for r in range(rows_per_block):
        copy_in(r, x_gm, in_q, cols)
        compute(in_q, out_q, work, stat, cols)
        copy_out(r, z_gm, out_q, cols)


@asc.jit
def copy_in(r: int, x_gm: asc.GlobalTensor, in_q: asc.TQue, cols: int):
    x_local = in_q.alloc_tensor(x_gm.dtype)
    asc.data_copy(x_local, x_gm[r * cols:], cols)
    in_q.enque(x_local)


@asc.jit
def compute(in_q: asc.TQue, out_q: asc.TQue, work: asc.TBuf, stat: asc.TBuf, cols: int):
    x_local = in_q.deque(asc.float32)
    z_local = out_q.alloc_tensor(asc.float32)
    tmp = work.get(asc.float32)
    s = stat.get(asc.float32)
    asc.reduce_max(s, x_local, tmp, cols)
    asc.set_flag(asc.HardEvent.V_S, 0)  # the scalar unit reads the max that V wrote
    asc.wait_flag(asc.HardEvent.V_S, 0)
    row_max = s.get_value(0)
    asc.adds(z_local, x_local, -row_max, cols)
    asc.exp(z_local, z_local, cols)
    asc.reduce_sum(s, z_local, tmp, cols)
    asc.set_flag(asc.HardEvent.V_S, 0)
    asc.wait_flag(asc.HardEvent.V_S, 0)
    row_sum = s.get_value(0)
    asc.muls(z_local, z_local, 1.0 / row_sum, cols)
    out_q.enque(z_local)
    in_q.free_tensor(x_local)


@asc.jit
def copy_out(r: int, z_gm: asc.GlobalTensor, out_q: asc.TQue, cols: int):
    z_local = out_q.deque(asc.float32)
    asc.data_copy(z_gm[r * cols:], z_local, cols)
    out_q.free_tensor(z_local)


def reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="PyAsc-style softmax kernel with TQue, checked against numpy")
    ap.add_argument("--quick", action="store_true", help="a small input (a second), still checked")
    args = ap.parse_args(argv)
    blocks, rows, cols = (4, 32, 256) if args.quick else (8, 1024, 1024)
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    z = np.zeros_like(x)
    softmax_kernel[blocks](x, z, rows // blocks, cols)
    got = z.copy()
    if PERTURB:
        got.flat[0] += 1.0
    ok = bool(np.allclose(got, reference(x), rtol=1e-5, atol=1e-7))
    report = asc.check(softmax_kernel[blocks], x, z, rows // blocks, cols)
    t0 = time.perf_counter()
    softmax_kernel[blocks](x, z, rows // blocks, cols)
    ms = (time.perf_counter() - t0) * 1e3
    print(f"asc softmax [{rows}, {cols}] on {blocks} blocks: max error {np.abs(got - reference(x)).max():.2e} "
          f"({'OK' if ok else 'MISMATCH'}), {ms:.1f} ms; checked mode: {report}")
    if not ok or not report.clean:
        print("asc_softmax: FAILED", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
