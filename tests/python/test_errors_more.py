"""More mistakes that must fail cleanly, each naming the user's line: NPU tile alignment,
reading or returning a tensor never written, `out = x` instead of `out[:] = x`."""

import numpy as np
import pytest

import pypto

HERE = __file__.rsplit("/", 1)[-1]


def test_unaligned_innermost_tile_dim_on_an_npu_model():
    @pypto.jit(pass_options={"machine": "a2a3"})
    def f(x: pypto.Tensor((8, 30), pypto.DT_FP32)) -> pypto.Tensor((8, 30), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(8, 30)
        return x + 1.0  # line: unaligned

    with pytest.raises(pypto.UserError) as e:
        f(np.zeros((8, 30), np.float32))
    msg = str(e.value)
    assert "innermost tile dim 30 of tile (8, 30) is 120 bytes, not a multiple of the 32-byte block of a2a3" in msg
    assert HERE in msg and "return x + 1.0" in msg
    assert "multiple of 8 elements" in msg
    # The host itself has no such constraint.
    @pypto.jit
    def g(x: pypto.Tensor((8, 30), pypto.DT_FP32)) -> pypto.Tensor((8, 30), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(8, 30)
        return x + 1.0

    np.testing.assert_array_equal(g(np.zeros((8, 30), np.float32)), np.ones((8, 30), np.float32))


def test_reading_a_tensor_never_written():
    @pypto.jit
    def f(x: pypto.Tensor((4, 32), pypto.DT_FP32)) -> pypto.Tensor((4, 32), pypto.DT_FP32):
        t = pypto.tensor((4, 32), pypto.DT_FP32)
        pypto.set_vec_tile_shapes(4, 32)
        return x + t

    with pytest.raises(pypto.UserError, match=r"pypto.add reads %tensor fp32\(4, 32\), which is never written"):
        f(np.zeros((4, 32), np.float32))


def test_returning_a_tensor_never_written():
    @pypto.jit
    def f(x: pypto.Tensor((4, 32), pypto.DT_FP32)) -> pypto.Tensor((4, 32), pypto.DT_FP32):
        out = pypto.tensor((4, 32), pypto.DT_FP32)
        return out

    with pytest.raises(pypto.UserError, match=r"returning %tensor fp32\(4, 32\), which is never written"):
        f(np.zeros((4, 32), np.float32))


def test_out_equals_x_instead_of_out_slice_assign():
    @pypto.jit
    def f(x: pypto.Tensor((4, 32), pypto.DT_FP32), out: pypto.Tensor((4, 32), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 32)
        out = x * 2.0  # noqa: F841 - the mistake under test

    with pytest.raises(pypto.UserError) as e:
        f(np.zeros((4, 32), np.float32), np.zeros((4, 32), np.float32))
    msg = str(e.value)
    assert "only rebinds the Python name 'out'" in msg
    assert "out = x * 2.0" in msg and HERE in msg
    assert "out[:] = ..." in msg
