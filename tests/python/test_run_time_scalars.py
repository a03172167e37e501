"""Symbolic scalars as operands (a loop index expression taken when the tile runs): elementwise
ops, comparisons, full, tril / triu diagonals; and the in-place idioms of PyPTO's operation tests
that came with them: a contiguous slice reshaped in place, scatter_update into a view, index_put_
with several index tensors and a tile of lower rank, index_add_ / cumsum along a dim whose size
is a view's run-time valid extent, var over every dim with dim=[]."""

import numpy as np
import pytest
import torch

import pypto
from _util import MODES, rng, run_in

F32, I32 = pypto.DT_FP32, pypto.DT_INT32


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [pypto.DT_FP32, pypto.DT_BF16, pypto.DT_INT32, pypto.DT_INT16])
def test_elementwise_with_a_loop_index(mode, dtype):
    @pypto.jit
    def f(x: pypto.Tensor((12, 20), dtype), a: pypto.Tensor((12, 20), dtype), s: pypto.Tensor((12, 20), dtype),
          m: pypto.Tensor((12, 20), dtype), b: pypto.Tensor((12, 20), dtype)):
        pypto.set_vec_tile_shapes(4, 16)
        for i in pypto.loop(3):
            v = pypto.view(x, [4, 20], [i * 4, 0])
            pypto.assemble(v + (i * 3 + 1), [i * 4, 0], a)        # x + s
            pypto.assemble((i * 5 - 7) - v, [i * 4, 0], s)        # s - x (scalar first)
            pypto.assemble(pypto.mul(v, i - 1), [i * 4, 0], m)
            pypto.assemble(pypto.maximum(v, i * 2), [i * 4, 0], b)

    tdt = {pypto.DT_FP32: torch.float32, pypto.DT_BF16: torch.bfloat16, pypto.DT_INT32: torch.int32,
           pypto.DT_INT16: torch.int16}[dtype]
    x = torch.from_numpy(rng(1).uniform(-9, 9, (12, 20)).astype(np.float32)).to(tdt)
    outs = [torch.zeros(12, 20, dtype=tdt) for _ in range(4)]
    run_in(mode, f, x, *outs)
    i = torch.arange(3).repeat_interleave(4)[:, None]
    want = [x + (i * 3 + 1), (i * 5 - 7) - x, x * (i - 1), torch.maximum(x, (i * 2).to(tdt))]
    for got, w in zip(outs, want):
        # torch computes a 16-bit float op with an int tensor in fp32 and rounds once, as pypto
        assert torch.equal(got, w.to(tdt)), (got - w.to(tdt)).abs().max()


@pytest.mark.parametrize("mode", MODES)
def test_compare_and_full_with_a_loop_index(mode):
    @pypto.jit
    def f(x: pypto.Tensor((4, 16), pypto.DT_INT8), c: pypto.Tensor((4, 16), pypto.DT_BOOL),
          g: pypto.Tensor((4, 16), pypto.DT_FP32), fl: pypto.Tensor((4, 16), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 16)
        for i in pypto.loop(4):
            v = pypto.view(x, [1, 16], [i, 0])
            # 100 * i - 150 leaves int8's range for i = 0 and 3: the comparison stays exact
            pypto.assemble(v < i * 100 - 150, [i, 0], c)
            pypto.assemble(pypto.where(v >= i, 1.0, 0.0), [i, 0], g)
            pypto.assemble(pypto.full([1, 16], i * 2 + 1, pypto.DT_FP32), [i, 0], fl)

    x = rng(2).integers(-128, 128, (4, 16)).astype(np.int8)
    c, g, fl = np.zeros((4, 16), bool), np.zeros((4, 16), np.float32), np.zeros((4, 16), np.float32)
    run_in(mode, f, x, c, g, fl)
    i = np.arange(4)[:, None]
    np.testing.assert_array_equal(c, x.astype(np.int64) < i * 100 - 150)
    np.testing.assert_array_equal(g, np.where(x >= i, 1.0, 0.0))
    np.testing.assert_array_equal(fl, np.broadcast_to(i * 2 + 1, (4, 16)).astype(np.float32))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("upper", [True, False])
def test_tri_of_tiles_with_a_symbolic_diagonal(mode, upper):
    """PyPTO's tri test: tril / triu of each [8, 4] view of a [12, 13] matrix, the diagonal moved by
    the view's offsets, tails on both dims."""
    shape, vs = (12, 13), (8, 4)

    @pypto.jit
    def f(x: pypto.Tensor(shape, I32), y: pypto.Tensor(shape, I32)):
        for b in pypto.loop(2):
            for s in pypto.loop(4):
                v = pypto.view(x, list(vs), [b * 8, s * 4],
                               valid_shape=[pypto.min(12 - b * 8, 8), pypto.min(13 - s * 4, 4)])
                pypto.set_vec_tile_shapes(5, 16)
                d = 1 + b * 8 - s * 4 if upper else -1 + b * 8 - s * 4
                r = pypto.triu(v, d) if upper else pypto.tril(v, d)
                pypto.assemble(r, [b * 8, s * 4], y)

    x = rng(3).integers(-10, 10, shape).astype(np.int32)
    y = np.zeros(shape, np.int32)
    run_in(mode, f, x, y)
    np.testing.assert_array_equal(y, np.triu(x, 1) if upper else np.tril(x, -1))


def test_a_symbolic_diagonal_must_be_an_integer():
    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32)):
        return pypto.triu(x, 1.5)

    with pytest.raises(pypto.UserError, match="diagonal must be an int or a symbolic scalar"):
        f(np.zeros((4, 4), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_contiguous_slice_reshaped_in_place(mode):
    @pypto.jit
    def f(x: pypto.Tensor((6, 4, 8), F32)):
        rows = pypto.reshape(x[2:4, :, :], [8, 8])  # 2 whole [4, 8] blocks: a slice of x seen as [24, 8]
        rows[:] = rows * 2.0

    x = rng(4).standard_normal((6, 4, 8)).astype(np.float32)
    want = x.copy()
    want[2:4] *= 2
    run_in(mode, f, x)
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("mode", MODES)
def test_scatter_update_into_a_view_of_unit_dims(mode):
    """PyPTO's scatter_update test: a [1, 1, 1, 8] cache viewed whole (reshaping it drops only unit
    dims, which must still write the cache)."""
    @pypto.jit
    def f(src: pypto.Tensor((1, 1, 1, 8), I32), idx: pypto.Tensor((1, 1), I32),
          cache: pypto.Tensor((1, 1, 1, 8), I32), out: pypto.Tensor((1, 1, 1, 8), I32)):
        pypto.set_vec_tile_shapes(1, 1, 1, 8)
        view = pypto.view(cache, [1, 1, 1, 8], [0, 0, 0, 0])
        r = pypto.scatter_update(view, -2, idx, src)
        pypto.assemble(r, [0, 0, 0, 0], out)

    src = np.arange(8, dtype=np.int32).reshape(1, 1, 1, 8) + 5
    cache, out = np.ones((1, 1, 1, 8), np.int32), np.zeros((1, 1, 1, 8), np.int32)
    run_in(mode, f, src, np.zeros((1, 1), np.int32), cache, out)
    np.testing.assert_array_equal(out, src)
    np.testing.assert_array_equal(cache, src)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_two_index_tensors(mode, accumulate):
    @pypto.jit
    def f(x: pypto.Tensor((5, 6, 7), F32), i0: pypto.Tensor((4,), I32), i1: pypto.Tensor((4,), I32),
          v: pypto.Tensor((4, 7), F32)):
        pypto.set_vec_tile_shapes(4)  # completed with the values' trailing dim: [4, 7]
        pypto.index_put_(x, (i0, i1), v, accumulate=accumulate)

    r = rng(5)
    x = r.standard_normal((5, 6, 7)).astype(np.float32)
    i0, i1 = np.array([0, 4, 2, 0], np.int32), np.array([5, 0, 3, 1], np.int32)
    v = r.standard_normal((4, 7)).astype(np.float32)
    want = torch.from_numpy(x.copy()).index_put_((torch.from_numpy(i0).long(), torch.from_numpy(i1).long()),
                                                 torch.from_numpy(v), accumulate=accumulate).numpy()
    run_in(mode, f, x, i0, i1, v)
    np.testing.assert_array_equal(x, want)
    i1[2] = 6  # inside the flattened rows, outside dim 1: refused, not written to another row
    with pytest.raises(ValueError, match="out of range"):
        run_in(mode, f, x, i0, i1, v)


@pytest.mark.parametrize("mode", MODES)
def test_index_add_and_cumsum_along_a_valid_extent(mode):
    """The dim the op needs whole in one tile is a view's run-time valid extent (min(13 - 7 b, 7)):
    one tile of its bound."""
    @pypto.jit
    def f(x: pypto.Tensor((7, 28), F32), src: pypto.Tensor((13, 28), F32), idx: pypto.Tensor((13,), I32),
          cs: pypto.Tensor((13, 28), F32)):
        for b in pypto.loop(2):
            pypto.set_vec_tile_shapes(5, 8)
            n = pypto.min(13 - b * 7, 7)
            v = pypto.view(src, [7, 28], [b * 7, 0], valid_shape=[n, 28])
            i = pypto.view(idx, [7], [b * 7], valid_shape=[n])
            pypto.index_add_(x, 0, i, v, alpha=1.5)
            pypto.assemble(pypto.cumsum(v, 0), [b * 7, 0], cs)

    r = rng(6)
    x = r.standard_normal((7, 28)).astype(np.float32)
    src = r.standard_normal((13, 28)).astype(np.float32)
    idx = r.integers(0, 7, 13).astype(np.int32)
    cs = np.zeros((13, 28), np.float32)
    want = torch.from_numpy(x.copy()).index_add(0, torch.from_numpy(idx).long(), torch.from_numpy(src), alpha=1.5)
    run_in(mode, f, x, src, idx, cs)
    np.testing.assert_allclose(x, want.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cs, np.concatenate([np.cumsum(src[:7], 0), np.cumsum(src[7:], 0)]), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_var_over_every_dim_and_positional_correction(mode):
    @pypto.jit
    def f(x: pypto.Tensor((2, 8), F32)):
        return pypto.var(x, [], 1), pypto.var(x, (), 0, True), pypto.var(x, [0], 1), pypto.std(x, [])

    x = rng(7).random((2, 8)).astype(np.float32)
    a, b, c, s = run_in(mode, f, x)
    np.testing.assert_allclose(a, np.var(x, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(b, np.var(x, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(c, np.var(x, 0, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(s, np.std(x, ddof=1), rtol=1e-6)
    assert a.shape == () and b.shape == (1, 1)
