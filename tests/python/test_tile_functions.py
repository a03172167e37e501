"""The tile level: functions on pypto.Tile mapped over row tiles (issue 13, part 1), on both
backends, with tails, the row / col tile ops, extra parameters and the errors."""

import numpy as np
import pytest

import pypto
from _util import MODES


def arr(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def np_softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(37, 100), (8, 2048), (1, 5), (300, 33)])
def test_seed_softmax(mode, shape):
    @pypto.jit(runtime_options={"run_mode": mode})
    def softmax(x: pypto.Tile) -> pypto.Tile:
        m = pypto.row_max(x)
        e = pypto.exp(x - m)
        return e / pypto.row_sum(e)

    x = arr(*shape)
    y = softmax(x)
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, np_softmax(x), rtol=2e-6, atol=1e-9)
    assert not softmax._per_tile.get(next(iter(softmax._per_tile), None), False)  # traced over the whole array


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows,tile", [(37, 4), (8, 8), (9, 8), (3, 1)])
def test_col_ops_reduce_within_a_tile(mode, rows, tile):
    @pypto.jit(tile_shape=(tile,), runtime_options={"run_mode": mode})
    def f(x: pypto.Tile):
        return pypto.col_sum(x), pypto.col_expand_sub(x, pypto.col_max(x)), pypto.col_min(x)

    x = arr(rows, 20)
    s, d, mn = f(x)
    blocks = [x[i:i + tile] for i in range(0, rows, tile)]
    np.testing.assert_allclose(s, np.stack([b.sum(0) for b in blocks]), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(d, np.concatenate([b - b.max(0) for b in blocks]))
    np.testing.assert_array_equal(mn, np.stack([b.min(0) for b in blocks]))


@pytest.mark.parametrize("mode", MODES)
def test_row_expand_ops_and_a_whole_parameter(mode):
    """rms_norm as a tile function: gamma (a pypto.Tensor parameter) is passed whole to every tile;
    eps is a compile-time value."""
    @pypto.jit(tile_shape=(16, 64), runtime_options={"run_mode": mode})
    def rms_norm(x: pypto.Tile, gamma: pypto.Tensor(), eps: float = 1e-6):
        ms = pypto.row_sum(x * x) * (1.0 / x.shape[1])
        r = pypto.row_expand_mul(x, pypto.rsqrt(ms + eps))
        return pypto.col_expand_mul(r, gamma)

    x, g = arr(50, 64), arr(1, 64, seed=1)
    y = rms_norm(x, g)
    ref = x / np.sqrt((x * x).sum(1, keepdims=True) / 64 + 1e-6) * g
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_row_expand_family_matches_numpy():
    @pypto.jit(tile_shape=(4,))
    def f(x: pypto.Tile):
        m = pypto.row_min(x)
        return (pypto.row_expand_add(x, m), pypto.row_expand_sub(x, m), pypto.row_expand_div(x, m),
                pypto.row_expand_max(x, m), pypto.row_expand_min(x, m), pypto.row_expand(x, m))

    x = arr(10, 12)
    m = x.min(1, keepdims=True)
    want = (x + m, x - m, x / m, np.maximum(x, m), np.minimum(x, m), np.broadcast_to(m, x.shape))
    for got, ref in zip(f(x), want):
        np.testing.assert_array_equal(got, ref)


def test_two_tile_inputs_and_torch():
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(a: pypto.Tile, b: pypto.Tile):
        return pypto.row_sum(a * b)

    a, b = torch.randn(70, 40), torch.randn(70, 40)
    y = f(a, b)
    assert isinstance(y, torch.Tensor) and tuple(y.shape) == (70, 1)
    torch.testing.assert_close(y, (a * b).sum(1, keepdim=True), rtol=1e-5, atol=1e-5)


def test_row_mixing_tensor_op_is_traced_per_tile():
    """A tensor-level op across rows (amax over dim 0) inside a tile function reduces within the
    tile, like col_max, not over the whole array."""
    @pypto.jit(tile_shape=(4,))
    def f(x: pypto.Tile):
        return x - pypto.amax(x, 0, keepdim=True)

    x = arr(10, 6)
    want = np.concatenate([b - b.max(0) for b in (x[0:4], x[4:8], x[8:10])])
    np.testing.assert_array_equal(f(x), want)


def test_tile_rows_from_the_buffer():
    @pypto.jit
    def f(x: pypto.Tile):
        return x * 2.0

    ub = pypto._core.machine_ub_bytes("cpu")
    assert f.tile_rows(10000, 2048 * 4) == max(1, ub // 8 // (2048 * 4))
    assert f.tile_rows(3, 16) == 3
    x = arr(5000, 96)
    np.testing.assert_array_equal(f(x), x * 2)


def test_errors():
    @pypto.jit
    def f(a: pypto.Tile, b: pypto.Tile):
        return a + b

    with pytest.raises(pypto.UserError, match="different row counts"):
        f(arr(4, 8), arr(5, 8))
    with pytest.raises(pypto.UserError, match="takes a 2-D array"):
        f(arr(4), arr(4))

    @pypto.jit(tile_shape=(8, 16))
    def g(x: pypto.Tile):
        return x * 1.0

    with pytest.raises(pypto.UserError, match="a tile spans whole rows"):
        g(arr(4, 32))

    @pypto.jit(tile_shape=(4,))
    def h(x: pypto.Tile):
        return pypto.concat([x, x], 0)

    with pytest.raises(pypto.UserError, match="has 8 rows for a tile of 4"):
        h(arr(8, 8))

    with pytest.raises(pypto.UserError, match="tile_shape is for tile functions"):
        @pypto.jit(tile_shape=(8,))
        def t(x: pypto.Tensor([8, 8], pypto.DT_FP32)):
            return x

    with pytest.raises(TypeError, match="annotation"):
        pypto.Tile()
