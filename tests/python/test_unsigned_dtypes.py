"""DT_UINT16, DT_UINT32 and DT_UINT64 (beside DT_UINT8): arithmetic that wraps, logical shifts,
comparisons, casts that saturate, reductions, movement and index ops, on both backends against
numpy, with values at the dtype's bounds (uint64 above 2^63) and tails in both dims."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

R, C = 13, 40  # tiles of 8 x 16: tails in both dims
UNSIGNED = [(pypto.DT_UINT8, np.uint8), (pypto.DT_UINT16, np.uint16), (pypto.DT_UINT32, np.uint32),
            (pypto.DT_UINT64, np.uint64)]
IDS = ["uint8", "uint16", "uint32", "uint64"]


def _values(npdt, seed, shape=(R, C)):
    """Random values over the whole range, with 0, 1, max and max - 1 in the first row."""
    info = np.iinfo(npdt)
    x = rng(seed).integers(0, info.max, shape, dtype=npdt, endpoint=True)
    x[0, :5] = [0, 1, info.max, info.max - 1, info.max // 2 + 1]
    return x


def _assert_outputs(got, wants):
    for k, (g, w) in enumerate(zip(got, wants)):
        assert g.dtype == w.dtype, f"output {k}: {g.dtype} vs {w.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=f"output {k}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt,npdt", UNSIGNED, ids=IDS)
def test_arithmetic_wraps_like_numpy(dt, npdt, mode):
    @pypto.jit
    def f(a: pypto.Tensor((R, C), dt), b: pypto.Tensor((R, C), dt)):
        pypto.set_vec_tile_shapes(8, 16)
        return (a + b, a - b, a * b, pypto.maximum(a, b), pypto.minimum(a, b), pypto.abs(a),
                pypto.floor_div(a, b), pypto.fmod(a, b), pypto.remainder(a, b), a + 7, a * 3)

    a, b = _values(npdt, 1), _values(npdt, 2)
    b[1, :3] = [1, 0, npdt(np.iinfo(npdt).max)]  # x // 0 and x % 0 are 0 here (numpy: 0 with a warning)
    got = run_in(mode, f, a, b)
    with np.errstate(divide="ignore"):
        wants = [a + b, a - b, a * b, np.maximum(a, b), np.minimum(a, b), a, np.floor_divide(a, b), np.fmod(a, b),
                 np.remainder(a, b), a + npdt(7), a * npdt(3)]
    _assert_outputs(got, wants)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt,npdt", UNSIGNED, ids=IDS)
def test_bitwise_shifts_and_comparisons(dt, npdt, mode):
    bits = 8 * np.dtype(npdt).itemsize

    @pypto.jit
    def f(a: pypto.Tensor((R, C), dt), b: pypto.Tensor((R, C), dt), n: pypto.Tensor((R, C), dt)):
        pypto.set_vec_tile_shapes(8, 16)
        return (a & b, a | b, a ^ b, ~a, a << n, a >> n, a >> 1, a < b, a >= b, pypto.eq(a, b), pypto.ne(a, b),
                pypto.where(a > b, a, b))

    a, b = _values(npdt, 3), _values(npdt, 4)
    b[2] = a[2]  # equal pairs
    n = rng(5).integers(0, bits + 3, (R, C)).astype(npdt)  # amounts past the width give 0
    got = run_in(mode, f, a, b, n)
    inside = n < bits
    shl = np.where(inside, a << np.where(inside, n, 0), 0).astype(npdt)
    shr = np.where(inside, a >> np.where(inside, n, 0), 0).astype(npdt)  # logical: no sign fill
    wants = [a & b, a | b, a ^ b, ~a, shl, shr, a >> 1, a < b, a >= b, a == b, a != b, np.where(a > b, a, b)]
    _assert_outputs(got, wants)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt,npdt", UNSIGNED, ids=IDS)
def test_casts_round_once_and_saturate(dt, npdt, mode):
    info = np.iinfo(npdt)

    @pypto.jit
    def f(a: pypto.Tensor((R, C), dt), x: pypto.Tensor((R, C), pypto.DT_FP32),
          i: pypto.Tensor((R, C), pypto.DT_INT64)):
        pypto.set_vec_tile_shapes(8, 16)
        return (pypto.cast(a, pypto.DT_FP32), pypto.cast(a, pypto.DT_FP16), pypto.cast(a, pypto.DT_INT64),
                pypto.cast(x, dt), pypto.cast(i, dt), pypto.cast(a, pypto.DT_UINT8))

    a = _values(npdt, 6)
    x = rng(7).uniform(-10, float(info.max) * 1.5, (R, C)).astype(np.float32)
    x[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 2.5, -0.7]  # NaN -> 0, +inf -> max, -inf -> 0; truncates
    i = rng(8).integers(-(2 ** 40), 2 ** 62, (R, C), dtype=np.int64)
    got = run_in(mode, f, a, x, i)
    with np.errstate(over="ignore"):
        to_f16 = a.astype(np.float16)
    sat_x = np.where(np.isnan(x), 0, np.clip(np.trunc(x), 0, float(info.max)))
    want_x = np.array([int(v) if v < float(info.max) else int(info.max) for v in sat_x.ravel()],
                      dtype=object).astype(npdt).reshape(R, C)
    wants = [a.astype(np.float32), to_f16, np.clip(a, 0, np.iinfo(np.int64).max).astype(np.int64), want_x,
             np.clip(i, 0, info.max).astype(npdt), np.clip(a, 0, 255).astype(np.uint8)]
    _assert_outputs(got, wants)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt,npdt", UNSIGNED, ids=IDS)
def test_reductions_and_scans(dt, npdt, mode):
    @pypto.jit
    def f(a: pypto.Tensor((R, C), dt)):
        pypto.set_vec_tile_shapes(8, 16)
        return (pypto.sum(a, -1, keepdim=True), pypto.amax(a, 0), pypto.amin(a, -1), pypto.argmax(a, -1),
                pypto.cumsum(a, 1))

    a = _values(npdt, 9)
    got = run_in(mode, f, a)
    scan_dt = np.int64 if npdt == np.uint8 else np.uint64
    wants = [a.sum(-1, keepdims=True, dtype=npdt), a.max(0), a.min(-1), a.argmax(-1).astype(np.int32),
             np.cumsum(a, 1, dtype=scan_dt)]
    _assert_outputs(got, wants)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt,npdt", UNSIGNED, ids=IDS)
def test_movement_index_and_sort(dt, npdt, mode):
    @pypto.jit
    def f(a: pypto.Tensor((R, C), dt), idx: pypto.Tensor((5,), pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(8, 16)
        vals, ids = pypto.topk(a, 4, -1)
        return (pypto.transpose(a, 0, 1), pypto.concat([a, a], 0), pypto.index_select(a, 0, idx), vals, ids,
                pypto.reshape(a, [C, R]))

    a = _values(npdt, 10)
    idx = np.array([12, 0, 3, 3, 7], np.int32)
    got = run_in(mode, f, a, idx)
    order = np.argsort(-a.astype(np.float64) if npdt == np.uint64 else -a.astype(np.int64), -1, kind="stable")[:, :4]
    wants = [a.T, np.concatenate([a, a], 0), a[idx], np.take_along_axis(a, order, -1), None, a.reshape(C, R)]
    for k, (g, w) in enumerate(zip(got, wants)):
        if w is None:  # indices: the values they name are the top 4 (ties may pick either)
            np.testing.assert_array_equal(np.take_along_axis(a, g.astype(np.int64), -1), wants[3])
            continue
        np.testing.assert_array_equal(g, w, err_msg=f"output {k}")


def test_uint64_above_two_to_the_63():
    """Values past INT64_MAX keep their order and convert to float exactly-rounded."""
    @pypto.jit
    def f(a: pypto.Tensor((2, 4), pypto.DT_UINT64), b: pypto.Tensor((2, 4), pypto.DT_UINT64)):
        return a < b, pypto.cast(a, pypto.DT_FP32), pypto.maximum(a, b), pypto.sum(a, -1)

    big = np.uint64(2 ** 63)
    a = np.array([[big, big + np.uint64(1), np.uint64(2 ** 64 - 1), 5], [0, 1, big - np.uint64(1), 2 ** 40]],
                 np.uint64)
    b = np.array([[1, big + np.uint64(2), 0, big], [big, 0, big, 3]], np.uint64)
    lt, f32, mx, s = f(a, b)
    np.testing.assert_array_equal(lt, a < b)
    np.testing.assert_array_equal(f32, a.astype(np.float32))
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(s, a.sum(-1, dtype=np.uint64))


@pytest.mark.parametrize("dt,torch_name", [(pypto.DT_UINT16, "uint16"), (pypto.DT_UINT32, "uint32"),
                                           (pypto.DT_UINT64, "uint64")])
def test_torch_tensors_in_and_out(dt, torch_name):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, torch_name)

    @pypto.jit
    def f(a: pypto.Tensor((R, C), dt)):
        return a + 1

    a = torch.from_numpy(_values(np.dtype(torch_name).type, 11))
    out = f(a)
    assert isinstance(out, torch.Tensor) and out.dtype == tdt
    np.testing.assert_array_equal(out.numpy(), a.numpy() + np.dtype(torch_name).type(1))
    assert pypto.from_torch(a, dtype=dt) is a


def test_unannotated_parameters_take_the_arrays_dtype():
    @pypto.jit
    def f(a: pypto.Tensor()):
        return a * 2

    for npdt in (np.uint16, np.uint32, np.uint64):
        a = _values(npdt, 12, (3, 5))
        got = f(a)
        assert got.dtype == npdt
        np.testing.assert_array_equal(got, a * npdt(2))


def test_errors_name_the_op_and_dtype():
    @pypto.jit
    def exp_of_uint(a: pypto.Tensor((4, 8), pypto.DT_UINT32)):
        return pypto.exp(a)

    with pytest.raises(pypto.UserError, match="exp.*uint32"):
        exp_of_uint(np.zeros((4, 8), np.uint32))

    @pypto.jit
    def negative_scalar(a: pypto.Tensor((4, 8), pypto.DT_UINT16)):
        return a + (-1)

    with pytest.raises(pypto.UserError, match=r"uint16 \[0, 65535\]"):
        negative_scalar(np.zeros((4, 8), np.uint16))

    @pypto.jit
    def wrong(a: pypto.Tensor((4, 8), pypto.DT_UINT32)):
        return a + 1

    with pytest.raises(pypto.UserError, match="expects dtype uint32"):
        wrong(np.zeros((4, 8), np.int32))
