"""Composite ops (mean, sigmoid, silu, softmax, rms_norm, layer_norm) against numpy and torch."""

import numpy as np
import pytest

import pypto


def _np_ln(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


@pytest.mark.parametrize("rows,cols,tile", [(13, 96, (4, 96)), (5, 130, (2, 64))])
def test_composites_match_numpy(rows, cols, tile):
    @pypto.jit
    def f(x: pypto.Tensor((rows, cols), pypto.DT_FP32), g: pypto.Tensor((1, cols), pypto.DT_FP32),
          b: pypto.Tensor((1, cols), pypto.DT_FP32), o1: pypto.Tensor((rows, cols), pypto.DT_FP32),
          o2: pypto.Tensor((rows, cols), pypto.DT_FP32), o3: pypto.Tensor((rows, cols), pypto.DT_FP32),
          o4: pypto.Tensor((rows, cols), pypto.DT_FP32), o5: pypto.Tensor((rows, 1), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(*tile)
        o1[:] = pypto.softmax(x, -1)
        o2[:] = pypto.rms_norm(x, g, 1e-6)
        o3[:] = pypto.layer_norm(x, g, b, 1e-5)
        o4[:] = pypto.silu(x) + pypto.sigmoid(x)
        o5[:] = pypto.mean(x, -1, keepdim=True)

    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, cols)).astype(np.float32) * 2
    g = rng.standard_normal((1, cols)).astype(np.float32)
    b = rng.standard_normal((1, cols)).astype(np.float32)
    outs = [np.zeros((rows, cols), np.float32) for _ in range(4)] + [np.zeros((rows, 1), np.float32)]
    f(x, g, b, *outs)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    sig = 1 / (1 + np.exp(-xd))
    refs = [e / e.sum(-1, keepdims=True), xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6) * g,
            _np_ln(xd, g, b, 1e-5), xd * sig + sig, xd.mean(-1, keepdims=True)]
    for got, ref in zip(outs, refs):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_layer_norm_matches_torch():
    torch = pytest.importorskip("torch")

    @pypto.jit
    def ln(x: pypto.Tensor((7, 64), pypto.DT_FP32), g: pypto.Tensor((1, 64), pypto.DT_FP32),
           b: pypto.Tensor((1, 64), pypto.DT_FP32)) -> pypto.Tensor((7, 64), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(4, 64)
        return pypto.layer_norm(x, g, b)

    x, g, b = (torch.randn(7, 64), torch.randn(1, 64), torch.randn(1, 64))
    y = ln(x, g, b)
    assert isinstance(y, torch.Tensor)
    ref = torch.nn.functional.layer_norm(x, (64,), g.reshape(-1), b.reshape(-1), 1e-5)
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)


def test_mean_of_a_dynamic_dim_is_refused():
    @pypto.jit
    def f(x: pypto.Tensor((4, pypto.DYNAMIC), pypto.DT_FP32)) -> pypto.Tensor((4, 1), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(4, 64)
        return pypto.mean(x, -1, keepdim=True)

    with pytest.raises(pypto.UserError, match="pypto.mean: dim -1 .* has a dynamic size"):
        f(np.zeros((4, 10), np.float32))
