"""0-d tensors: a reduction of a 1-D tensor without keepdim, a rank-0 output written with
``out[:] = v`` (PyPTO's form on any rank), rank-0 inputs (numpy 0-d arrays, numpy scalars, torch
0-d tensors) broadcast against other tensors, on both backends."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in


@pytest.mark.parametrize("mode", MODES)
def test_full_reductions_return_0d_arrays(mode):
    @pypto.jit
    def f(x: pypto.Tensor((37,), pypto.DT_FP32), m: pypto.Tensor((5, 9), pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(16, 8)
        return pypto.sum(x, 0), pypto.amax(x, -1), pypto.mean(x, 0), pypto.amin(pypto.amin(m, 1), 0)

    x = rng(0).standard_normal(37).astype(np.float32)
    x[3] = np.inf
    m = rng(1).integers(-100, 100, (5, 9)).astype(np.int32)
    s, mx, mean, mn = run_in(mode, f, x, m)
    for got, want in ((s, x.sum()), (mx, x.max()), (mean, x.mean()), (mn, m.min())):
        assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_rank0_output_and_input(mode):
    @pypto.jit
    def norm(x: pypto.Tensor((6, 10), pypto.DT_FP32), scale: pypto.Tensor([], pypto.DT_FP32),
             total: pypto.Tensor([], pypto.DT_FP32), y: pypto.Tensor((6, 10), pypto.DT_FP32)):
        s = pypto.sum(pypto.sum(x, 1), 0)  # 0-d
        total[:] = s * scale
        y[:] = x / s  # a 0-d operand broadcasts
        return total

    x = rng(2).random((6, 10)).astype(np.float32) + 0.5
    scale = np.array(2.5, np.float32)
    total, y = np.zeros((), np.float32), np.zeros((6, 10), np.float32)
    got = run_in(mode, norm, x, scale, total, y)
    assert got is total  # the written parameter itself is returned
    ref = x.sum(1).sum(0)
    np.testing.assert_allclose(total, ref * 2.5, rtol=1e-6)
    np.testing.assert_allclose(y, x / ref, rtol=1e-6)


def test_numpy_scalars_and_torch_0d_tensors():
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(s: pypto.Tensor([], pypto.DT_FP32), x: pypto.Tensor((3, 4), pypto.DT_FP32)):
        return x * s + pypto.sum(pypto.sum(x, 0), 0)

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(f(np.float32(3.0), x), x * 3 + x.sum())
    got = f(torch.tensor(3.0), torch.from_numpy(x))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), x * 3 + x.sum())


def test_assigning_more_than_one_element_to_a_0d_output_is_an_error():
    @pypto.jit
    def f(x: pypto.Tensor((4,), pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
        out[:] = x

    with pytest.raises(pypto.UserError, match=r"shape \(4,\) to the 0-d tensor %out: it must hold one element"):
        f(np.ones(4, np.float32), np.zeros((), np.float32))
