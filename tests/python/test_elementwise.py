"""Elementwise ops on shapes with tails in every dim, against numpy."""

import zlib

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng, uniform

F32 = pypto.DT_FP32

# (shape, tile): extents not multiples of the tile in every dim.
CASES = [
    ((37, 50), (8, 16)),
    ((5, 7, 33), (2, 4, 16)),
    ((3, 2, 5, 9), (2, 1, 2, 4)),
    ((1, 1), (1, 1)),
    ((9,), (4,)),
]

UNARY = {
    "exp": (pypto.exp, np.exp, (-3.0, 3.0)),
    "log": (pypto.log, np.log, (0.1, 10.0)),
    "abs": (pypto.abs, np.abs, (-5.0, 5.0)),
    "neg": (pypto.neg, np.negative, (-5.0, 5.0)),
    "sqrt": (pypto.sqrt, np.sqrt, (0.0, 10.0)),
    "rsqrt": (pypto.rsqrt, lambda a: 1.0 / np.sqrt(a), (0.1, 10.0)),
    "reciprocal": (pypto.reciprocal, np.reciprocal, (0.5, 4.0)),
    "relu": (pypto.relu, lambda a: np.maximum(a, 0), (-5.0, 5.0)),
}

BINARY = {
    "add": (pypto.add, np.add),
    "sub": (pypto.sub, np.subtract),
    "mul": (pypto.mul, np.multiply),
    "div": (pypto.div, np.divide),
    "maximum": (pypto.maximum, np.maximum),
    "minimum": (pypto.minimum, np.minimum),
}


def make_unary(op, shape, tile):
    @pypto.jit
    def f(x: pypto.Tensor(shape, F32), out: pypto.Tensor(shape, F32)):
        pypto.set_vec_tile_shapes(*tile)
        out[:] = op(x)
    return f


def make_binary(op, shape, tile):
    @pypto.jit
    def f(x: pypto.Tensor(shape, F32), y: pypto.Tensor(shape, F32), out: pypto.Tensor(shape, F32)):
        pypto.set_vec_tile_shapes(*tile)
        out[:] = op(x, y)
    return f


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape,tile", CASES, ids=lambda v: "x".join(map(str, v)))
def test_unary(name, shape, tile):
    op, ref, (lo, hi) = UNARY[name]
    r = rng(zlib.crc32(repr((name, shape)).encode()))
    x = uniform(r, shape, lo, hi)
    out = np.full(shape, np.nan, np.float32)
    make_unary(op, shape, tile)(x, out)
    assert_close(out, ref(x.astype(np.float64)))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shape,tile", CASES[:3], ids=lambda v: "x".join(map(str, v)))
def test_binary(name, shape, tile):
    op, ref = BINARY[name]
    r = rng(7)
    x = randn(r, shape)
    y = randn(r, shape)
    if name == "div":
        y = np.where(np.abs(y) < 0.25, 0.25, y).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    make_binary(op, shape, tile)(x, y, out)
    assert_close(out, ref(x.astype(np.float64), y))


SCALAR_FORMS = {
    "t+s": (lambda t: t + 2.5, lambda a: a + 2.5),
    "s+t": (lambda t: 2.5 + t, lambda a: 2.5 + a),
    "t-s": (lambda t: t - 1.5, lambda a: a - 1.5),
    "s-t": (lambda t: 1.5 - t, lambda a: 1.5 - a),
    "t*s": (lambda t: t * -3.0, lambda a: a * -3.0),
    "s*t": (lambda t: -3.0 * t, lambda a: -3.0 * a),
    "t/s": (lambda t: t / 4.0, lambda a: a / 4.0),
    "s/t": (lambda t: 4.0 / t, lambda a: 4.0 / a),
    "t*int": (lambda t: t * 3, lambda a: a * 3),
    "int-t": (lambda t: 3 - t, lambda a: 3 - a),
    "max(t,s)": (lambda t: pypto.maximum(t, 0.5), lambda a: np.maximum(a, 0.5)),
    "max(s,t)": (lambda t: pypto.maximum(0.5, t), lambda a: np.maximum(0.5, a)),
    "min(t,s)": (lambda t: pypto.minimum(t, -0.5), lambda a: np.minimum(a, -0.5)),
    "min(s,t)": (lambda t: pypto.minimum(-0.5, t), lambda a: np.minimum(-0.5, a)),
    "sub(s,t)": (lambda t: pypto.sub(1.0, t), lambda a: 1.0 - a),
    "div(s,t)": (lambda t: pypto.div(2.0, t), lambda a: 2.0 / a),
    "-t": (lambda t: -t, lambda a: -a),
    "abs(t)": (lambda t: abs(t), lambda a: np.abs(a)),
}


@pytest.mark.parametrize("form", list(SCALAR_FORMS))
def test_scalar_operands(form):
    op, ref = SCALAR_FORMS[form]
    shape, tile = (13, 21), (4, 8)
    r = rng(3)
    x = uniform(r, shape, 0.5, 2.0) * np.where(r.random(shape) < 0.5, -1, 1).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    make_unary(op, shape, tile)(x, out)
    assert_close(out, ref(x.astype(np.float64)))


def test_operator_chain_with_tails():
    """A longer chain of tensor/tensor and tensor/scalar ops fused into one kernel."""
    shape = (19, 45)

    @pypto.jit
    def chain(x: pypto.Tensor(shape, F32), y: pypto.Tensor(shape, F32), out: pypto.Tensor(shape, F32)):
        pypto.set_vec_tile_shapes(8, 16)
        a = pypto.maximum(x * y - 0.5, pypto.minimum(x, y))
        b = pypto.sqrt(pypto.abs(a) + 1.0)
        out[:] = pypto.exp(-b) / (1.0 + pypto.relu(x)) - pypto.rsqrt(y * y + 2.0) * 3.0

    r = rng(11)
    x, y = randn(r, shape), randn(r, shape)
    out = np.zeros(shape, np.float32)
    chain(x, y, out)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    a = np.maximum(xd * yd - 0.5, np.minimum(xd, yd))
    b = np.sqrt(np.abs(a) + 1.0)
    ref = np.exp(-b) / (1.0 + np.maximum(xd, 0)) - 3.0 / np.sqrt(yd * yd + 2.0)
    assert_close(out, ref)


def test_random_shapes_elementwise():
    """Random shapes and tiles (seeded), tails likely in every dim."""
    r = rng(1234)
    for _ in range(4):
        rank = int(r.integers(1, 4))
        shape = tuple(int(v) for v in r.integers(1, 40, size=rank))
        tile = tuple(int(min(s, v)) for s, v in zip(shape, r.integers(1, 16, size=rank)))

        @pypto.jit
        def f(x: pypto.Tensor(shape, F32), y: pypto.Tensor(shape, F32), out: pypto.Tensor(shape, F32)):
            pypto.set_vec_tile_shapes(*tile)
            out[:] = pypto.exp(x) * y - x / 3.0

        x, y = randn(r, shape), randn(r, shape)
        out = np.zeros(shape, np.float32)
        f(x, y, out)
        xd = x.astype(np.float64)
        assert_close(out, np.exp(xd) * y - xd / 3.0)


def test_tile_larger_than_tensor():
    shape = (3, 5)

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32), out: pypto.Tensor(shape, F32)):
        pypto.set_vec_tile_shapes(16, 64)
        out[:] = x * 2.0 + 1.0

    x = randn(rng(5), shape)
    out = np.zeros(shape, np.float32)
    f(x, out)
    assert_close(out, x.astype(np.float64) * 2.0 + 1.0)


def test_inputs_not_modified():
    shape = (6, 10)

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32), out: pypto.Tensor(shape, F32)):
        pypto.set_vec_tile_shapes(4, 4)
        out[:] = pypto.exp(x)

    x = randn(rng(9), shape)
    x0 = x.copy()
    out = np.zeros(shape, np.float32)
    f(x, out)
    np.testing.assert_array_equal(x, x0)
