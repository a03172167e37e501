"""Composite ops (mean, sigmoid, silu, softmax, rms_norm, layer_norm) against numpy and torch."""

import warnings

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


@pytest.mark.parametrize("dt", [pypto.DT_FP32, pypto.DT_BF16], ids=["fp32", "bf16"])
def test_mean_and_var_of_a_dim_of_run_time_size(dt):
    """mean / var over a DYNAMIC dim and over a loop's tail window divide by the size the tile
    has when it runs (the fuzzer's seed 16 program 627 was refused: var over min(8 - i, 2) rows)."""
    @pypto.jit
    def f(x: pypto.Tensor((4, pypto.DYNAMIC), dt)):
        pypto.set_vec_tile_shapes(4, 64)
        return pypto.mean(x, -1, keepdim=True), pypto.var(x, -1, keepdim=True), pypto.var(x, -1, correction=0)

    @pypto.jit
    def g(x: pypto.Tensor((7, 16), dt), out: pypto.Tensor((4, 16), dt)):
        pypto.set_vec_tile_shapes(2, 16)
        for i in pypto.loop(0, 4, 1, name="L", idx_name="i"):
            w = x[i * 2:i * 2 + 2, :]  # the last window has one row: var with correction 1 divides by 0
            out[i:i + 1, :] = pypto.var(w, 0, keepdim=True)

    torch = pytest.importorskip("torch")
    r = np.random.default_rng(5)
    x = r.standard_normal((4, 10)).astype(np.float32)
    x7 = r.standard_normal((7, 16)).astype(np.float32)
    if dt == pypto.DT_BF16:
        x, x7 = (torch.from_numpy(a).bfloat16() for a in (x, x7))
        m, v, v0 = (t.float().numpy() for t in f(x))
        out = torch.zeros(4, 16, dtype=torch.bfloat16)
        g(x7, out)
        x, x7, out = x.float().numpy(), x7.float().numpy(), out.float().numpy()
        tol = dict(rtol=8e-3, atol=8e-3)
    else:
        m, v, v0 = f(x)
        out = np.zeros((4, 16), np.float32)
        g(x7, out)
        tol = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m, x.mean(-1, keepdims=True), **tol)
    np.testing.assert_allclose(v, x.var(-1, ddof=1, keepdims=True), **tol)
    np.testing.assert_allclose(v0, x.var(-1), **tol)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy: "Degrees of freedom <= 0"
        want = np.stack([x7[i * 2:i * 2 + 2].var(0, ddof=1) for i in range(4)])
    np.testing.assert_allclose(out, want, **tol)  # the last row: inf or NaN, as numpy
