"""pypto.interleave / deinterleave / gathermask (PyPTO's strided selections along the last dim,
here gathers at constant positions) against numpy, both backends, fp32 / fp16 / int32."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng

DT = {np.float32: pypto.DT_FP32, np.float16: pypto.DT_FP16, np.int32: pypto.DT_INT32}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("np_dt", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("cols", [8, 13])
def test_interleave_and_deinterleave_invert_each_other(mode, np_dt, cols):
    dt = DT[np_dt]

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((5, cols), dt), y: pypto.Tensor((5, cols), dt)):
        pypto.set_vec_tile_shapes(4, 32)
        a, b = pypto.interleave(x, y)
        c, d = pypto.deinterleave(a, b)
        return a, b, c, d

    r = rng(3)
    x = (r.standard_normal((5, cols)) * 100).astype(np_dt)
    y = (r.standard_normal((5, cols)) * 100).astype(np_dt)
    a, b, c, d = f(x, y)
    s = np.empty((5, 2 * cols), np_dt)
    s[:, 0::2], s[:, 1::2] = x, y
    np.testing.assert_array_equal(a, s[:, :cols])
    np.testing.assert_array_equal(b, s[:, cols:])
    np.testing.assert_array_equal(c, x)
    np.testing.assert_array_equal(d, y)


@pytest.mark.parametrize("mode", MODES)
def test_deinterleave_one_stream_and_gathermask(mode):
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((2, 3, 16), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 4, 16)
        even, odd = pypto.deinterleave(x)
        return (even, odd) + tuple(pypto.gathermask(x, m) for m in range(1, 8))

    x = rng(4).standard_normal((2, 3, 16)).astype(np.float32)
    outs = f(x)
    np.testing.assert_array_equal(outs[0], x[..., 0::2])
    np.testing.assert_array_equal(outs[1], x[..., 1::2])
    want = [x[..., 0::2], x[..., 1::2], x[..., 0::4], x[..., 1::4], x[..., 2::4], x[..., 3::4], x]
    for got, w in zip(outs[2:], want):
        np.testing.assert_array_equal(got, w)


def test_errors():
    @pypto.jit
    def bad_mode(x: pypto.Tensor((2, 8), pypto.DT_FP32)):
        return pypto.gathermask(x, 9)

    with pytest.raises(pypto.UserError, match="pattern_mode must be an int in 1..7"):
        bad_mode(np.zeros((2, 8), np.float32))

    @pypto.jit
    def odd(x: pypto.Tensor((2, 7), pypto.DT_FP32)):
        return pypto.deinterleave(x)[0]

    with pytest.raises(pypto.UserError, match="odd length 7"):
        odd(np.zeros((2, 7), np.float32))

    @pypto.jit
    def shapes(x: pypto.Tensor((2, 8), pypto.DT_FP32), y: pypto.Tensor((2, 6), pypto.DT_FP32)):
        return pypto.interleave(x, y)[0]

    with pytest.raises(pypto.UserError, match="must have one shape and dtype"):
        shapes(np.zeros((2, 8), np.float32), np.zeros((2, 6), np.float32))
