"""A runtime loop whose body is one launch runs as batches of iterations (CallState::Batch in
src/runtime/walk.cpp): runs of consecutive iterations whose windows do not conflict become one
instance, so `last_stats["launches"]` counts batches. Iterations that do conflict (a running
sum, an in-place update of the same rows) start a new batch, so they still run in order.
Checked against numpy, in both run modes (the interpreter never batches), on 1-3 workers, with
tails, a cube kernel, empty iterations and the swimlane (which keeps every launch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pypto
import pypto.language as pl
from _util import MODES, rng, run_in

F32 = pypto.DT_FP32
T = pypto.Tensor


def _pl_scale_rows(rows: int, cols: int, tile: int) -> Any:
    """out = exp(x) * 2 + 1, one pl.range iteration per `tile` rows."""
    n = -(-rows // tile)

    @pl.jit
    def scale_rows(x: pl.Tensor[[rows, cols], pl.FP32], out: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]) -> Any:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(n):
                t = pl.load(x, [i * tile, 0], [tile, cols])
                pl.store(pl.adds(pl.muls(pl.exp(t), 2.0), 1.0), [i * tile, 0], out)
        return out
    return scale_rows


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("rows,cols,tile", [(256, 64, 8), (104, 37, 8), (2048, 16, 4)])
def test_independent_iterations_run_as_batches(mode: str, workers: int, rows: int, cols: int, tile: int) -> None:
    f = _pl_scale_rows(rows, cols, tile)
    f.group_options["runtime"]["workers"] = workers
    x = rng(1).standard_normal((rows, cols)).astype(np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    run_in(mode, f, x, out)
    np.testing.assert_allclose(out, np.exp(x) * np.float32(2) + np.float32(1), rtol=2e-6)
    iterations = -(-rows // tile)
    launches = f.last_stats["launches"]
    if mode == "interp":
        assert launches == iterations
    else:
        # Batches of 8, 16, 32, then 64 iterations (a tail iteration has the same grid).
        assert launches < iterations and launches >= -(-iterations // 64), (launches, iterations)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_running_sum_keeps_one_launch_per_iteration(workers: int) -> None:
    # Every iteration reads and rewrites the same accumulator: no two iterations can share a batch.
    rows, cols, steps = 16, 32, 12

    @pypto.jit(runtime_options={"workers": workers})
    def running(x: T((steps, rows, cols), F32), acc: T((rows, cols), F32)) -> None:
        pypto.set_vec_tile_shapes(1, 8, cols)
        for s in pypto.loop(steps, name="LOOP_s", idx_name="s"):
            acc[:] = acc * 0.5 + x[s]

    x = rng(2).standard_normal((steps, rows, cols)).astype(np.float32)
    acc = np.zeros((rows, cols), np.float32)
    want = np.zeros((rows, cols), np.float32)
    for s in range(steps):
        want = want * np.float32(0.5) + x[s]
    running(x, acc)
    np.testing.assert_allclose(acc, want, rtol=1e-6)
    assert running.last_stats["launches"] == steps


def test_iterations_that_conflict_now_and_then_split_the_batch() -> None:
    # Iteration i writes rows (i % 4) * 8 ...: every 4th iteration rewrites rows an earlier one
    # of its batch wrote (and the last write must win), so batches are at most 4 iterations.
    rows, cols, steps = 32, 16, 10

    @pypto.jit
    def wrap(x: T((steps * 8, cols), F32), out: T((rows, cols), F32)) -> None:
        pypto.set_vec_tile_shapes(8, cols)
        for i in pypto.loop(steps, name="LOOP_i", idx_name="i"):
            out[(i % 4) * 8:(i % 4) * 8 + 8, :] = x[i * 8:i * 8 + 8, :] + 1.0

    x = rng(3).standard_normal((steps * 8, cols)).astype(np.float32)
    out = np.zeros((rows, cols), np.float32)
    want = np.zeros_like(out)
    for i in range(steps):
        want[(i % 4) * 8:(i % 4) * 8 + 8] = x[i * 8:i * 8 + 8] + np.float32(1)
    wrap(x, out)
    np.testing.assert_array_equal(out, want)
    assert wrap.last_stats["launches"] == 3  # iterations 0-3, 4-7, 8-9


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cube_kernel_in_a_batch(workers: int) -> None:
    # One matmul per row block of A (the cube kernel's shared packings are one launch's: a batch
    # runs without them).
    m, k, n, blk = 96, 48, 40, 16

    @pypto.jit(runtime_options={"workers": workers})
    def blocks(a: T((m, k), F32), b: T((k, n), F32), c: T((m, n), F32)) -> None:
        pypto.set_cube_tile_shapes([16, 16], [48, 48], [40, 40])
        for i in pypto.loop(m // blk, name="LOOP_i", idx_name="i"):
            c[i * blk:(i + 1) * blk, :] = pypto.matmul(a[i * blk:(i + 1) * blk, :], b)

    r = rng(4)
    a, b = (r.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
    c = np.zeros((m, n), np.float32)
    blocks(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_iterations_past_the_end_write_nothing() -> None:
    # CANN's tail semantics: a window past the end is empty (valid extent max(n - offset, 0)), so
    # those iterations have no grid points; they end the batch and run as nothing.
    rows, cols, tile = 64, 16, 8

    @pypto.jit
    def over(x: T((rows, cols), F32), n: T((1,), pypto.DT_INT32), out: T((rows, cols), F32)) -> None:
        pypto.set_vec_tile_shapes(tile, cols)
        for i in pypto.loop(n[0], name="LOOP_i", idx_name="i"):
            out[i * tile:(i + 1) * tile, :] = x[i * tile:(i + 1) * tile, :] * 3.0

    x = rng(6).standard_normal((rows, cols)).astype(np.float32)
    for n in (rows // tile, rows // tile + 3):
        out = np.zeros_like(x)
        over(x, np.array([n], np.int32), out)
        np.testing.assert_array_equal(out, x * np.float32(3))
        assert over.last_stats["launches"] == 1 + (n - rows // tile), n  # one batch, then each empty one


def test_the_swimlane_shows_every_launch(tmp_path: Path) -> None:
    f = _pl_scale_rows(128, 32, 8)
    f.group_options["debug"].update(dump_dir=str(tmp_path), swimlane=True)
    x = rng(5).standard_normal((128, 32)).astype(np.float32)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.exp(x) * np.float32(2) + np.float32(1), rtol=2e-6)
    assert f.last_stats["launches"] == 16
