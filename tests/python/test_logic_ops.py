"""Comparisons (DT_BOOL), logical and bitwise ops, where, clip, isnan/isfinite/isinf/signbit:
against numpy on both backends, with NaN, infinities, signed zeros, broadcasting and tails."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

F32, F16, I32, I8, BOOL = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_INT32, pypto.DT_INT8, pypto.DT_BOOL
R, C = 19, 40

CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal}


def _floats(seed):
    x = rng(seed).integers(-3, 4, (R, C)).astype(np.float32)  # many equal pairs
    x[0, :6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40]
    return x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CMP))
def test_compare_fp32(name, mode):
    op = getattr(pypto, name)

    @pypto.jit
    def f(a: pypto.Tensor((R, C), F32), b: pypto.Tensor((R, C), F32), c: pypto.Tensor((1, C), F32)):
        pypto.set_vec_tile_shapes(8, 16)
        return op(a, b), op(a, 0.5), op(a, c), op(2.0, a)

    a, b = _floats(0), _floats(1)
    b[0, :6] = [np.nan, np.inf, np.inf, -0.0, 0.0, 1e-40]
    c = _floats(2)[:1]
    got = run_in(mode, f, a, b, c)
    ref = CMP[name]
    for g, w in zip(got, [ref(a, b), ref(a, np.float32(0.5)), ref(a, c), ref(np.float32(2.0), a)]):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("mode", MODES)
def test_compare_operators_and_int_scalars(mode):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), I8)):
        pypto.set_vec_tile_shapes(8, 16)
        return x < 2.5, x >= 2.5, x == 2.5, x != 2.5, x <= 1000, x > -1000.0, x == 3, x != x

    x = rng(3).integers(-128, 128, (R, C)).astype(np.int8)
    x[0, :4] = [2, 3, 127, -128]
    got = run_in(mode, f, x)
    x64 = x.astype(np.float64)
    wants = [x64 < 2.5, x64 >= 2.5, x64 == 2.5, x64 != 2.5, x64 <= 1000, x64 > -1000, x == 3, x != x]
    for g, w in zip(got, wants):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("mode", MODES)
def test_fp16_compare_rounds_the_scalar_like_torch(mode):
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F16)):
        return x < 0.1, x == 0.1

    x = torch.full((4, 8), 0.1, dtype=torch.float16)
    lt, eq = run_in(mode, f, x)
    np.testing.assert_array_equal(lt, (x < 0.1).numpy())
    np.testing.assert_array_equal(eq, (x == 0.1).numpy())


@pytest.mark.parametrize("mode", MODES)
def test_logical_and_bitwise(mode):
    @pypto.jit
    def f(a: pypto.Tensor((R, C), I32), b: pypto.Tensor((R, C), I32), m: pypto.Tensor((R, C), BOOL),
          x: pypto.Tensor((R, C), F32)):
        pypto.set_vec_tile_shapes(8, 16)
        return (pypto.logical_and(a, x), pypto.logical_or(m, b), pypto.logical_not(x), pypto.logical_not(m),
                pypto.logical_xor(a, m), a & b, a | 12, a ^ b, ~a, ~m, m & m, a << 3, a >> b, 1 << b)

    r = rng(4)
    a = r.integers(-50, 50, (R, C)).astype(np.int32)
    b = r.integers(0, 40, (R, C)).astype(np.int32)
    m = r.random((R, C)) < 0.5
    x = _floats(5)
    got = run_in(mode, f, a, b, m, x)
    shr = np.where(b >= 32, np.where(a < 0, -1, 0), a >> np.minimum(b, 31))
    shl1 = np.where(b >= 32, 0, np.left_shift(np.int32(1), np.minimum(b, 31), dtype=np.int64).astype(np.int32))
    wants = [np.logical_and(a, x), np.logical_or(m, b), np.logical_not(x), ~m, np.logical_xor(a, m), a & b, a | 12,
             a ^ b, ~a, ~m, m & m, a << 3, shr, shl1]
    for i, (g, w) in enumerate(zip(got, wants)):
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


@pytest.mark.parametrize("mode", MODES)
def test_where_tensors_scalars_and_broadcast(mode):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), F32), y: pypto.Tensor((1, C), F32), c: pypto.Tensor((R, 1), F32)):
        pypto.set_vec_tile_shapes(8, 16)
        return (pypto.where(x > 0, x, y), pypto.where(c > 0, x, 0.0), pypto.where(x < y, -1.5, x),
                pypto.where(pypto.isnan(x), 1.0, 2.0))

    x, y, c = _floats(6), _floats(7)[:1], _floats(8)[:, :1]
    got = run_in(mode, f, x, y, c)
    wants = [np.where(x > 0, x, y), np.where(c > 0, x, np.float32(0)), np.where(x < y, np.float32(-1.5), x),
             np.where(np.isnan(x), np.float32(1), np.float32(2))]
    for g, w in zip(got, wants):
        assert g.dtype == np.float32
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("mode", MODES)
def test_clip_and_predicates(mode):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), F32), lo: pypto.Tensor((1, C), F32), i: pypto.Tensor((R, C), I32)):
        pypto.set_vec_tile_shapes(8, 16)
        return (pypto.clip(x, -1.0, 1.0), pypto.clip(x, lo, 2.0), pypto.clip(x, max=0.5), pypto.clip(i, -2.5, 7.9),
                pypto.isnan(x), pypto.isinf(x), pypto.isfinite(x), pypto.signbit(x), pypto.isfinite(i))

    x = _floats(9)
    x[1, :3] = [-np.nan, -0.0, 0.0]
    lo = _floats(10)[:1]
    i = rng(11).integers(-10, 10, (R, C)).astype(np.int32)
    got = run_in(mode, f, x, lo, i)
    wants = [np.clip(x, -1, 1), np.minimum(np.maximum(x, lo), 2), np.minimum(x, np.float32(0.5)), np.clip(i, -2, 7),
             np.isnan(x), np.isinf(x), np.isfinite(x), np.signbit(x), np.isfinite(i)]
    for k, (g, w) in enumerate(zip(got, wants)):
        np.testing.assert_array_equal(g, w, err_msg=f"output {k}")


def test_logic_errors():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        return pypto.where(x, x, x)

    with pytest.raises(pypto.UserError, match=r"pypto.where: the condition must be a DT_BOOL tensor"):
        f(np.zeros((4, 8), np.float32))

    @pypto.jit
    def g(x: pypto.Tensor((4, 8), F32)):
        return pypto.bitwise_and(x, x)

    with pytest.raises(pypto.UserError, match=r"pypto.bitwise_and needs an integer or bool tensor"):
        g(np.zeros((4, 8), np.float32))

    @pypto.jit
    def h(x: pypto.Tensor((4, 8), F32), y: pypto.Tensor((4, 8), F16)):
        return x < y

    with pytest.raises(pypto.UserError, match=r"pypto.lt: operand dtypes differ"):
        h(np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float16))
