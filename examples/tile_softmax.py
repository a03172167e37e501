"""Softmax at the tile level, twice: the seed's five lines (a `pypto.Tile` function, mapped over
row tiles of any 2-D array) and the same in the explicit language (`import pypto.language as
pl`: load a tile, reduce, broadcast, store, in a runtime loop with a valid shape for the tail).

Run: python examples/tile_softmax.py (a [32768, 512] fp32 array, 64 MiB) or --quick
([1000, 512]). Both results are checked against a float64 numpy softmax with
np.allclose(rtol=1e-5, atol=1e-7); beyond it the example prints MISMATCH and exits with status 1
(PYPTO_EXAMPLE_PERTURB=1 shows the check failing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, List, Optional

import numpy as np

import pypto
import pypto.language as pl

PERTURB = os.environ.get("PYPTO_EXAMPLE_PERTURB", "") not in ("", "0")


@pypto.jit
def softmax(x: pypto.Tile) -> pypto.Tile:
    m = pypto.row_max(x)
    e = pypto.exp(x - m)
    return e / pypto.row_sum(e)


TILE_ROWS = 16


@pl.jit
def softmax_pl(x: pl.Tensor[[pypto.DYNAMIC, 512], pl.FP32], out: pl.Out[pl.Tensor[[pypto.DYNAMIC, 512], pl.FP32]]):
    n = x.shape[0]
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range((n + TILE_ROWS - 1) // TILE_ROWS):
            rows = pypto.min(TILE_ROWS, n - i * TILE_ROWS)  # the last tile holds the rows left
            t = pl.load(x, [i * TILE_ROWS, 0], [TILE_ROWS, 512], valid_shape=[rows, 512])
            e = pl.row_expand_expdif(t, pl.row_max(t))
            pl.store(pl.row_expand_div(e, pl.row_sum(e)), [i * TILE_ROWS, 0], out)
    return out


def reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def timed(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[reps // 2] * 1e3


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="tile-level softmax, checked against numpy")
    ap.add_argument("--quick", action="store_true", help="a small array (a few seconds), still checked")
    args = ap.parse_args(argv)
    rows = 1000 if args.quick else 32768
    x = np.random.default_rng(0).standard_normal((rows, 512)).astype(np.float32)
    ref = reference(x)
    out = np.zeros_like(x)
    results = {"pypto.Tile function": lambda: softmax(x), "pypto.language": lambda: softmax_pl(x, out)}
    failed = False
    for name, run in results.items():
        got = np.array(run())
        if PERTURB:
            got.flat[0] += 1.0
        ok = bool(np.allclose(got, ref, rtol=1e-5, atol=1e-7))
        failed |= not ok
        ms = timed(run, 3 if args.quick else 7)
        print(f"{name}: softmax of [{rows}, 512] fp32: max error {np.abs(got - ref).max():.2e} "
              f"({'OK' if ok else 'MISMATCH'}), {ms:.2f} ms, {2 * x.nbytes / ms / 1e6:.1f} GB/s")
    if failed:
        print("tile_softmax: FAILED: a result is beyond the tolerance against numpy", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
