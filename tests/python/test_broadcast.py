"""Broadcasting of keepdim results, (1, n) rows and (m, 1) columns, on either side."""

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng

F32 = pypto.DT_FP32

OPS = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "maximum": (pypto.maximum, np.maximum),
    "minimum": (pypto.minimum, np.minimum),
}


def make(op, xshape, yshape, oshape, tile):
    @pypto.jit
    def f(x: pypto.Tensor(xshape, F32), y: pypto.Tensor(yshape, F32)) -> pypto.Tensor(oshape, F32):
        pypto.set_vec_tile_shapes(*tile)
        out = pypto.tensor(oshape, F32)
        out[:] = op(x, y)
        return out
    return f


def operands(xshape, yshape, seed):
    r = rng(seed)
    x = randn(r, xshape)
    y = randn(r, yshape)
    y = np.where(np.abs(y) < 0.25, 0.5, y).astype(np.float32)  # safe divisor
    x = np.where(np.abs(x) < 0.25, 0.5, x).astype(np.float32)
    return x, y


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("xshape,yshape,tile", [
    ((21, 45), (1, 45), (8, 16)),        # (1, n) row on the right
    ((1, 45), (21, 45), (8, 16)),        # (1, n) row on the left
    ((21, 45), (21, 1), (8, 16)),        # keepdim column on the right
    ((21, 1), (21, 45), (8, 16)),        # keepdim column on the left
    ((4, 7, 30), (4, 1, 30), (2, 3, 8)),  # keepdim of a middle dim
    ((4, 7, 30), (1, 1, 30), (2, 3, 8)),  # a row broadcast over two dims
], ids=lambda v: "x".join(map(str, v)))
def test_broadcast_binary(name, xshape, yshape, tile):
    op, ref = OPS[name]
    oshape = np.broadcast_shapes(xshape, yshape)
    x, y = operands(xshape, yshape, 12)
    got = make(op, xshape, yshape, oshape, tile)(x, y)
    assert_close(got, ref(x.astype(np.float64), y))


def test_keepdim_result_on_both_sides():
    shape = (9, 50)

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32)) -> pypto.Tensor(shape, F32):
        pypto.set_vec_tile_shapes(4, 16)
        out = pypto.tensor(shape, F32)
        m = pypto.amax(x, dim=-1, keepdim=True)
        s = pypto.sum(x, dim=-1, keepdim=True)
        out[:] = (m - x) * (x / (s * s + 1.0)) + pypto.minimum(m, x)
        return out

    x = randn(rng(4), shape)
    xd = x.astype(np.float64)
    m, s = xd.max(-1, keepdims=True), xd.sum(-1, keepdims=True)
    assert_close(f(x), (m - xd) * (xd / (s * s + 1.0)) + np.minimum(m, xd))


def test_column_keepdim_of_dim0_broadcast():
    shape = (23, 10)

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32)) -> pypto.Tensor(shape, F32):
        pypto.set_vec_tile_shapes(8, 4)
        out = pypto.tensor(shape, F32)
        out[:] = x - pypto.amin(x, dim=0, keepdim=True)
        return out

    x = randn(rng(8), shape)
    assert_close(f(x), x.astype(np.float64) - x.min(0, keepdims=True))


def test_outer_broadcast_row_and_column():
    """(m, 1) op (1, n) -> (m, n): both operands broadcast."""
    @pypto.jit
    def f(a: pypto.Tensor((13, 1), F32), b: pypto.Tensor((1, 20), F32)) -> pypto.Tensor((13, 20), F32):
        pypto.set_vec_tile_shapes(4, 8)
        out = pypto.tensor((13, 20), F32)
        out[:] = a * b
        return out

    r = rng(13)
    a, b = randn(r, (13, 1)), randn(r, (1, 20))
    assert_close(f(a, b), a.astype(np.float64) * b)


def test_row_from_parameter_rmsnorm_gamma():
    shape = (37, 200)

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32), g: pypto.Tensor((1, 200), F32)) -> pypto.Tensor(shape, F32):
        pypto.set_vec_tile_shapes(8, 48)
        out = pypto.tensor(shape, F32)
        out[:] = g * x + g
        return out

    r = rng(1)
    x, g = randn(r, shape), randn(r, (1, 200))
    assert_close(f(x, g), g.astype(np.float64) * x + g)
