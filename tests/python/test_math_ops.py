"""The elementwise math ops (tanh, sin, pow, floor_div, ...) against numpy (fp32: within 2 ulp of
the correctly rounded result, specials exact) and torch (fp16/bf16: fp32 inside, one rounding),
on both backends, on shapes with tails in both dims, fused with neighbours and alone."""

import math

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

torch = pytest.importorskip("torch")

F32, F16, BF16 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16
R, C = 37, 45  # tiles of 8 x 32: tails in both dims
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1.0, -1.0, 0.5, 3.0e38, -3.0e38, 1e-30, 88.7,
           -103.9, 1e6, 710.0, 2.0 ** -126]

# name -> (numpy-on-float64 reference, torch function, input range)
UNARY = {
    "tanh": (np.tanh, torch.tanh, (-12, 12)),
    "sin": (np.sin, torch.sin, (-100, 100)),
    "cos": (np.cos, torch.cos, (-100, 100)),
    "tan": (np.tan, torch.tan, (-3, 3)),
    "asin": (np.arcsin, torch.asin, (-1.1, 1.1)),
    "acos": (np.arccos, torch.acos, (-1.1, 1.1)),
    "atan": (np.arctan, torch.atan, (-50, 50)),
    "sinh": (np.sinh, torch.sinh, (-90, 90)),
    "cosh": (np.cosh, torch.cosh, (-90, 90)),
    "asinh": (np.arcsinh, torch.asinh, (-1e4, 1e4)),
    "acosh": (np.arccosh, torch.acosh, (0.5, 1e4)),
    "atanh": (np.arctanh, torch.atanh, (-1.1, 1.1)),
    "exp2": (np.exp2, torch.exp2, (-150, 130)),
    "expm1": (np.expm1, torch.expm1, (-20, 89)),
    "log": (np.log, torch.log, (-1, 1e6)),
    "log2": (np.log2, torch.log2, (-1, 1e6)),
    "log10": (np.log10, torch.log10, (-1, 1e6)),
    "log1p": (np.log1p, torch.log1p, (-1.5, 1e3)),
    "erf": (None, torch.erf, (-6, 6)),
    "erfc": (None, torch.erfc, (-6, 12)),
    "cbrt": (np.cbrt, None, (-1e6, 1e6)),
    "floor": (np.floor, torch.floor, (-1e3, 1e3)),
    "ceil": (np.ceil, torch.ceil, (-1e3, 1e3)),
    "trunc": (np.trunc, torch.trunc, (-1e3, 1e3)),
    "round": (np.rint, torch.round, (-1e3, 1e3)),
    "sign": (np.sign, None, (-2, 2)),
}


def _vectorize(f):
    return np.vectorize(f, otypes=[np.float64])


def _ref64(name):
    f = UNARY[name][0]
    if name == "erf":
        return _vectorize(math.erf)
    if name == "erfc":
        return _vectorize(math.erfc)
    return f


def _inputs(name, dtype, seed=0):
    lo, hi = UNARY[name][2]
    x = rng(seed).uniform(lo, hi, (R, C))
    if name == "round":  # halves: ties go to even
        x[0, :20] = np.arange(20) - 9.5
    flat = x.reshape(-1)
    flat[100:100 + len(SPECIAL)] = SPECIAL
    return x.astype(np.float32)


def _fp32_within(got, want64, ulps=2):
    """got (float32) equals want64 rounded to float32 within `ulps` ulp; specials exactly."""
    with np.errstate(over="ignore"):
        want = want64.astype(np.float32)
    got = np.asarray(got, np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaN positions differ")
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    fin = np.isfinite(want)
    g, w = got[fin].astype(np.float64), want[fin].astype(np.float64)
    zero = w == 0
    assert np.all(g[zero] == 0), "a zero result is not zero"
    spacing = np.spacing(np.abs(want[fin]).astype(np.float32)).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(np.float32(1e-45)))
    err = np.abs(g - w) / spacing
    assert np.all(err <= ulps), f"max error {err.max():.1f} ulp at {w[np.argmax(err)]!r} (got {g[np.argmax(err)]!r})"


def _unary_fn(name, dtype):
    op = getattr(pypto, name)

    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        pypto.set_vec_tile_shapes(8, 32)
        return op(x)

    return f


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_fp32(name, mode):
    x = _inputs(name, F32)
    got = run_in(mode, _unary_fn(name, F32), x)
    with np.errstate(all="ignore"):
        want = _ref64(name)(x.astype(np.float64))
    _fp32_within(got, want, ulps=2 if mode == "cpu" else 1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("name", sorted(n for n in UNARY if UNARY[n][1] is not None))
def test_unary_16bit_matches_torch(name, dtype, mode):
    tdt = torch.float16 if dtype == F16 else torch.bfloat16
    lo, hi = UNARY[name][2]
    x = torch.from_numpy(rng(1).uniform(max(lo, -6e4), min(hi, 6e4), (R, C)).astype(np.float32)).to(tdt)
    got = run_in(mode, _unary_fn(name, dtype), x)
    want = UNARY[name][1](x.float()).to(tdt)  # torch: fp32 inside, one rounding
    assert got.dtype == tdt
    g, w = got.float().numpy(), want.float().numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    fin = np.isfinite(w)
    # One rounding of an fp32 result within 2 ulp may land one 16-bit step away.
    step = np.spacing(np.abs(w[fin]).astype(np.float16 if dtype == F16 else np.float32)).astype(np.float64)
    if dtype == BF16:
        step = step * 65536
    assert np.all(np.abs(g[fin] - w[fin]) <= step + 1e-30)


def test_unary_int_inputs():
    """Integers pass through floor/ceil/trunc/round; exp2 / expm1 give fp32; sign stays int."""
    I32 = pypto.DT_INT32

    @pypto.jit
    def f(x: pypto.Tensor((4, 8), I32)):
        return pypto.floor(x) + pypto.ceil(x) + pypto.trunc(x) + pypto.round(x), pypto.exp2(x), pypto.sign(x)

    x = np.arange(-16, 16, dtype=np.int32).reshape(4, 8)
    a, b, c = f(x)
    np.testing.assert_array_equal(a, 4 * x)
    assert b.dtype == np.float32
    np.testing.assert_array_equal(b, np.exp2(x.astype(np.float64)).astype(np.float32))
    np.testing.assert_array_equal(c, np.sign(x))


def test_round_decimals_as_torch():
    @pypto.jit
    def f(x: pypto.Tensor((R, C), F32)):
        pypto.set_vec_tile_shapes(8, 32)
        return pypto.round(x, 2), pypto.round(x, -1)

    x = rng(2).uniform(-100, 100, (R, C)).astype(np.float32)
    a, b = f(x)
    t = torch.from_numpy(x)
    np.testing.assert_array_equal(a, torch.round(t, decimals=2).numpy())
    np.testing.assert_array_equal(b, torch.round(t, decimals=-1).numpy())


# --- binary ---------------------------------------------------------------------------------

BINARY = {
    "pow": (np.power, (0, 4), (-6, 6)),
    "atan2": (np.arctan2, (-10, 10), (-10, 10)),
    "hypot": (np.hypot, (-1e30, 1e30), (-1e30, 1e30)),
    "copysign": (np.copysign, (-10, 10), (-10, 10)),
    "floor_div": (np.floor_divide, (-100, 100), (-10, 10)),
    "remainder": (np.remainder, (-100, 100), (-10, 10)),
    "fmod": (np.fmod, (-100, 100), (-10, 10)),
}


def _binary_fn(name, dtype, ra=(R, C), rb=(R, C)):
    op = getattr(pypto, name)

    @pypto.jit
    def f(a: pypto.Tensor(ra, dtype), b: pypto.Tensor(rb, dtype)):
        pypto.set_vec_tile_shapes(8, 32)
        return op(a, b), op(a, 1.5), op(2.5, b)

    return f


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_fp32(name, mode):
    ref, ra, rb = BINARY[name]
    r = rng(3)
    a = r.uniform(*ra, (R, C)).astype(np.float32)
    b = r.uniform(*rb, (R, C)).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0], np.float32)
    a[0, :64 % C], b[0, :64 % C] = 0, 0
    for i, s in enumerate(specials):  # every pair of specials
        a[1 + i, :len(specials)] = s
        b[1 + i, :len(specials)] = specials
    got = run_in(mode, _binary_fn(name, F32), a, b)
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        wants = [ref(a64, b64), ref(a64, 1.5), ref(2.5, b64)]
        if name in ("floor_div", "remainder", "fmod"):  # numpy computes these in float32 itself
            wants = [ref(a, b), ref(a, np.float32(1.5)), ref(np.float32(2.5), b)]
    for g, w in zip(got, wants):
        _fp32_within(g, np.asarray(w, np.float64), ulps=2 if mode == "cpu" else 1)


@pytest.mark.parametrize("mode", MODES)
def test_binary_broadcast_and_int(mode):
    I32 = pypto.DT_INT32

    @pypto.jit
    def f(a: pypto.Tensor((R, C), I32), b: pypto.Tensor((1, C), I32), e: pypto.Tensor((R, 1), I32)):
        pypto.set_vec_tile_shapes(8, 32)
        return pypto.floor_div(a, b), a % b, a // 3, 7 % b, pypto.pow(b, e)

    r = rng(4)
    a = r.integers(-1000, 1000, (R, C)).astype(np.int32)
    b = r.integers(-9, 9, (1, C)).astype(np.int32)
    b[0, 0] = 0
    e = r.integers(0, 5, (R, 1)).astype(np.int32)
    got = run_in(mode, f, a, b, e)
    with np.errstate(all="ignore"):
        wants = [np.floor_divide(a, b), np.remainder(a, b), a // 3, 7 % b, np.power(b, e)]
    for g, w in zip(got, wants):
        np.testing.assert_array_equal(g, w)


def test_fused_gelu_tanh_matches_torch():
    """GELU (tanh form) written with pypto.tanh: one fused kernel, within 2 ulp-ish of torch."""

    @pypto.jit
    def gelu(x: pypto.Tensor((64, 1000), F32)):
        pypto.set_vec_tile_shapes(16, 1000)
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (pypto.tanh(inner) + 1.0)

    x = rng(5).standard_normal((64, 1000)).astype(np.float32) * 3
    got = gelu(x)
    want = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert gelu.last.program.block_graph().count("launch#") == 1, "GELU is one kernel"


def test_math_op_errors_name_the_op_and_line():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), pypto.DT_INT32)):
        return pypto.tanh(x)

    with pytest.raises(pypto.UserError, match=r"pypto.tanh needs a floating-point tensor.*int32\(4, 8\)"):
        f(np.zeros((4, 8), np.int32))

    @pypto.jit
    def g(x: pypto.Tensor((4, 8), F32), y: pypto.Tensor((3, 8), F32)):
        return pypto.atan2(x, y)

    with pytest.raises(pypto.UserError, match=r"pypto.atan2: operand shapes"):
        g(np.zeros((4, 8), np.float32), np.zeros((3, 8), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_lrelu_prelu_gcd_axpy_expand_exp_dif(mode):
    I32 = pypto.DT_INT32

    @pypto.jit
    def f(x: pypto.Tensor((4, 6, 10), F32), w: pypto.Tensor((6,), F32), a: pypto.Tensor((4, 10), I32),
          b: pypto.Tensor((4, 10), I32), y: pypto.Tensor((4, 6, 10), F32), m: pypto.Tensor((4, 6, 1), F32)):
        pypto.set_vec_tile_shapes(2, 4, 8)
        r = pypto.lrelu(x, 0.2), pypto.prelu(x, w), pypto.expand_exp_dif(x, m)
        pypto.axpy_(y, x, 0.5)
        pypto.set_vec_tile_shapes(2, 8)
        return (*r, pypto.gcd(a, b), pypto.gcd(a, 12))

    r = rng(7)
    x = r.standard_normal((4, 6, 10)).astype(np.float32)
    w = r.uniform(0, 1, 6).astype(np.float32)
    a = r.integers(-60, 60, (4, 10)).astype(np.int32)
    b = r.integers(-60, 60, (4, 10)).astype(np.int32)
    a[0, :3], b[0, :3] = [0, 0, -7], [0, 5, 0]
    y = r.standard_normal((4, 6, 10)).astype(np.float32)
    m = x.max(-1, keepdims=True)
    y0 = y.copy()
    l1, l2, e, g1, g2 = run_in(mode, f, x, w, a, b, y, m)
    np.testing.assert_array_equal(l1, np.where(x < 0, x * np.float32(0.2), x))
    np.testing.assert_array_equal(l2, np.where(x < 0, x * w[None, :, None], x))
    np.testing.assert_allclose(e, np.exp(x - m), rtol=3e-7)
    np.testing.assert_array_equal(y, y0 + x * np.float32(0.5))
    np.testing.assert_array_equal(g1, np.gcd(a, b))
    np.testing.assert_array_equal(g2, np.gcd(a, 12))


def test_axpy_on_a_view_rebinds_it_and_fp16_rounds_once():
    """PyPTO's axpy_ is ``y.move(alpha * x + y)``: a pypto.view takes the result as its value (the
    viewed parameter keeps its data, as PyPTO's test_axpy.py expects); fp16 computes in fp32."""
    @pypto.jit
    def f(a: pypto.Tensor((64, 64), F32), b: pypto.Tensor((64, 64), F32), out: pypto.Tensor((64, 64), F32)):
        for i in pypto.loop(2):
            for j in pypto.loop(2):
                va = pypto.view(a, [32, 32], [i * 32, j * 32])
                vb = pypto.view(b, [32, 32], [i * 32, j * 32])
                pypto.set_vec_tile_shapes(32, 32)
                va.axpy_(vb, 2.0)
                pypto.assemble(va, [i * 32, j * 32], out)

    r = rng(8)
    a, b = r.standard_normal((2, 64, 64)).astype(np.float32)
    a0, out = a.copy(), np.zeros((64, 64), np.float32)
    f(a, b, out)
    np.testing.assert_array_equal(a, a0)  # the viewed parameter is not written
    np.testing.assert_array_equal(out, a0 + np.float32(2.0) * b)

    @pypto.jit
    def h(y: pypto.Tensor((5, 33), pypto.DT_FP16), x: pypto.Tensor((5, 1), pypto.DT_FP16)):
        y.axpy_(x, 3.0)

    y = r.standard_normal((5, 33)).astype(np.float16)
    x = r.standard_normal((5, 1)).astype(np.float16)
    want = (y.astype(np.float32) + np.float32(3.0) * x.astype(np.float32)).astype(np.float16)
    h(y, x)
    np.testing.assert_array_equal(y, want)

    @pypto.jit
    def bad(y: pypto.Tensor((4, 8), pypto.DT_FP16), x: pypto.Tensor((4, 8), F32)):
        pypto.axpy_(y, x)

    with pytest.raises(pypto.UserError, match=r"pypto.axpy_: y .* the dtypes must be"):
        bad(np.zeros((4, 8), np.float16), np.zeros((4, 8), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_quantize_dequantize(mode):
    I8 = pypto.DT_INT8

    @pypto.jit
    def f(x: pypto.Tensor((6, 40), F32), s: pypto.Tensor((6,), F32), q: pypto.Tensor((6, 40), I8),
          sc: pypto.Tensor((40,), F32), zp: pypto.Tensor((40,), F32)):
        pypto.set_vec_tile_shapes(4, 16)
        return (pypto.quantize(x, s, I8, -1), pypto.quantize(x, sc, pypto.DT_UINT8, -2, zp),
                pypto.dequantize(q, s, pypto.DT_FP32, -1), pypto.dequantize(q, sc, axis=-2, zero_points=zp))

    r = rng(8)
    x = r.standard_normal((6, 40)).astype(np.float32) * 3
    s = r.uniform(10, 80, 6).astype(np.float32)
    q = r.integers(-128, 128, (6, 40)).astype(np.int8)
    sc = r.uniform(0.01, 0.1, 40).astype(np.float32)
    zp = r.integers(0, 10, 40).astype(np.float32)
    a, b, c, d = run_in(mode, f, x, s, q, sc, zp)
    np.testing.assert_array_equal(a, np.clip(np.rint(x * s[:, None]), -128, 127).astype(np.int8))
    np.testing.assert_array_equal(b, np.clip(np.rint(x * sc + zp), 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(c, q.astype(np.float32) * s[:, None])
    np.testing.assert_array_equal(d, (q.astype(np.float32) - zp) * sc)  # TDEQUANT subtracts
