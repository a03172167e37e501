"""pypto.memory_stats(): pypto's own host memory (outputs, created tensors, workspaces, the reuse
pool, the frontend's dense copies), apart from the caller's."""

from typing import Any, Tuple

import numpy as np
import pytest

import pypto

R, C = 1024, 1024  # 4 MiB of fp32: a multiple of the 2 MiB blocks large tensors are rounded to
MIB4 = R * C * 4


@pytest.fixture(autouse=True)
def _one_worker():
    with pypto.options(runtime_options={"workers": 1, "run_mode": "cpu"}):
        yield


def _call_peak(fn: Any, *args: Any) -> Tuple[int, Any]:
    """(the most pypto held in use during one warm call above what was live before it, the result)."""
    del_me = fn(*args)  # compile and warm the pool
    del del_me
    base = pypto.reset_peak_memory().live
    out = fn(*args)
    return pypto.memory_stats().peak - base, out


def test_stats_are_typed_and_consistent():
    s = pypto.memory_stats()
    assert isinstance(s, pypto.MemoryStats)
    assert s.held == s.live + s.pooled
    assert s.peak >= s.live and s.peak_held >= s.held
    assert set(s.as_dict()) == {"live", "peak", "pooled", "held", "peak_held", "allocs", "reuses"}


def test_a_fused_call_holds_its_output_only():
    @pypto.jit
    def f(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(64, C)
        return pypto.exp(x) * 2.0 + 1.0

    x = np.random.default_rng(0).standard_normal((R, C)).astype(np.float32)
    peak, out = _call_peak(f, x)
    assert f.last.program.num_kernels == 1
    assert peak == out.nbytes == MIB4
    # The output is pypto's until the caller drops it; then its block goes to the pool.
    live = pypto.memory_stats().live
    del out
    s = pypto.memory_stats()
    assert s.live == live - MIB4 and s.pooled >= MIB4


def test_an_intermediate_between_kernels_is_counted():
    # exp then a transpose in tiles of another shape: two kernels and a workspace between them.
    @pypto.jit
    def g(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((C, R), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(64, 256)
        return pypto.transpose(pypto.exp(x), 0, 1) + 1.0

    x = np.random.default_rng(1).standard_normal((R, C)).astype(np.float32)
    peak, out = _call_peak(g, x)
    assert g.last.program.num_kernels == 2
    assert peak == out.nbytes + MIB4  # the output and the exp(x) it is made from
    np.testing.assert_allclose(out, np.exp(x).T + 1.0, rtol=1e-5)


def test_the_pool_serves_the_next_call_and_release_empties_it():
    @pypto.jit
    def h(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(64, C)
        return x + 1.0

    x = np.zeros((R, C), np.float32)
    del_me = h(x)
    del del_me
    before = pypto.memory_stats()
    assert before.pooled >= MIB4
    out = h(x)
    after = pypto.memory_stats()
    assert after.allocs == before.allocs  # no block from the system: the pool's
    assert after.reuses == before.reuses + 1
    assert after.held == before.held  # reuse moves a block from pooled to live
    del out
    released = pypto.release_memory()
    s = pypto.memory_stats()
    assert released >= MIB4 and s.pooled == 0 and s.held == s.live


def test_reset_starts_a_new_peak():
    @pypto.jit
    def k(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(64, C)
        return x * 3.0

    x = np.ones((R, C), np.float32)
    out = k(x)
    del out
    before = pypto.reset_peak_memory()
    s = pypto.memory_stats()
    assert before.peak >= MIB4
    assert s.peak == s.live and s.peak_held == s.held


def test_a_dense_copy_of_a_strided_argument_is_counted_while_the_call_runs():
    # A reshaped parameter passed as a strided slice runs on a dense copy (frontends/jit.py).
    @pypto.jit
    def r(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R * C,), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(R * C // 16)
        return pypto.reshape(x, [R * C]) + 1.0

    big = np.zeros((R, 2 * C), np.float32)
    x = big[:, :C]
    assert not x.flags.c_contiguous
    peak, out = _call_peak(r, x)
    assert peak >= out.nbytes + x.nbytes
    base = pypto.memory_stats().live
    del out
    assert pypto.memory_stats().live == base - MIB4  # the copy is no longer counted


def test_a_string_return_annotation_allocates_nothing_more(tmp_path, monkeypatch):
    # Under `from __future__ import annotations` the return annotation is a string; evaluated
    # while tracing, its pypto.Tensor(shape, dtype) was a created tensor every call allocated.
    (tmp_path / "future_kernel.py").write_text(
        "from __future__ import annotations\n"
        "import pypto\n"
        f"R, C = {R}, {C}\n\n"
        "@pypto.jit\n"
        "def s(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):\n"
        "    pypto.set_vec_tile_shapes(64, C)\n"
        "    return x + 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import future_kernel  # type: ignore[import-not-found]

    x = np.ones((R, C), np.float32)
    peak, out = _call_peak(future_kernel.s, x)
    assert peak == out.nbytes
    assert "tensor %" not in future_kernel.s.last.program.tensor_graph()
    np.testing.assert_array_equal(out, x + 1.0)


def test_a_strided_cache_reshaped_in_place_is_not_copied():
    # A KV cache with its last dim cut (kv_cache[..., :512] of a 576-wide cache), reshaped to
    # [blocks * block_size, 512] as scatter_update does: a view of the caller's memory, no copy.
    B, S, D, F = 64, 128, 512, 576

    @pypto.jit
    def rd(c: pypto.Tensor((B, S, 1, D), pypto.DT_FP32)) -> pypto.Tensor((B * S, D), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(64, D)
        return pypto.reshape(c, [B * S, D]) * 2.0

    c = np.random.default_rng(3).random((B, S, 1, F), dtype=np.float32)[..., :D]
    peak, out = _call_peak(rd, c)
    assert _replayed(rd)  # (the plan keys on the strides: the view's are the cache's)
    assert peak == out.nbytes
    np.testing.assert_array_equal(out, c.reshape(B * S, D) * 2)


def test_a_strided_argument_reshaped_across_its_cut_is_still_copied():
    # [B, S, D] of a [B, S, F] cache reshaped to [B, S * D] merges the cut dim with the one before
    # it: no strides give that, so the frontend stages a dense copy (and the answer is right).
    B, S, D, F = 8, 64, 32, 48

    @pypto.jit
    def rd(c: pypto.Tensor((B, S, D), pypto.DT_FP32)) -> pypto.Tensor((B, S * D), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(8, S * D)
        return pypto.reshape(c, [B, S * D]) + 1.0

    c = np.random.default_rng(4).random((B, S, F), dtype=np.float32)[..., :D]
    for _ in range(2):  # warm calls of a dense array: the next may skip to the run, not past the copy
        np.testing.assert_array_equal(rd(np.ascontiguousarray(c)), c.reshape(B, S * D) + 1)
    peak, out = _call_peak(rd, c)
    assert peak >= out.nbytes + c.nbytes
    np.testing.assert_array_equal(out, c.reshape(B, S * D) + 1)


def _blocks_handed_out(fn: Any, *args: Any) -> int:
    """The blocks pypto hands out (from the system or its pool) during one call."""
    before = pypto.memory_stats()
    fn(*args)
    after = pypto.memory_stats()
    return after.allocs + after.reuses - before.allocs - before.reuses


def _replayed(fn: Any) -> bool:
    """The last call replayed a call plan (tests/python/test_call_plans.py)."""
    return fn.last_stats["control_ms"] == 0.0


@pytest.mark.parametrize("workers", [1, 2])
def test_a_workspace_growing_every_iteration_takes_log_many_buffers(workers: int):
    # exp of the first (i + 1) * 128 columns, then transposed in tiles of another shape: two
    # workspaces whose extent grows at every iteration. Each slot's buffer is reused while it
    # holds the extent and grows by doubling: 2 workspaces x 2 slots x (log2(32) + 1) buffers
    # at most, not one per iteration (65 before, 33 MiB held for a largest extent of 1 MiB).
    Rw, N, BLK = 64, 32, 128

    @pypto.jit
    def grow(x: pypto.Tensor((Rw, N * BLK), pypto.DT_FP32), out: pypto.Tensor((N, Rw), pypto.DT_FP32)) -> None:
        pypto.set_vec_tile_shapes(64, 128)
        for i in pypto.loop(N, name="LOOP_i", idx_name="i"):
            e = pypto.exp(x[:, 0:(i + 1) * BLK])
            out[i:i + 1, :] = pypto.sum(pypto.transpose(e, 0, 1), dim=0, keepdim=True)

    x = (np.random.default_rng(5).standard_normal((Rw, N * BLK)) * 0.1).astype(np.float32)
    ref = np.stack([np.exp(x[:, :(i + 1) * BLK].astype(np.float64)).sum(1) for i in range(N)])
    largest = Rw * N * BLK * 4
    with pypto.options(runtime_options={"workers": workers}):
        for call in range(2):  # the second call replays the first one's plan and allocations
            out = np.full((N, Rw), np.nan, np.float32)
            base = pypto.reset_peak_memory().live
            blocks = _blocks_handed_out(grow, x, out)
            peak = pypto.memory_stats().peak - base
            assert grow.last.program.num_kernels >= 2
            assert _replayed(grow) == (call > 0)
            assert blocks <= 2 * 2 * 6 + 2, blocks
            assert peak <= 12 * largest, peak  # (each slot: its buffers sum to < 4x the largest)
            np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_an_unused_created_tensor_is_not_allocated():
    # `pypto.Tensor(shape, dtype)` in the body, never written, read or returned: it stays in the
    # graph, but no call (walked or replayed) allocates and zeroes it.
    @pypto.jit
    def f(x: pypto.Tensor((R, C), pypto.DT_FP32)) -> pypto.Tensor((R, C), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(64, C)
        pypto.Tensor((R, C), pypto.DT_FP32)
        return x + 1.0

    x = np.ones((R, C), np.float32)
    peak, out = _call_peak(f, x)
    assert "tensor %" in f.last.program.tensor_graph()
    assert _replayed(f)
    assert peak == out.nbytes
    np.testing.assert_array_equal(out, x + 1.0)
