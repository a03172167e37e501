"""Gathers along a dim of run-time size, or too long for UB: the kernel reads the indexed
elements straight from memory (TGATHERND) instead of loading the input whole along the dim.
Paged KV caches (pypto.experimental.gather_in_ub) are the case that needs it."""

import os

import numpy as np
import pytest
import torch

import pypto
import pypto.experimental
from _util import MODES, rng, run_in

F32, I32 = pypto.DT_FP32, pypto.DT_INT32
DYN = pypto.DYNAMIC

DTYPES = {
    "fp32": (pypto.DT_FP32, torch.float32),
    "fp16": (pypto.DT_FP16, torch.float16),
    "bf16": (pypto.DT_BF16, torch.bfloat16),
    "int32": (pypto.DT_INT32, torch.int32),
    "int8": (pypto.DT_INT8, torch.int8),
}


def _values(shape, tdt, seed):
    g = torch.Generator().manual_seed(seed)
    if tdt.is_floating_point:
        return torch.randn(shape, generator=g).to(tdt)
    return torch.randint(-100, 100, shape, generator=g).to(tdt)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_index_select_rows_of_a_dynamic_dim(dtype, mode):
    pdt, tdt = DTYPES[dtype]

    @pypto.jit
    def f(x: pypto.Tensor([DYN, 72], pdt), idx: pypto.Tensor([37], I32), out: pypto.Tensor([37, 72], pdt)):
        pypto.set_vec_tile_shapes(16, 32)  # tails along both dims
        out[:] = pypto.index_select(x, 0, idx)

    for n, seed in ((5, 1), (1000, 2), (70001, 3)):
        x = _values((n, 72), tdt, seed)
        idx = torch.randint(0, n, (37,), generator=torch.Generator().manual_seed(seed), dtype=torch.int32)
        idx[0], idx[-1] = 0, n - 1
        out = torch.zeros(37, 72, dtype=tdt)
        run_in(mode, f, x, idx, out)
        assert torch.equal(out, x[idx.long()]), (dtype, n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_along_each_dim_of_run_time_size(dim, mode):
    shape = [DYN if d == dim else n for d, n in enumerate((6, 10, 20))]

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32), i: pypto.Tensor((4, 9, 13), I32), s: pypto.Tensor((7,), I32)):
        pypto.set_vec_tile_shapes(2, 4, 8)
        return pypto.gather(x, dim, i), pypto.index_select(x, dim, s)

    full = [6, 10, 20]
    full[dim] = 23
    x = rng(3 + dim).standard_normal(full).astype(np.float32)
    i = rng(4).integers(0, full[dim], (4, 9, 13)).astype(np.int32)
    s = rng(5).integers(0, full[dim], (7,)).astype(np.int32)
    g, sel = run_in(mode, f, x, i, s)
    crop = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(i.shape))
    np.testing.assert_array_equal(g, np.take_along_axis(x[crop], i, dim))
    np.testing.assert_array_equal(sel, np.take(x, s, dim))


@pytest.mark.parametrize("mode", MODES)
def test_gather_along_a_static_dim_too_long_for_ub(mode):
    n = 300_000  # 1.2 MB of fp32 per row: no tile holds the dim

    @pypto.jit
    def f(x: pypto.Tensor((3, n), F32), i: pypto.Tensor((3, 50), I32)):
        return pypto.gather(x, 1, i)

    x = rng(6).standard_normal((3, n)).astype(np.float32)
    i = rng(7).integers(0, n, (3, 50)).astype(np.int32)
    np.testing.assert_array_equal(run_in(mode, f, x, i), np.take_along_axis(x, i, 1))


@pytest.mark.parametrize("mode", MODES)
def test_special_values_are_moved_bit_for_bit(mode):
    @pypto.jit
    def f(x: pypto.Tensor([DYN, 8], F32), idx: pypto.Tensor([6], I32)):
        return pypto.index_select(x, 0, idx)

    x = np.array([[np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -3.4028235e38]] * 4, np.float32)
    x[2] = x[2][::-1]
    idx = np.array([2, 0, 3, 2, 1, 2], np.int32)
    got = run_in(mode, f, x, idx)
    np.testing.assert_array_equal(got.view(np.uint32), x[idx].view(np.uint32))


@pytest.mark.parametrize("mode", MODES)
def test_an_index_out_of_the_run_time_extent_raises(mode):
    @pypto.jit
    def f(x: pypto.Tensor([DYN, 16], F32), idx: pypto.Tensor([4], I32)):
        return pypto.index_select(x, 0, idx)

    x = np.zeros((9, 16), np.float32)
    for bad in (9, -1, 2**31 - 1):
        idx = np.array([0, 1, bad, 3], np.int32)
        with pytest.raises(ValueError, match=rf"pypto.gather along dim 0: index {bad} is out of range \[0, 9\)"):
            run_in(mode, f, x, idx)


@pytest.mark.parametrize("mode", MODES)
def test_gather_of_a_view_and_of_a_value_computed_before(mode):
    @pypto.jit
    def f(x: pypto.Tensor([DYN, 32], F32), idx: pypto.Tensor([5], I32), start: int):
        pypto.set_vec_tile_shapes(8, 32)
        window = pypto.view(x, [x.shape[0] - start, 32], [start, 0])
        doubled = pypto.mul(x, 2.0)  # another kernel; the gather waits for it
        return pypto.index_select(window, 0, idx), pypto.index_select(doubled, 0, idx) + 1.0

    x = rng(8).standard_normal((50, 32)).astype(np.float32)
    idx = np.array([0, 44, 7, 7, 12], np.int32)
    a, b = run_in(mode, f, x, idx, 5)
    np.testing.assert_array_equal(a, x[5:][idx])
    np.testing.assert_array_equal(b, x[idx] * 2 + 1)
    with pytest.raises(ValueError, match=r"index 44 is out of range \[0, 40\)"):
        run_in(mode, f, x, idx, 10)


def test_the_block_ir_shows_the_gather_from_memory(tmp_path):
    @pypto.jit
    def f(x: pypto.Tensor([DYN, 32], F32), idx: pypto.Tensor([5], I32)):
        return pypto.index_select(x, 0, idx)

    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True)
    try:
        f(np.ones((8, 32), np.float32), np.zeros(5, np.int32))
    finally:
        pypto.set_debug_options(dump_dir="", dump_passes=False)
    text = ""
    for root, _, files in os.walk(tmp_path):
        for name in files:
            if name.endswith(".txt"):
                text += open(os.path.join(root, name)).read()
    assert "TGATHERND(" in text and "axis=0" in text
    assert "reads %x from memory by index (dim 0 of size" in text


@pytest.mark.parametrize("mode", MODES)
def test_gather_in_ub_reads_the_cache_past_the_view(mode):
    """PyPTO's sparse attention: the cache parameter is a view of [topk, d] at row 0 with
    topk valid rows, but the paged positions address the whole cache after it."""
    block, d, topk = 4, 16, 6

    @pypto.jit
    def f(cache: pypto.Tensor([DYN, d], pypto.DT_BF16), ind: pypto.Tensor([1, 8], I32),
          table: pypto.Tensor([1, 5], I32), out: pypto.Tensor([8, d], pypto.DT_BF16), k: int):
        pypto.set_vec_tile_shapes(8, 16)
        view = pypto.view(cache, [8, d], [0, 0], valid_shape=[k, d])
        sel = pypto.view(ind, [1, 8], [0, 0], valid_shape=[1, k])
        rows = pypto.experimental.gather_in_ub(view, sel, table, block, -2)
        pypto.assemble(rows, [0, 0], out)

    cache = torch.randn(20, d).to(torch.bfloat16)
    ind = torch.tensor([[0, 5, 9, 19, 3, 12, 0, 0]], dtype=torch.int32)
    table = torch.tensor([[4, 0, 2, 1, 3]], dtype=torch.int32)
    out = torch.zeros(8, d, dtype=torch.bfloat16)
    run_in(mode, f, cache, ind, table, out, topk)
    pos = ind[0, :topk].long()
    rows = table[0, pos // block].long() * block + pos % block
    assert torch.equal(out[:topk], cache[rows])
    assert torch.equal(out[topk:], torch.zeros(8 - topk, d, dtype=torch.bfloat16))
