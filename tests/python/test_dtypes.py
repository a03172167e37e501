"""fp32, fp16 (inputs/outputs and via cast) and int32 programs against numpy."""

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng, uniform

F32, F16, I32 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_INT32
SHAPE, TILE = (5, 11), (4, 8)  # tails in both dims


def make(in_dt, out_dt, body, oshape=SHAPE, shape=SHAPE, tile=TILE):
    @pypto.jit
    def f(x: pypto.Tensor(shape, in_dt)) -> pypto.Tensor(oshape, out_dt):
        pypto.set_vec_tile_shapes(*tile)
        out = pypto.tensor(oshape, out_dt)
        out[:] = body(x)
        return out
    return f


def assert_fp16_close(got, ref, ulps=1):
    """Within `ulps` fp16 ulps of the exactly rounded reference."""
    assert got.dtype == np.float16
    ref16 = np.asarray(ref, np.float64).astype(np.float16)
    spacing = np.spacing(np.abs(ref16)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - ref16.astype(np.float64))
    assert (err <= ulps * spacing + 1e-7).all(), f"max err {err.max()} (ulp {spacing[err.argmax() // 1]})"


def test_fp16_in_fp16_out_arithmetic_matches_numpy_fp16():
    x = (randn(rng(0), SHAPE) * 3).astype(np.float16)
    y = make(F16, F16, lambda t: t * 2.0 + 1.0)(x)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, x * np.float16(2) + np.float16(1))


def test_fp16_exp():
    x = uniform(rng(1), SHAPE, -4, 4).astype(np.float16)
    y = make(F16, F16, pypto.exp)(x)
    assert_fp16_close(y, np.exp(x.astype(np.float64)))


def test_fp16_to_fp32_cast_is_exact():
    x = (randn(rng(2), SHAPE) * 100).astype(np.float16)
    y = make(F16, F32, lambda t: pypto.cast(t, F32))(x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, x.astype(np.float32))


def test_fp32_to_fp16_cast_rounds_to_nearest_even():
    vals = np.array([1e5, -1e5, 65504, 65520, 1e-8, 0.1, 1 / 3, 2 / 3, np.inf, -np.inf, 1 + 2 ** -11],
                    np.float32)
    x = np.tile(vals, (5, 1))
    y = make(F32, F16, lambda t: pypto.cast(t, F16))(x)
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16)
    np.testing.assert_array_equal(y, ref)


def test_fp16_compute_in_fp32_via_cast():
    """Softmax of an fp16 input computed in fp32 and cast back."""
    x = (randn(rng(3), SHAPE) * 2).astype(np.float16)

    def body(t):
        t32 = pypto.cast(t, F32)
        e = pypto.exp(t32 - pypto.amax(t32, dim=-1, keepdim=True))
        return pypto.cast(e / pypto.sum(e, dim=-1, keepdim=True), F16)

    y = make(F16, F16, body)(x)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    assert_fp16_close(y, e / e.sum(-1, keepdims=True))


def test_fp16_amax_with_tail():
    x = (randn(rng(4), (5, 37))).astype(np.float16)
    y = make(F16, F16, lambda t: pypto.amax(t, dim=-1, keepdim=True), oshape=(5, 1), shape=(5, 37),
             tile=(2, 16))(x)
    np.testing.assert_array_equal(y, x.max(-1, keepdims=True))


def test_fp16_sum_close():
    x = uniform(rng(5), (5, 37), 0.5, 1.5).astype(np.float16)
    y = make(F16, F16, lambda t: pypto.sum(t, dim=-1, keepdim=True), oshape=(5, 1), shape=(5, 37),
             tile=(2, 16))(x)
    ref = x.astype(np.float64).sum(-1, keepdims=True)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=4e-3)


def test_fp16_overflow_to_inf():
    x = np.full(SHAPE, 300.0, np.float16)
    y = make(F16, F16, lambda t: t * t)(x)
    assert np.isposinf(y).all()


def test_int32_arithmetic():
    x = (np.arange(55, dtype=np.int32).reshape(SHAPE) - 20) * 1000
    y = make(I32, I32, lambda t: t * 3 + t - 7)(x)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, x * 3 + x - 7)


@pytest.mark.parametrize("name,op,ref", [
    ("max", lambda t: pypto.maximum(t, 0), lambda a: np.maximum(a, 0)),
    ("min", lambda t: pypto.minimum(t, 5), lambda a: np.minimum(a, 5)),
    ("abs", pypto.abs, np.abs),
    ("neg", lambda t: -t, np.negative),
    ("relu", pypto.relu, lambda a: np.maximum(a, 0)),
])
def test_int32_unary_like(name, op, ref):
    x = np.arange(55, dtype=np.int32).reshape(SHAPE) - 27
    np.testing.assert_array_equal(make(I32, I32, op)(x), ref(x))


def test_int32_large_values_are_exact():
    """Values above 2**24 must not go through fp32."""
    x = np.full(SHAPE, 2 ** 24 + 1, np.int32)
    np.testing.assert_array_equal(make(I32, I32, lambda t: t + 2)(x), x + 2)


@pytest.mark.parametrize("name,op,ref", [
    ("sum", pypto.sum, np.sum), ("amax", pypto.amax, np.max), ("amin", pypto.amin, np.min)])
def test_int32_reductions_with_tail(name, op, ref):
    x = rng(6).integers(-1000, 1000, size=(5, 37)).astype(np.int32)
    f = make(I32, I32, lambda t: op(t, dim=-1, keepdim=True), oshape=(5, 1), shape=(5, 37), tile=(2, 16))
    np.testing.assert_array_equal(f(x), ref(x, axis=-1, keepdims=True))


def test_int32_fp32_casts():
    vals = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3e9, -3e9, 2.4, 2.6, -2.6, 7.0], np.float32)
    x = np.tile(vals, (5, 1))
    y = make(F32, I32, lambda t: pypto.cast(t, I32))(x)  # PyPTO's default: truncate, as torch's .to(int)
    ref = np.clip(np.trunc(vals.astype(np.float64)), -2 ** 31, 2 ** 31 - 1).astype(np.int64)
    np.testing.assert_array_equal(y, np.tile(ref, (5, 1)))
    y = make(F32, I32, lambda t: pypto.cast(t, I32, pypto.CastMode.CAST_RINT))(x)
    ref = np.clip(np.rint(vals.astype(np.float64)), -2 ** 31, 2 ** 31 - 1).astype(np.int64)
    np.testing.assert_array_equal(y, np.tile(ref, (5, 1)))
    xi = np.arange(55, dtype=np.int32).reshape(SHAPE) - 20
    np.testing.assert_array_equal(make(I32, F32, lambda t: pypto.cast(t, F32))(xi), xi.astype(np.float32))


def test_int32_times_fractional_scalar_not_silently_truncated():
    x = np.arange(55, dtype=np.int32).reshape(SHAPE) - 20
    try:
        y = make(I32, I32, lambda t: t * 2.5)(x)
    except pypto.UserError:
        return  # refusing is acceptable
    np.testing.assert_array_equal(y, (x * 2.5).astype(np.int32))


def test_fp32_precision_path():
    x = randn(rng(7), SHAPE)
    assert_close(make(F32, F32, lambda t: pypto.exp(t) / 7.0)(x), np.exp(x.astype(np.float64)) / 7.0)


def test_bf16_is_bf16_at_the_call_boundary():
    # A torch bf16 tensor is not an int16 one, nor numpy int16 a bf16 one (no bits are
    # reinterpreted); errors name the framework, the dtype and the caller's line.
    torch = pytest.importorskip("torch")

    @pypto.jit
    def to_bf16(x: pypto.Tensor((4, 8), pypto.DT_BF16)):
        return x * 2.0

    @pypto.jit
    def to_i16(x: pypto.Tensor((4, 8), pypto.DT_INT16)):
        return x + 1

    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    with pytest.raises(pypto.UserError, match=r"(?s)expects dtype int16, got a torch tensor of dtype torch.bfloat16"
                                              r".*test_dtypes.py"):
        to_i16(torch.from_numpy(x).bfloat16())
    with pytest.raises(pypto.UserError, match=r"expects dtype int16, got bf16 bit patterns \(numpy uint16\)"):
        to_i16(pypto.to_bf16(x))
    with pytest.raises(pypto.UserError, match=r"(?s)expects dtype bf16, got a numpy array of dtype int16.*"
                                              r"hint: pass a torch.bfloat16 tensor.*pypto.to_bf16"):
        to_bf16(x.astype(np.int16))
    with pytest.raises(pypto.UserError, match=r"(?s)expects dtype bf16, got a numpy array of dtype float32.*to_bf16"):
        to_bf16(x)
    with pytest.raises(pypto.UserError, match=r"expects dtype bf16, got a torch tensor of dtype torch.float64"):
        to_bf16(torch.from_numpy(x).double())
    # The two ways in: torch bf16 (a torch bf16 result) and numpy uint16 bit patterns.
    got = to_bf16(torch.from_numpy(x).bfloat16())
    assert got.dtype == torch.bfloat16
    np.testing.assert_array_equal(got.float().numpy(), (torch.from_numpy(x).bfloat16() * 2.0).float().numpy())
    bits = to_bf16(pypto.to_bf16(x))
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(pypto.from_bf16(bits), got.float().numpy())
    # to_bf16 rounds to nearest even, like torch, NaN and inf included.
    v = np.array([1.00390625, 1.01171875, np.nan, np.inf, -np.inf, -0.0, 3.0e38, 1e-40], np.float32)
    np.testing.assert_array_equal(pypto.to_bf16(v)[[0, 1, 3, 4, 5, 6, 7]],
                                  torch.from_numpy(v).bfloat16().view(torch.int16).numpy().view(np.uint16)[
                                      [0, 1, 3, 4, 5, 6, 7]])
    assert np.isnan(pypto.from_bf16(pypto.to_bf16(v))[2])
