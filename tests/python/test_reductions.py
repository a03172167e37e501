"""amax / amin / sum along every dim, keepdim or not, with tails and split reductions."""

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng, uniform

F32 = pypto.DT_FP32

OPS = {
    "amax": (pypto.amax, np.max),
    "amin": (pypto.amin, np.min),
    "sum": (pypto.sum, np.sum),
}


def reduced_shape(shape, dim, keepdim):
    dim = dim % len(shape)
    if keepdim:
        return tuple(1 if i == dim else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i != dim)


def make(op, shape, tile, dim, keepdim):
    oshape = reduced_shape(shape, dim, keepdim)

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32)) -> pypto.Tensor(oshape, F32):
        pypto.set_vec_tile_shapes(*tile)
        out = pypto.tensor(oshape, F32)
        r = op(x, dim=dim, keepdim=keepdim)
        if not keepdim:  # the copy into `out` is a rank-(n-1) op: it needs a tile of that rank
            pypto.set_vec_tile_shapes(*reduced_shape(tile, dim, False))
        out[:] = r
        return out
    return f


def data(name, shape, seed):
    r = rng(seed)
    if name == "sum":  # positive: no cancellation, so rtol 1e-5 is meaningful
        return uniform(r, shape, 0.5, 1.5)
    return randn(r, shape)


# Reduced dim longer than its tile and not a multiple: the split-reduction path with a tail.
@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("keepdim", [True, False])
@pytest.mark.parametrize("dim", [-1, 0, 1, 2])
def test_reduce_3d_split_with_tails(name, dim, keepdim):
    shape, tile = (5, 11, 70), (2, 4, 16)
    op, ref = OPS[name]
    x = data(name, shape, 42 + dim)
    y = make(op, shape, tile, dim, keepdim)(x)
    assert_close(y, ref(x.astype(np.float64), axis=dim, keepdims=keepdim))


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dim", [0, 1])
def test_reduce_2d_whole_dim_in_one_tile(name, dim):
    shape, tile = (13, 29), (16, 32)
    op, ref = OPS[name]
    x = data(name, shape, 3)
    y = make(op, shape, tile, dim, True)(x)
    assert_close(y, ref(x.astype(np.float64), axis=dim, keepdims=True))


@pytest.mark.parametrize("name", sorted(OPS))
def test_reduce_tile_of_one_along_reduced_dim(name):
    shape, tile = (6, 9), (4, 1)
    op, ref = OPS[name]
    x = data(name, shape, 8)
    y = make(op, shape, tile, -1, True)(x)
    assert_close(y, ref(x.astype(np.float64), axis=-1, keepdims=True))


@pytest.mark.parametrize("name", sorted(OPS))
def test_reduce_1d_to_scalar_shape(name):
    shape, tile = (100,), (32,)
    op, ref = OPS[name]
    x = data(name, shape, 4)
    y = make(op, shape, tile, 0, True)(x)
    assert_close(y, ref(x.astype(np.float64), axis=0, keepdims=True))


@pytest.mark.parametrize("name", sorted(OPS))
def test_reduce_4d_middle_dim(name):
    shape, tile = (2, 3, 7, 10), (1, 2, 3, 4)
    op, ref = OPS[name]
    x = data(name, shape, 5)
    y = make(op, shape, tile, 2, False)(x)
    assert_close(y, ref(x.astype(np.float64), axis=2))


def test_amax_all_negative_with_tail():
    """A padded tail must not leak 0 (or garbage) into a max of all-negative values."""
    shape, tile = (3, 37), (2, 16)
    x = -uniform(rng(1), shape, 1.0, 5.0)
    y = make(pypto.amax, shape, tile, -1, True)(x)
    assert_close(y, x.max(-1, keepdims=True))
    assert (y < 0).all()


def test_amin_all_positive_with_tail():
    shape, tile = (3, 37), (2, 16)
    x = uniform(rng(2), shape, 1.0, 5.0)
    y = make(pypto.amin, shape, tile, -1, True)(x)
    assert_close(y, x.min(-1, keepdims=True))
    assert (y > 0).all()


def test_sum_tail_not_padded_with_garbage():
    shape, tile = (4, 33), (4, 8)
    x = np.ones(shape, np.float32)
    y = make(pypto.sum, shape, tile, -1, True)(x)
    np.testing.assert_array_equal(y, np.full((4, 1), 33.0, np.float32))


def test_random_reductions():
    r = rng(2024)
    for _ in range(4):
        shape = tuple(int(v) for v in r.integers(1, 40, size=3))
        tile = tuple(int(v) for v in r.integers(1, 12, size=3))
        dim = int(r.integers(-3, 3))
        keepdim = bool(r.integers(0, 2))
        name = ["amax", "amin", "sum"][int(r.integers(0, 3))]
        op, ref = OPS[name]
        x = data(name, shape, int(r.integers(0, 1000)))
        y = make(op, shape, tile, dim, keepdim)(x)
        assert_close(y, ref(x.astype(np.float64), axis=dim, keepdims=keepdim))


def test_reduction_then_elementwise_fused_rmsnorm():
    shape = (37, 200)

    @pypto.jit
    def rmsnorm(x: pypto.Tensor(shape, F32), g: pypto.Tensor((1, 200), F32)) -> pypto.Tensor(shape, F32):
        pypto.set_vec_tile_shapes(8, 64)
        out = pypto.tensor(shape, F32)
        ms = pypto.sum(x * x, dim=-1, keepdim=True) / 200.0
        out[:] = x * pypto.rsqrt(ms + 1e-6) * g
        return out

    r = rng(77)
    x, g = randn(r, shape), randn(r, (1, 200))
    y = rmsnorm(x, g)
    xd = x.astype(np.float64)
    ref = xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6) * g
    assert_close(y, ref)


def test_softmax_split_reduction_tails():
    shape = (3, 5, 100)

    @pypto.jit
    def sm(x: pypto.Tensor(shape, F32)) -> pypto.Tensor(shape, F32):
        pypto.set_vec_tile_shapes(2, 2, 32)
        out = pypto.tensor(shape, F32)
        e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
        out[:] = e / pypto.sum(e, dim=-1, keepdim=True)
        return out

    x = randn(rng(6), shape) * 3
    y = sm(x)
    xd = x.astype(np.float64)
    ref = np.exp(xd - xd.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    assert_close(y, ref)
