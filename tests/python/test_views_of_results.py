"""Slices and views of intermediate results (a value computed in the function, not a parameter):
the value is kept in global memory and the slice reads its window there, on both backends.
Slice bounds of a batch tile simplify with the loop index's range (CANN PyPTO's attention
example: valid_shape = [min((i + 1) * t, B) - i * t, ...])."""

import numpy as np
import pytest

import pypto
from _util import MODES, assert_close, randn, rng

F32 = pypto.DT_FP32


@pytest.mark.parametrize("mode", MODES)
def test_slice_of_a_result_inside_a_loop(mode):
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((6, 4, 40), F32), out: pypto.Tensor((6, 4, 40), F32)):
        pypto.set_vec_tile_shapes(2, 4, 16)
        t = pypto.exp(x) * 2.0                      # an intermediate result
        for i in pypto.loop(0, 3, 1, name="L", idx_name="i"):
            v = t[i * 2:i * 2 + 2, :, :]            # a window of it
            out[i * 2:, ...] = v - pypto.amax(v, dim=-1, keepdim=True)

    x = randn(rng(1), (6, 4, 40))
    out = np.zeros_like(x)
    f(x, out)
    t = np.exp(x.astype(np.float64)) * 2
    assert_close(out, t - t.max(-1, keepdims=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_view_with_valid_shape_of_a_transposed_result(mode):
    B, S, H, D = 3, 8, 2, 16

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((B, S, H * D), F32), out: pypto.Tensor((B, H, S, D), F32)):
        pypto.set_vec_tile_shapes(1, 2, 8, 16)
        q = pypto.transpose(pypto.reshape(x * 1.0, [B, S, H, D]), 1, 2)   # (B, H, S, D), computed
        for idx in pypto.loop(0, B, 1, name="LOOP_b", idx_name="idx"):
            end = min((idx + 1) * 1, B)
            v = pypto.view(q, [1, H, S, D], [idx, 0, 0, 0], valid_shape=[end - idx, H, S, D])
            out[idx:, ...] = pypto.exp(v)

    x = randn(rng(2), (B, S, H * D))
    out = np.zeros((B, H, S, D), np.float32)
    f(x, out)
    ref = np.exp(x.reshape(B, S, H, D).transpose(0, 2, 1, 3).astype(np.float64))
    assert_close(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_slice_of_a_result_fused_chain_stays_correct(mode):
    # The slice is read by the kernel after the one computing it (never fused with it).
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((16, 64), F32)) -> pypto.Tensor((8, 32), F32):
        pypto.set_vec_tile_shapes(8, 32)
        y = x + 1.0
        out = pypto.tensor((8, 32), F32)
        out[:] = y[4:12, 16:48] * 3.0
        return out

    x = randn(rng(3), (16, 64))
    assert_close(f(x), (x + 1.0)[4:12, 16:48] * 3.0)


def test_reshape_of_a_batch_tile_with_a_symbolic_valid_extent():
    # min((idx + 1), 2) - idx is 1 inside the loop, so the reshape's element count matches.
    @pypto.jit
    def f(x: pypto.Tensor((2, 4, 8), F32), out: pypto.Tensor((2, 32), F32)):
        pypto.set_vec_tile_shapes(1, 4, 8)
        for idx in pypto.loop(0, 2, 1, name="L", idx_name="idx"):
            v = pypto.view(x, [1, 4, 8], [idx, 0, 0], valid_shape=[min(idx + 1, 2) - idx, 4, 8])
            out[idx:, ...] = pypto.reshape(v * 2.0, [1, 32])

    x = randn(rng(4), (2, 4, 8))
    out = np.zeros((2, 32), np.float32)
    f(x, out)
    assert_close(out, (x * 2.0).reshape(2, 32))
