"""pypto.DYNAMIC / STATIC dims: compile once (or per size), right answers for every size."""

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng

F32 = pypto.DT_FP32
DYN = pypto.DYNAMIC


def np_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pypto.jit
def dyn_softmax(x: pypto.Tensor((DYN, 3, 5, 40), F32)) -> pypto.Tensor((DYN, 3, 5, 40), F32):
    b = x.shape[0]
    out = pypto.tensor((b, 3, 5, 40), F32)
    pypto.set_vec_tile_shapes(1, 2, 2, 16)
    for idx in pypto.loop(0, b, 1, name="L0", idx_name="idx"):
        v = x[idx:idx + 1, :, :, :]
        e = pypto.exp(v - pypto.amax(v, dim=-1, keepdim=True))
        pypto.assemble(e / pypto.sum(e, dim=-1, keepdim=True), [idx, 0, 0, 0], out)
    return out


def test_dynamic_batch_compiles_once():
    dyn_softmax._cache.clear()
    for b in (1, 3, 7, 2):
        x = randn(rng(b), (b, 3, 5, 40))
        y = dyn_softmax(x)
        assert y.shape == x.shape
        assert_close(y, np_softmax(x))
    assert len(dyn_softmax._cache) == 1


def test_dynamic_shape_is_symbolic():
    seen = {}

    @pypto.jit
    def f(x: pypto.Tensor((DYN, 8), F32)) -> pypto.Tensor((DYN, 8), F32):
        seen["dim0"] = x.shape[0]
        seen["dim1"] = x.shape[1]
        out = pypto.tensor(x.shape, F32)
        pypto.set_vec_tile_shapes(4, 8)
        out[:] = x * 2.0
        return out

    x = randn(rng(0), (5, 8))
    assert_close(f(x), x * 2.0)
    assert isinstance(seen["dim0"], pypto.SymbolicScalar)
    assert seen["dim1"] == 8 and isinstance(seen["dim1"], int)


@pytest.mark.parametrize("n", [1, 4, 5, 13])
def test_dynamic_rows_elementwise_with_tail(n):
    """A DYNAMIC dim tiled without a loop: the tail of the last tile depends on the run-time size."""
    @pypto.jit
    def f(x: pypto.Tensor((DYN, 20), F32)) -> pypto.Tensor((DYN, 20), F32):
        out = pypto.tensor((x.shape[0], 20), F32)
        pypto.set_vec_tile_shapes(4, 8)
        out[:] = pypto.exp(x) - x
        return out

    x = randn(rng(n), (n, 20))
    assert_close(f(x), np.exp(x.astype(np.float64)) - x)


_reduce_dyn = {}


def _get_reduce_dyn():
    if "f" not in _reduce_dyn:
        @pypto.jit
        def f(x: pypto.Tensor((4, DYN), F32)) -> pypto.Tensor((4, 1), F32):
            out = pypto.tensor((4, 1), F32)
            pypto.set_vec_tile_shapes(2, 16)
            out[:] = pypto.sum(x, dim=-1, keepdim=True) + pypto.amax(x, dim=-1, keepdim=True)
            return out
        _reduce_dyn["f"] = f
    return _reduce_dyn["f"]


@pytest.mark.parametrize("n", [1, 16, 17, 50])
def test_dynamic_reduced_dim(n):
    """Reduction along a DYNAMIC dim: the number of tiles and the tail are run-time values."""
    f = _get_reduce_dyn()
    x = randn(rng(n), (4, n))
    xd = x.astype(np.float64)
    assert_close(f(x), xd.sum(-1, keepdims=True) + xd.max(-1, keepdims=True), atol=1e-5)
    assert len(f._cache) == 1


def test_static_dim_recompiles_per_size():
    @pypto.jit
    def f(x: pypto.Tensor((pypto.STATIC, 8), F32)) -> pypto.Tensor((pypto.STATIC, 8), F32):
        out = pypto.tensor(x.shape, F32)
        pypto.set_vec_tile_shapes(4, 8)
        out[:] = x + 1.0
        return out

    for n in (3, 6, 3):
        x = randn(rng(n), (n, 8))
        assert_close(f(x), x + 1.0)
    assert len(f._cache) == 2


def test_loop_with_symbolic_bounds_and_step():
    """A runtime loop over row blocks of 2 with a symbolic stop; rows written via assemble."""
    @pypto.jit
    def f(x: pypto.Tensor((DYN, 12), F32)) -> pypto.Tensor((DYN, 12), F32):
        n = x.shape[0]
        out = pypto.tensor((n, 12), F32)
        pypto.set_vec_tile_shapes(1, 8)
        for i in pypto.loop(0, n, 1, name="rows", idx_name="i"):
            row = x[i:i + 1, :]
            pypto.assemble(row * row - pypto.sum(row, dim=-1, keepdim=True), [i, 0], out)
        return out

    for n in (1, 6):
        x = randn(rng(n + 100), (n, 12))
        xd = x.astype(np.float64)
        assert_close(f(x), xd * xd - xd.sum(-1, keepdims=True))
    assert len(f._cache) == 1


def test_loop_bounds_offset_start():
    """loop(start, stop) with start > 0 leaves the rows before start untouched."""
    @pypto.jit
    def f(x: pypto.Tensor((6, 8), F32), out: pypto.Tensor((6, 8), F32)):
        pypto.set_vec_tile_shapes(1, 8)
        for i in pypto.loop(2, 6, 1, name="L", idx_name="i"):
            out[i:i + 1, :] = x[i:i + 1, :] * 10.0

    x = randn(rng(3), (6, 8))
    out = np.full((6, 8), -7.0, np.float32)
    f(x, out)
    np.testing.assert_array_equal(out[:2], -7.0)
    assert_close(out[2:], x[2:] * 10.0)


@pypto.jit
def _step2(x: pypto.Tensor((DYN, 4), F32), out: pypto.Tensor((DYN, 4), F32)):
    pypto.set_vec_tile_shapes(2, 4)
    for i in pypto.loop(0, 8, 2, name="L", idx_name="i"):
        out[i:i + 2, :] = x[i:i + 2, :] + 1.0


def test_loop_step_two():
    x = randn(rng(5), (8, 4))
    out = np.zeros((8, 4), np.float32)
    _step2(x, out)
    assert_close(out, x + 1.0)


def test_runtime_window_out_of_bounds_of_output():
    """A constant loop of 8 rows over a DYNAMIC output of 6 rows: refused at run time, no stray write."""
    x = np.ones((8, 4), np.float32)
    backing = np.zeros((10, 4), np.float32)
    with pytest.raises(pypto.UserError, match=r"out of bounds.*%out.*dim 0") as ei:
        _step2(x, backing[:6])
    assert "test_dynamic.py" in str(ei.value)
    np.testing.assert_array_equal(backing[6:], 0.0)


def test_runtime_slice_past_the_end_of_input_is_its_valid_part():
    """PyPTO's view valid shape, as numpy's slicing: x[i:i + 2] past the end of a 4-row DYNAMIC x
    holds nothing there, so the rows of out it would give are not written (no error, no stray
    read). A pypto.view of a fixed shape over a dynamic dim is checked instead (test_tail_views)."""
    x = randn(rng(6), (4, 4))
    out = np.full((8, 4), 7.0, np.float32)
    _step2(x, out)
    assert_close(out[:4], x + 1.0)
    np.testing.assert_array_equal(out[4:], 7.0)


@pytest.mark.parametrize("opts", [{"workers": 1}, {"workers": 2, "sched_mode": "lifo"}, {"sched_mode": "fifo"}])
def test_runtime_options_same_answer(opts):
    @pypto.jit(runtime_options=opts)
    def f(x: pypto.Tensor((DYN, 3, 5, 40), F32)) -> pypto.Tensor((DYN, 3, 5, 40), F32):
        b = x.shape[0]
        out = pypto.tensor((b, 3, 5, 40), F32)
        pypto.set_vec_tile_shapes(1, 2, 2, 16)
        for idx in pypto.loop(0, b, 1, name="L0", idx_name="idx"):
            v = x[idx:idx + 1, :, :, :]
            e = pypto.exp(v - pypto.amax(v, dim=-1, keepdim=True))
            out[idx:idx + 1, :, :, :] = e / pypto.sum(e, dim=-1, keepdim=True)
        return out

    x = randn(rng(21), (4, 3, 5, 40))
    assert_close(f(x), np_softmax(x))
    assert f.last_stats["tasks"] > 0


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_empty_dynamic_dim_gives_empty_outputs(mode):
    # numpy and torch return an empty result for an empty batch; no kernel runs.
    @pypto.jit
    def f(x: pypto.Tensor((DYN, 8), F32)) -> pypto.Tensor((DYN, 8), F32):
        out = pypto.tensor(x.shape, F32)
        pypto.set_vec_tile_shapes(4, 8)
        out[:] = pypto.exp(x) * 2.0
        return out

    pypto.set_runtime_options(run_mode=mode)
    try:
        out = f(np.zeros((0, 8), np.float32))
        assert out.shape == (0, 8) and out.dtype == np.float32
        x = randn(rng(3), (5, 8))  # the same compiled program still computes
        assert_close(f(x), np.exp(x) * 2.0)
    finally:
        pypto.set_runtime_options(run_mode="cpu")


def test_empty_dim_with_a_non_empty_output_is_a_user_error():
    @pypto.jit
    def f(x: pypto.Tensor((DYN, 8), F32)):
        return pypto.sum(x, 0, keepdim=True)

    # The error names the op that reduces over the empty dim, and its line.
    with pytest.raises(pypto.UserError, match=r"(?s)pypto.sum of %x \(x_dim0, 8\) gives .* not empty, while a "
                                              r"dynamic dim is 0.*test_dynamic.py"):
        f(np.zeros((0, 8), np.float32))


def test_empty_dim_reduced_into_an_empty_output_and_a_matmul_over_it():
    # A reduction along the other dim of an empty batch is empty too: it runs. A matmul whose K
    # is the empty dim would be all zeros: refused, naming it.
    @pypto.jit
    def rows(x: pypto.Tensor((DYN, 8), F32), y: pypto.Tensor((2, 8), F32)):
        return pypto.sum(x, 1, keepdim=True), pypto.exp(y)

    s, e = rows(np.zeros((0, 8), np.float32), np.ones((2, 8), np.float32))
    assert s.shape == (0, 1)
    np.testing.assert_allclose(e, np.exp(np.ones((2, 8), np.float32)), rtol=1e-6)

    @pypto.jit
    def mm(a: pypto.Tensor((4, DYN), F32), b: pypto.Tensor((DYN, 4), F32)):
        return pypto.matmul(a, b)

    with pytest.raises(pypto.UserError, match=r"pypto.matmul of %a \(4, a_dim1\) gives .* not empty"):
        mm(np.zeros((4, 0), np.float32), np.zeros((0, 4), np.float32))
