"""rmsnorm and an elementwise chain on shapes whose rows and columns are not multiples of the
tile shape, against numpy (issue 2's acceptance programs)."""

import numpy as np
import pytest

import pypto


def make_rmsnorm(rows, cols, tile):
    @pypto.jit
    def rmsnorm(x: pypto.Tensor((rows, cols), pypto.DT_FP32),
                gamma: pypto.Tensor((1, cols), pypto.DT_FP32)) -> pypto.Tensor((rows, cols), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(*tile)
        mean_sq = pypto.sum(x * x, dim=-1, keepdim=True) * (1.0 / cols)
        return x * pypto.rsqrt(mean_sq + 1e-6) * gamma

    return rmsnorm


@pytest.mark.parametrize("rows,cols,tile", [(37, 200, (8, 200)), (37, 200, (8, 64)), (5, 1000, (2, 256)),
                                            (64, 128, (16, 128)), (1, 7, (1, 8))])
def test_rmsnorm_with_tails(rows, cols, tile):
    rng = np.random.default_rng(rows * cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    g = rng.standard_normal((1, cols)).astype(np.float32)
    y = make_rmsnorm(rows, cols, tile)(x, g)
    xd = x.astype(np.float64)
    ref = xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_rmsnorm_fuses_when_the_row_fits():
    f = make_rmsnorm(37, 200, (8, 200))
    f(np.ones((37, 200), np.float32), np.ones((1, 200), np.float32))
    assert f.last.program.num_kernels == 1, f.last.program.block_graph()


@pytest.mark.parametrize("shape,tile", [((45, 77), (16, 32)), ((3, 10, 33), (2, 4, 16)), ((130,), (64,))])
def test_elementwise_chain_with_tails(shape, tile):
    @pypto.jit
    def chain(x: pypto.Tensor(shape, pypto.DT_FP32), y: pypto.Tensor(shape, pypto.DT_FP32)) \
            -> pypto.Tensor(shape, pypto.DT_FP32):
        pypto.set_vec_tile_shapes(*tile)
        a = pypto.abs(x) + 1.0
        b = pypto.sqrt(a) * y - 0.5
        c = pypto.maximum(b, -1.0) / a
        d = pypto.minimum(pypto.exp(-c), 3.0 - x)
        return pypto.cast(pypto.cast(d, pypto.DT_FP16), pypto.DT_FP32) + pypto.neg(pypto.reciprocal(a))

    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    out = chain(x, y)
    a = np.abs(x) + np.float32(1)
    b = np.sqrt(a) * y - np.float32(0.5)
    c = np.maximum(b, np.float32(-1)) / a
    d = np.minimum(np.exp(-c), np.float32(3) - x)
    ref = d.astype(np.float16).astype(np.float32) - np.float32(1) / a
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert chain.last.program.num_kernels == 1


def test_in_place_output_and_layernorm_like_two_reductions():
    rows, cols = 19, 96

    @pypto.jit
    def norm(x: pypto.Tensor((rows, cols), pypto.DT_FP32), out: pypto.Tensor((rows, cols), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 96)
        mean = pypto.sum(x, dim=-1, keepdim=True) / cols
        xc = x - mean
        var = pypto.sum(xc * xc, dim=-1, keepdim=True) / cols
        out[:] = xc * pypto.rsqrt(var + 1e-5)

    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32) * 3 + 1
    out = np.zeros_like(x)
    assert norm(x, out) is None
    xd = x.astype(np.float64)
    ref = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
