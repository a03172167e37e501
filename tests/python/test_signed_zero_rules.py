"""The numerics contract at its edges (docs/numerics.md): fp32 gives numpy's answer, fp16 / bf16
torch's, bit for bit, for sign(NaN) and the sign of a zero remainder; maximum / minimum of +0 and
-0 return the first operand (a Python scalar operand: the tensor's zero) at every dtype."""

from __future__ import annotations

import numpy as np
import pytest

import pypto

torch = pytest.importorskip("torch")

A = [0.0, -0.0, 4.8125, -4.8125, 3.0, -3.0, float("nan"), 1.0, 2.5, -7.0]
B = [-0.0, 0.0, -4.8125, 4.8125, -3.0, 3.0, 1.0, float("nan"), 2.5, 7.0]
N = len(A)
MODES = ["cpu", "interp"]


def _fn(op, dt):
    @pypto.jit
    def f(x: pypto.Tensor([N], dt), y: pypto.Tensor([N], dt)):
        return getattr(pypto, op)(x, y)
    return f


def _sign(dt):
    @pypto.jit
    def f(x: pypto.Tensor([N], dt)):
        return pypto.sign(x)
    return f


def _same_bits(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    assert np.all(both_nan | ((got == want) & (np.signbit(got) == np.signbit(want)))), (got, want)


@pytest.fixture(params=MODES)
def mode(request):
    pypto.set_runtime_options(run_mode=request.param)
    yield request.param
    pypto.reset_options()


@pytest.mark.parametrize("tdt,dt", [(torch.float16, pypto.DT_FP16), (torch.bfloat16, pypto.DT_BF16)])
def test_16_bit_sign_and_remainder_are_torchs(mode, tdt, dt):
    a, b = torch.tensor(A, dtype=tdt), torch.tensor(B, dtype=tdt)
    _same_bits(_sign(dt)(a).float().numpy(), torch.sign(a).float().numpy())
    r = _fn("remainder", dt)(a, b)
    want = torch.remainder(a, b)
    finite = ~torch.isnan(want)
    _same_bits(r[finite].float().numpy(), want[finite].float().numpy())


def test_fp32_sign_and_remainder_are_numpys(mode):
    a, b = np.array(A, np.float32), np.array(B, np.float32)
    _same_bits(_sign(pypto.DT_FP32)(a), np.sign(a))
    with np.errstate(all="ignore"):
        _same_bits(_fn("remainder", pypto.DT_FP32)(a, b), np.remainder(a, b))


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dt,npdt", [(pypto.DT_FP32, np.float32), (pypto.DT_FP16, np.float16)])
def test_max_min_of_signed_zeros_return_the_first_operand(mode, op, dt, npdt):
    a = np.array([0.0, -0.0, 0.0, -0.0] + [1.0] * (N - 4), npdt)
    b = np.array([-0.0, 0.0, 0.0, -0.0] + [2.0] * (N - 4), npdt)
    got = _fn(op, dt)(a, b)
    assert list(np.signbit(got[:4])) == [False, True, False, True]

    @pypto.jit
    def scalar_first(x: pypto.Tensor([N], dt)):
        return getattr(pypto, op)(-0.0, x)

    got = scalar_first(np.zeros(N, npdt))  # the tensor's +0, not the scalar's -0
    assert not np.any(np.signbit(got))
