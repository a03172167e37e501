"""tools/tensor_semantics: the numpy meaning of every tensor-graph op against the native backend.

Each case builds a small program, runs it (the cpu backend's answer), evaluates the same call's
tensor graph with numpy (verify.TensorGraphEvaluator) and compares: exactly for integer and bool
results and for the exact float ops, within a few ulps of the result's dtype for the math
functions (docs/numerics.md: fp32 transcendental functions within 2 ulp; 16-bit ones compute in
fp32 and round once)."""

import inspect

import numpy as np
import pytest

import pypto
from pypto.tools import tensor_semantics
from pypto.tools.tensor_semantics import NoSemantics, evaluate, round_float
from pypto.tools.verify import TensorGraphEvaluator

from _util import rng

P = pypto
FLOAT_DTS = {"fp32": P.DT_FP32, "fp16": P.DT_FP16, "bf16": P.DT_BF16}
INT_DTS = {"int8": P.DT_INT8, "int16": P.DT_INT16, "int32": P.DT_INT32, "int64": P.DT_INT64, "uint8": P.DT_UINT8,
           "uint16": P.DT_UINT16, "uint32": P.DT_UINT32, "uint64": P.DT_UINT64}
DTS = {**FLOAT_DTS, **INT_DTS, "bool": P.DT_BOOL}
SHAPE, TILE = (5, 37), (4, 16)  # tails in both dims
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3e38, -7e4, 0.5, -2.5]
PREC = {"fp32": (24, -126), "fp16": (11, -14), "bf16": (8, -126)}


Evaluator = TensorGraphEvaluator  # (reshape values and scatter are run by verify.py itself)


# --- helpers -------------------------------------------------------------------------------------

def to_storage(v, dt):
    """float64 / int values as a `dt` argument (bf16: its bits); too large ones overflow to inf."""
    with np.errstate(over="ignore"):
        if dt == "bf16":
            return pypto.to_bf16(np.asarray(v, np.float32))
        return np.asarray(v).astype(tensor_semantics.storage_dtype(dt))


def numbers(a, dt):
    return pypto.from_bf16(a).astype(np.float64) if dt == "bf16" else np.asarray(a).astype(np.float64)


def ulp(v, dt):
    p, emin = PREC[dt]
    _, e = np.frexp(np.where(np.isfinite(v), v, 1.0))
    return np.ldexp(1.0, np.maximum(e - 1, emin) - (p - 1))


def assert_same(got, ref, dt, ulps=0, what=""):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} vs {ref.shape}"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype} vs {ref.dtype}"
    if dt not in FLOAT_DTS:
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    g, r = numbers(got, dt), numbers(ref, dt)
    nan = np.isnan(r)
    np.testing.assert_array_equal(np.isnan(g), nan, err_msg=f"{what}: NaN positions")
    g, r = np.where(nan, 0.0, g), np.where(nan, 0.0, r)
    inf = np.isinf(r) | np.isinf(g)
    np.testing.assert_array_equal(g[inf], r[inf], err_msg=f"{what}: infinities")
    g, r = np.where(inf, 0.0, g), np.where(inf, 0.0, r)
    bad = np.abs(g - r) > ulps * ulp(r, dt)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {r.size} differ by more than {ulps} ulp; first at {at}: "
                             f"backend {g[at]!r}, numpy semantics {r[at]!r} ({abs(g[at] - r[at]) / ulp(r, dt)[at]:.3g} "
                             "ulp)")


def check(fn, *args, ulps=0):
    """fn(*args) on the cpu backend against its tensor graph evaluated with numpy: the returned
    values and the parameters the call writes. `ulps`: one bound, or a bound per result label
    (the keys of the dict a `program` body returns; 0 for the others)."""
    before = [np.array(a, copy=True) for a in args]
    outs = fn(*args)
    outs = list(outs) if isinstance(outs, tuple) else [] if outs is None else [outs]
    graph = tensor_semantics.load_graph(fn.last.program.to_json("tensor_graph"))
    vals = {v["id"]: v for v in graph["values"]}
    ref_params = [a.copy() for a in before]
    ref, _ = Evaluator(graph).run(ref_params)
    assert len(outs) == len(ref), f"{len(outs)} results, the graph returns {len(ref)}"
    labels = getattr(fn, "labels", None) or [f"result {i}" for i in range(len(outs))]
    for label, r, o, want in zip(labels, graph["returns"], outs, ref):
        bound = ulps.get(label, 0) if isinstance(ulps, dict) else ulps
        assert_same(o, want, vals[r]["dtype"], bound, f"{label} (%{vals[r]['name']})")
    for p, a, b in zip(graph["params"], args, ref_params):
        if p["value"] in graph["outputs"]:
            assert_same(a, b, vals[p["value"]]["dtype"], 0 if isinstance(ulps, dict) else ulps,
                        f"parameter {p['name']}")
    return graph


def program(body, *dts, shapes=None, tile=TILE):
    """A jit function of len(dts) tensors (SHAPE unless `shapes`) returning body(*tensors). A body
    may return a dict: its values are the results, its keys their labels in check's messages (many
    ops in one program: one compilation)."""
    shapes = shapes or [SHAPE] * len(dts)
    labels = []

    def f(*xs):
        P.set_vec_tile_shapes(*tile)
        out = body(*xs)
        if isinstance(out, dict):
            labels[:] = list(out)
            return tuple(out.values())
        return out
    f.__signature__ = inspect.Signature([  # the jit reads the parameters' annotations from it
        inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=P.Tensor(s, DTS[d]))
        for i, (s, d) in enumerate(zip(shapes, dts))])
    jf = P.jit(f)
    jf.labels = labels
    return jf


def floats(dt, lo=-3.0, hi=3.0, shape=SHAPE, seed=0, specials=False):
    v = rng(seed).uniform(lo, hi, shape)
    if specials:
        v.flat[:len(SPECIALS)] = SPECIALS
    return to_storage(v, dt)


def ints(dt, lo=-50, hi=50, shape=SHAPE, seed=0):
    info = np.iinfo(tensor_semantics.storage_dtype(dt))
    return rng(seed).integers(max(lo, info.min), min(hi, info.max), shape, endpoint=True).astype(info.dtype)


# --- elementwise math ---------------------------------------------------------------------------

MATH_ULPS = {"fp32": 2, "fp16": 1, "bf16": 1}
UNARY = {  # op: (function, input range, exact)
    "tanh": (P.tanh, (-4, 4), False), "sin": (P.sin, (-6, 6), False), "cos": (P.cos, (-6, 6), False),
    "tan": (P.tan, (-1.4, 1.4), False), "asin": (P.asin, (-1, 1), False), "acos": (P.acos, (-1, 1), False),
    "atan": (P.atan, (-9, 9), False), "sinh": (P.sinh, (-5, 5), False), "cosh": (P.cosh, (-5, 5), False),
    "asinh": (P.asinh, (-9, 9), False), "acosh": (P.acosh, (1, 9), False), "atanh": (P.atanh, (-0.99, 0.99), False),
    "exp": (P.exp, (-9, 9), False), "exp2": (P.exp2, (-9, 9), False), "expm1": (P.expm1, (-3, 3), False),
    "log": (P.log, (0.01, 9), False), "log2": (P.log2, (0.01, 9), False), "log10": (P.log10, (0.01, 9), False),
    "log1p": (P.log1p, (-0.9, 9), False), "erf": (P.erf, (-3, 3), False), "erfc": (P.erfc, (-3, 3), False),
    "cbrt": (P.cbrt, (-9, 9), False), "sqrt": (P.sqrt, (0, 9), True), "rsqrt": (P.rsqrt, (0.01, 9), True),
    "reciprocal": (P.reciprocal, (-9, 9), True), "abs": (P.abs, (-9, 9), True), "neg": (P.neg, (-9, 9), True),
    "relu": (P.relu, (-9, 9), True), "sign": (P.sign, (-2, 2), True), "floor": (P.floor, (-9, 9), True),
    "ceil": (P.ceil, (-9, 9), True), "round": (P.round, (-9, 9), True), "trunc": (P.trunc, (-9, 9), True),
    "sigmoid": (P.sigmoid, (-9, 9), False), "silu": (P.silu, (-9, 9), False),
    "round2": (lambda x: P.round(x, 2), (-9, 9), False),
}


FAMILIES = {
    "trig": ["sin", "cos", "tan", "asin", "acos", "atan"],
    "hyperbolic": ["tanh", "sinh", "cosh", "asinh", "acosh", "atanh"],
    "exp_log": ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p"],
    "other": ["erf", "erfc", "cbrt", "sigmoid", "silu", "round2"],
    "exact": ["sqrt", "rsqrt", "reciprocal", "abs", "neg", "relu", "sign", "floor", "ceil", "round", "trunc"],
}


def _unary_ulps(names, dt):
    return {n: 0 if UNARY[n][2] else MATH_ULPS[dt] * (2 if n in ("sigmoid", "silu") else 1) for n in names}


@pytest.mark.parametrize("dt", list(FLOAT_DTS))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_unary_math(family, dt):
    """Each op of the family on its own input, drawn from the op's domain."""
    names = FAMILIES[family]

    def body(*xs):
        return {n: UNARY[n][0](x) for n, x in zip(names, xs)}
    inputs = [floats(dt, *UNARY[n][1], seed=k) for k, n in enumerate(names)]
    check(program(body, *[dt] * len(names)), *inputs, ulps=_unary_ulps(names, dt))


CLASSIFY = {"isnan": P.isnan, "isinf": P.isinf, "isfinite": P.isfinite, "signbit": P.signbit,
            "logical_not": P.logical_not, "bitwise_not": P.bitwise_not}


@pytest.mark.parametrize("dt", list(FLOAT_DTS))
def test_unary_special_values(dt):
    """Every unary op on NaN, +-inf, +-0, a subnormal and values near the top of the range."""
    def body(x):
        return {**{n: fn(x) for n, (fn, _, _) in UNARY.items()}, **{n: CLASSIFY[n](x) for n in list(CLASSIFY)[:5]}}
    check(program(body, dt), floats(dt, specials=True), ulps=_unary_ulps(UNARY, dt))


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint8"])
def test_unary_integer(dt):
    """abs / neg of MIN wrap; the float-only ops' integer rules (floor passes through, exp2 is fp32)."""
    x = ints(dt, -128, 127)
    x.flat[:2] = [np.iinfo(x.dtype).min, np.iinfo(x.dtype).max]

    def body(a):
        fns = {"abs": P.abs, "neg": P.neg, "relu": P.relu, "sign": P.sign, "floor": P.floor, "exp2": P.exp2, **CLASSIFY}
        return {n: fn(a) for n, fn in fns.items()}
    check(program(body, dt), x, ulps={"exp2": 1})


BINARY_F = {
    "add": P.add, "sub": P.sub, "mul": P.mul, "div": P.div, "maximum": P.maximum, "minimum": P.minimum,
    "pow": P.pow, "atan2": P.atan2, "hypot": P.hypot, "copysign": P.copysign, "fmod": P.fmod,
    "remainder": P.remainder, "floor_div": P.floor_div,
}
EXACT_F = {"add", "sub", "mul", "div", "maximum", "minimum", "copysign", "fmod", "remainder", "floor_div"}


@pytest.mark.parametrize("dt", list(FLOAT_DTS))
@pytest.mark.parametrize("family", [["add", "sub", "mul", "div", "maximum", "minimum"], ["pow", "atan2", "hypot",
                                    "copysign"], ["fmod", "remainder", "floor_div"]], ids=["arith", "math", "division"])
def test_binary_float(family, dt):
    """Tensor op tensor, a broadcast column, tensor op scalar and scalar op tensor."""
    def body(a, b, c, pos):
        out = {}
        for n in family:
            fn, x = BINARY_F[n], pos if n == "pow" else a
            out.update({f"{n}(x, y)": fn(x, b), f"{n}(x, col)": fn(x, c), f"{n}(x, 1.7)": fn(x, 1.7),
                        f"{n}(s, x)": fn(2.3 if n == "pow" else -2.3, x)})
        return out
    ulps = {f"{n}{form}": 0 if n in EXACT_F else MATH_ULPS[dt] for n in family
            for form in ("(x, y)", "(x, col)", "(x, 1.7)", "(s, x)")}
    check(program(body, dt, dt, dt, dt, shapes=[SHAPE, SHAPE, (SHAPE[0], 1), SHAPE]), floats(dt, -4, 4, seed=1),
          floats(dt, -3, 3, seed=2), floats(dt, 0.5, 3, (SHAPE[0], 1), 3), floats(dt, 0.1, 4, seed=4), ulps=ulps)


@pytest.mark.parametrize("dt", list(FLOAT_DTS))
def test_binary_float_special_values(dt):
    """NaN, +-inf, +-0 and subnormals against each other and as scalars (-0.0 among them)."""
    a = floats(dt, -3, 3, seed=3, specials=True)
    b = np.roll(a, 3).reshape(a.shape)

    def body(x, y):
        out = {}
        for n, fn in BINARY_F.items():
            out.update({f"{n}(x, y)": fn(x, y), f"{n}(x, inf)": fn(x, float("inf")),
                        f"{n}(x, nan)": fn(x, float("nan")), f"{n}(x, -0.0)": fn(x, -0.0),
                        f"{n}(-inf, y)": fn(float("-inf"), y)})
        return {**out, "lrelu": P.lrelu(x, 0.3), "where(-0.0)": P.where(x > 0, -0.0, x),
                "full(-0.0)": P.full([2, 2], -0.0, x.dtype)}
    ulps = {f"{n}{form}": 0 if n in EXACT_F else MATH_ULPS[dt] for n in BINARY_F
            for form in ("(x, y)", "(x, inf)", "(x, nan)", "(x, -0.0)", "(-inf, y)")}
    check(program(body, dt, dt), a, b, ulps=ulps)


def test_negative_zero_scalars_survive_the_json():
    """to_json prints a scalar -0.0 as `-0`, which json.loads reads as the integer 0 (x / 0 would be
    +inf where the program computes -inf): load_graph keeps it."""
    @P.jit
    def f(x: P.Tensor((2, 8), P.DT_FP32)):
        return x / -0.0
    x = np.ones((2, 8), np.float32)
    assert (f(x) == -np.inf).all()
    graph = tensor_semantics.load_graph(f.last.program.to_json("tensor_graph"))
    assert (TensorGraphEvaluator(graph).run([x])[0][0] == -np.inf).all()


BINARY_I = {
    "add": P.add, "sub": P.sub, "mul": P.mul, "div": P.div, "maximum": P.maximum, "minimum": P.minimum, "pow": P.pow,
    "floor_div": P.floor_div, "ceil_div": P.ceil_div, "remainder": P.remainder, "fmod": P.fmod, "gcd": P.gcd,
    "bitwise_and": P.bitwise_and, "bitwise_or": P.bitwise_or, "bitwise_xor": P.bitwise_xor,
    "bitwise_left_shift": P.bitwise_left_shift, "bitwise_right_shift": P.bitwise_right_shift,
}


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
@pytest.mark.parametrize("family", ["arith", "bits"])
def test_binary_integer(family, dt):
    """Wrapping arithmetic, x // 0 and x % 0 (0), MIN // -1, shifts by the width or more, negative
    powers; tensor op tensor, tensor op scalar and scalar op tensor."""
    names = [n for n in BINARY_I if (n.startswith("bitwise") or n == "gcd") == (family == "bits")]
    x = ints(dt, -100, 100, seed=4)
    x.flat[:2] = [np.iinfo(x.dtype).min, np.iinfo(x.dtype).max]
    y = ints(dt, -5, 5, seed=5)  # zeros (x // 0 is 0), -1 (MIN // -1), negative powers
    amount = ints(dt, -3, 70, seed=6)

    def body(a, b, n):
        out = {}
        for name in names:
            fn, shift = BINARY_I[name], "shift" in name
            out[f"{name}(x, y)"] = fn(a, n if shift else b)
            out[f"{name}(x, 3)"] = fn(a, 5 if shift else 3)
            if name != "ceil_div":
                out[f"{name}(7, y)"] = fn(7, n if shift else b)
        return out
    check(program(body, dt, dt, dt), x, y, amount)


@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16", "int32", "uint8", "int64"])
def test_compare(dt):
    """With a tensor, a broadcast column and scalars (0.1 rounds to the 16-bit dtype; 2.5 against an
    integer tensor compares exactly), either side."""
    if dt in FLOAT_DTS:
        x, y, s = floats(dt, -2, 2, seed=6, specials=True), floats(dt, -2, 2, seed=7), 0.1
        x.flat[20:30] = y.flat[20:30]  # equal values
    else:
        x, y, s = ints(dt, -5, 5, seed=6), ints(dt, -5, 5, seed=7), 2.5

    def body(a, b):
        out = {}
        for name in ("eq", "ne", "lt", "le", "gt", "ge"):
            fn = getattr(P, name)
            out.update({f"{name}(x, y)": fn(a, b), f"{name}(x, s)": fn(a, s), f"{name}(x, 2)": fn(a, 2),
                        f"{name}(s, x)": fn(s, a), f"{name}(x, inf)": fn(a, float("inf")),
                        f"{name}(x, col)": fn(a, b[:, 0:1])})
        return out
    check(program(body, dt, dt), x, y)


def test_compare_integer_scalars_beyond_2_53():
    x = np.array([[2 ** 62 + 1, 2 ** 62, -5, 2 ** 63 - 1]], np.int64)
    u = np.array([[2 ** 64 - 1, 2 ** 63 + 5, 0, 7]], np.uint64)

    def body(a, b):
        return a == 2 ** 62 + 1, a > 2 ** 62, b == 2 ** 64 - 1, b < 2 ** 63 + 6, a + (2 ** 53 + 1), b - (2 ** 63 + 4)
    check(program(body, "int64", "uint64", shapes=[(1, 4), (1, 4)], tile=(1, 4)), x, u)


@pytest.mark.parametrize("dt", ["fp32", "bf16", "int32", "uint8", "bool"])
def test_where(dt):
    c = rng(8).random(SHAPE) < 0.5
    if dt == "bool":
        x, y = rng(9).random(SHAPE) < 0.5, rng(10).random(SHAPE) < 0.5
        s = True
    else:
        x, y = (floats(dt, seed=9), floats(dt, seed=10)) if dt in FLOAT_DTS else (ints(dt, seed=9), ints(dt, seed=10))
        s = 7

    def body(m, a, b):
        return P.where(m, a, b), P.where(m, a, s), P.where(m, s, b), P.where(m, 1.5, -2.0), P.where(m, a[0:1, :], b)
    check(program(body, "bool", dt, dt), c, x, y)


@pytest.mark.parametrize("dt", ["fp32", "fp16", "int32", "uint8"])
def test_clip_lrelu_prelu(dt):
    x = floats(dt, -4, 4, seed=11, specials=dt == "fp32") if dt in FLOAT_DTS else ints(dt, seed=11)

    def body(a):
        r = (P.clip(a, -1.5, 2.5), P.clip(a, min=0), P.clip(a, max=3))
        return r + ((P.lrelu(a, 0.1), P.prelu(a, P.full([1], 0.25, a.dtype))) if dt in FLOAT_DTS else ())
    check(program(body, dt), x)


@pytest.mark.parametrize("dts", [("bool", "bool"), ("fp32", "int32"), ("bf16", "uint8")])
def test_logical(dts):
    a = floats(dts[0], -1, 1, seed=12) if dts[0] in FLOAT_DTS else rng(12).random(SHAPE) < 0.5
    b = ints(dts[1], -1, 1, seed=13) if dts[1] in INT_DTS else rng(13).random(SHAPE) < 0.5
    if dts[0] == "fp32":
        a.flat[:3] = [0.0, -0.0, np.nan]

    def body(x, y):
        return P.logical_and(x, y), P.logical_or(x, y), P.logical_xor(x, y), P.logical_not(x), P.logical_not(y)
    check(program(body, *dts), a, b)


# --- reductions and scans -----------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16", "int32", "int8", "uint32"])
def test_reduce(dt):
    """Along dim 0, dim 1 with keepdim and dim -1, across tiles and their tails."""
    names = ["sum", "amax", "amin", "prod", "argmax", "argmin"] + (["mean", "var", "std"] if dt in FLOAT_DTS else [])
    if dt in FLOAT_DTS:  # positive: no cancellation, so the summation order matters a few ulps only
        x, small = floats(dt, 0.5, 4, seed=14), floats(dt, 0.5, 1.5, seed=15)
    else:
        x, small = ints(dt, -60, 60, seed=14), ints(dt, -3, 3, seed=15)

    def body(a, b):
        out = {}
        for name in names:
            fn, t = getattr(P, name), b if name == "prod" else a
            kw = {"correction": 1} if name in ("var", "std") else {}
            out.update({f"{name}(0)": fn(t, 0, **kw), f"{name}(1, keepdim)": fn(t, 1, keepdim=True, **kw),
                        f"{name}(-1)": fn(t, -1, keepdim=False, **kw)})
        return out
    check(program(body, dt, dt), x, small, ulps=8 if dt == "fp32" else 1)


def test_reduce_special_values_and_ties():
    x = floats("fp32", -2, 2, seed=15)
    x[1, 5] = x[1, 9] = 9.0  # ties: the first index
    x[2, 3], x[3, 30], x[4, 0] = np.nan, np.inf, -np.inf
    x[:, 36] = x[:, 35]

    def body(a):
        return P.amax(a, 1), P.amin(a, 0), P.argmax(a, 1), P.argmin(a, 1), P.argmax(a, 0), P.sum(a, 1), P.prod(a, 0)
    check(program(body, "fp32"), x, ulps=8)


@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16", "int32", "int8", "uint16"])
def test_scan(dt):
    """In order along either dim; integers accumulate in 64 bits."""
    if dt in FLOAT_DTS:
        x, y = floats(dt, -3, 3, seed=16), floats(dt, 0.8, 1.25, seed=17)
    else:
        x, y = ints(dt, -9, 9, seed=16), ints(dt, -9, 9, seed=17)

    def body(a, b):
        return {"cumsum(0)": P.cumsum(a, 0), "cumsum(1)": P.cumsum(a, 1), "cumprod(0)": P.cumprod(b, 0),
                "cumprod(1)": P.cumprod(b, 1)}
    check(program(body, dt, dt), x, y)


# --- movement, creation, index ------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["fp32", "bf16", "int8", "bool"])
def test_movement(dt):
    x = floats(dt, seed=17) if dt in FLOAT_DTS else ints(dt, seed=17) if dt != "bool" else rng(17).random(SHAPE) < .5
    y = x[:, :8].copy()

    def body(a, b):
        flat = (P.transpose(a, 0, 1), P.squeeze(P.unsqueeze(a, 0)), P.expand_clone(a[1:2, :], [5, 37]), P.clone(a),
                P.concat([a[:, :8], b, a[:, 3:11]], 1), P.concat([a, a[0:2, :]], 0), P.tril(a), P.triu(a, 2),
                P.tril(a, -1), P.pad(a, [0, 3, 0, 2], value=1))
        P.set_vec_tile_shapes(2, 4, 8)
        return flat + (P.unsqueeze(a, 1), P.permute(P.unsqueeze(b, 2), [2, 1, 0]))
    check(program(body, dt, dt, shapes=[SHAPE, (5, 8)]), x, y)


def test_creation():
    def body(a):
        return (P.full([3, 5], 2.5, P.DT_BF16), P.full([2, 2], -7, P.DT_INT8), P.full([2, 3], True, P.DT_BOOL),
                P.zeros(4, 2, dtype=P.DT_FP16), P.ones([3], dtype=P.DT_INT64), P.arange(10), P.arange(1.5, 4.0, 0.25),
                P.arange(7, -5, -3), P.one_hot(a, 6), P.full([2, 2], 2 ** 62 + 3, P.DT_INT64))
    check(program(body, "int32", shapes=[(3, 4)], tile=(4, 8)), ints("int32", -1, 6, (3, 4), 18))


@pytest.mark.parametrize("dt", ["fp32", "bf16", "int32", "uint64"])
def test_topk_sort(dt):
    x = floats(dt, -2, 2, seed=19) if dt in FLOAT_DTS else ints(dt, -4, 4, seed=19)  # many ties
    if dt == "fp32":
        x.flat[:8] = [np.nan, 1.0, 1.0, -0.0, 0.0, np.inf, -np.inf, np.nan]
    if dt in FLOAT_DTS and dt != "fp32":
        x = to_storage(np.round(numbers(x, dt)), dt)  # ties

    def body(a):
        v, i = P.topk(a, 5)
        w, j = P.topk(a, 4, largest=False)
        s, k = P.sort(a, descending=True)
        return v, i, w, j, s, k, P.argsort(a), P.sort(a)[0]
    check(program(body, dt, shapes=[(5, 16)], tile=(4, 16)), x[:, :16].copy())


@pytest.mark.parametrize("dt", ["fp32", "fp16", "int64"])
def test_gather_index_select(dt):
    x = floats(dt, seed=20, shape=(9, 12)) if dt in FLOAT_DTS else ints(dt, shape=(9, 12), seed=20)
    i0 = ints("int32", 0, 8, (4, 12), 21)
    i1 = ints("int64", 0, 11, (9, 5), 22)
    sel = np.array([8, 0, 3, 3], np.int32)

    def body(a, g0, g1, s):
        return P.gather(a, 0, g0), P.gather(a, 1, g1), P.gather(a, 1, g1[0:3, :]), P.index_select(a, 0, s)
    check(program(body, dt, "int32", "int64", "int32", shapes=[(9, 12), (4, 12), (9, 5), (4,)], tile=(4, 8)),
          x, i0, i1, sel)


@pytest.mark.parametrize("dt", ["fp32", "bf16", "int32"])
@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter(reduce, dt):
    dst = floats(dt, 0.5, 2, (6, 8), 23) if dt in FLOAT_DTS else ints(dt, -9, 9, (6, 8), 23)
    src = floats(dt, 0.5, 2, (4, 8), 24) if dt in FLOAT_DTS else ints(dt, -9, 9, (4, 8), 24)
    idx = ints("int32", 0, 5, (4, 8), 25)
    if reduce is None:  # distinct positions: PyPTO leaves the winner of repeats open
        idx = np.stack([rng(26).permutation(6)[:4] for _ in range(8)], axis=1).astype(np.int32)

    def body(d, i, s):
        P.scatter_(d, 0, i, s, reduce=reduce)
        return P.scatter(d, 1, i[:, 0:3], s[:, 0:3], reduce=reduce) if reduce is None else None
    check(program(body, dt, "int32", dt, shapes=[(6, 8), (4, 8), (4, 8)], tile=(4, 8)), dst, idx, src)


def test_index_add_and_scatter_repeats_in_order():
    """Repeated positions add one after another, each sum rounded to the dtype (bf16 here)."""
    x = to_storage(np.zeros((4, 3)), "bf16")
    src = to_storage(np.array([[256.0] * 3, [1.0] * 3, [1.0] * 3, [0.5] * 3]), "bf16")
    index = np.array([2, 2, 2, 2], np.int32)

    def body(a, i, s):
        return P.index_add(a, 0, i, s)
    check(program(body, "bf16", "int32", "bf16", shapes=[(4, 3), (4,), (4, 3)], tile=(4, 4)), x, index, src)
    out = evaluate("scatter", [src, np.broadcast_to(index[:, None], (4, 3)).copy(), x.copy()],
                   {"dim": 0, "reduce": 1}, "bf16", ["bf16", "int32", "bf16"], {})
    assert pypto.from_bf16(out)[2].tolist() == [256.0] * 3  # 256 + 1 rounds to 256 at each step


# --- conversions and matmul ---------------------------------------------------------------------

CAST_VALUES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e-40, 65519.0, 65520.0, 3e38,
               -3e9, 4e9, 127.5, -128.7, 255.5, 300.0, 1.0009765625, 1.00390625, 1 + 2 ** -9, 2 ** 24 + 1, 7e-8]


@pytest.mark.parametrize("src", ["fp32", "fp16", "bf16"])
def test_cast_from_float(src):
    """Every rounding mode into every float and integer width: ties, overflow (inf, or saturation),
    NaN (0 in an integer), subnormals."""
    v = np.array(CAST_VALUES * 2, np.float64)
    v[len(CAST_VALUES):] *= -1.37
    x = to_storage(v.reshape(4, -1), src)

    def body(a):
        return {f"{mode.name} to {d}": P.cast(a, DTS[d], mode) for mode in P.CastMode
                for d in ("fp32", "fp16", "bf16", "int8", "int32", "int64", "uint8", "uint64", "bool")}
    check(program(body, src, shapes=[x.shape], tile=(4, 16)), x)


@pytest.mark.parametrize("src", ["int8", "int32", "int64", "uint8", "uint64", "bool"])
def test_cast_from_integer(src):
    if src == "bool":
        x = rng(27).random((4, 13)) < 0.5
    else:
        info = np.iinfo(tensor_semantics.storage_dtype(src))
        x = ints(src, -300, 300, (4, 13), 27)
        extra = [info.min, info.max, 2 ** 24 + 1, 2 ** 53 + 1, 2 ** 63 - 2 ** 39 - 1, 2 ** 64 - 2 ** 39, 65520,
                 -65520, 2049, 3 * 2 ** 100]
        x.flat[:10] = [e for e in extra if info.min <= e <= info.max][:10] + [0] * (10 - len(
            [e for e in extra if info.min <= e <= info.max][:10]))

    def body(a):
        outs = [P.cast(a, DTS[d], P.CastMode.CAST_NONE) for d in ("fp32", "fp16", "bf16", "int8", "int32", "uint8",
                                                                 "int64", "uint64", "bool") if DTS[d] != a.dtype]
        outs += [P.cast(a, P.DT_FP32, m) for m in (P.CastMode.CAST_FLOOR, P.CastMode.CAST_CEIL, P.CastMode.CAST_ROUND)]
        return tuple(outs)
    check(program(body, src, shapes=[x.shape], tile=(4, 16)), x)


@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16", "int8"])
def test_matmul(dt):
    """a @ b, a^T @ b and a @ b^T (K = 13 across cube tiles of 8)."""
    # Positive floats: no cancellation, so fp32 accumulation (in the cube tile's order, with FMA) is
    # within K ulps of the correctly rounded sum (docs/numerics.md's bound).
    make = (lambda shape, seed: floats(dt, 0.25, 1, shape, seed)) if dt != "int8" else \
        (lambda shape, seed: ints(dt, -128, 127, shape, seed))

    def body(a, at, b, bt):
        P.set_cube_tile_shapes([16, 16], [8, 16], [16, 16])
        return {"a @ b": P.matmul(a, b), "a^T @ b": P.matmul(at, b, a_trans=True),
                "a @ b^T": P.matmul(a, bt, b_trans=True)}
    shapes = [(20, 13), (13, 20), (13, 9), (9, 13)]
    ulps = 13 if dt == "fp32" else 1 if dt != "int8" else 0
    check(program(body, dt, dt, dt, dt, shapes=shapes), *[make(s, 28 + i) for i, s in enumerate(shapes)],
          ulps={k: ulps for k in ("a @ b", "a^T @ b", "a @ b^T")})


# --- programs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["fp32", "bf16"])
def test_loop_program(dt):
    """A dynamic dim, a loop over row blocks with tails, views, run-time scalars (the loop index in
    a compare, an add and a full) and results assembled into an output parameter."""
    @P.jit
    def f(x: P.Tensor((P.DYNAMIC, 37), FLOAT_DTS[dt]), k: P.Tensor((P.DYNAMIC, 37), P.DT_INT32),
          o: P.Tensor((P.DYNAMIC, 37), FLOAT_DTS[dt])) -> P.Tensor((P.DYNAMIC, 1), P.DT_INT32):
        n = x.shape[0]
        s = P.tensor((n, 1), P.DT_INT32)
        P.set_vec_tile_shapes(4, 16)
        for i in P.loop(0, (n + 3) // 4, 1, name="L", idx_name="i"):
            v = P.view(x, [4, 37], [i * 4, 0], valid_shape=[(n - i * 4).min(4), 37])
            w = P.view(k, [4, 37], [i * 4, 0], valid_shape=[(n - i * 4).min(4), 37])
            t = P.tanh(v) * 2.0 + P.cast(P.where(w > i, w + i, -w), v.dtype)
            o[i * 4:i * 4 + 4, :] = t - P.amax(t, dim=-1, keepdim=True)
            s[i * 4:i * 4 + 4, :] = P.sum(P.floor_div(w, 3) + P.full([1, 37], i, P.DT_INT32), dim=-1, keepdim=True)
        return s

    x, k = floats(dt, shape=(11, 37), seed=30), ints("int32", shape=(11, 37), seed=31)
    check(f, x, k, to_storage(np.zeros((11, 37)), dt), ulps=MATH_ULPS[dt] + 1)


def test_fp16_composite_program():
    def body(a, b):
        h = P.cast(a, P.DT_FP16)
        return P.softmax(h, -1), P.rms_norm(h, b), P.layer_norm(h, b, b), P.cast(P.cumsum(h, 1), P.DT_FP32)
    check(program(body, "fp32", "fp16", shapes=[SHAPE, (37,)]), floats("fp32", seed=32), floats("fp16", 0.5, 1.5,
                                                                                              (37,), 33), ulps=2)


# --- the ops without semantics, and the rounding helper --------------------------------------------

def test_an_op_without_semantics_raises():
    @P.jit
    def f(x: P.Tensor((4, 8), P.DT_FP32)):
        return x + P.uniform([4, 8], [1], [0, 0], [1])
    x = np.zeros((4, 8), np.float32)
    f(x)
    graph = tensor_semantics.load_graph(f.last.program.to_json("tensor_graph"))
    with pytest.raises(NoSemantics, match="uniform"):
        TensorGraphEvaluator(graph).run([x])
    with pytest.raises(NoSemantics, match="assemble"):
        evaluate("assemble", [x, x], {}, "fp32", ["fp32", "fp32"], {})
    with pytest.raises(NoSemantics, match="fp8e4m3"):  # FP8 is storage: bytes move, nothing computes
        evaluate("add", [np.zeros(3, np.uint8)] * 2, {}, "fp8e4m3", ["fp8e4m3", "fp8e4m3"], {})
    moved = evaluate("permute", [np.arange(6, dtype=np.uint8).reshape(2, 3)], {"perm": [1, 0]}, "fp8e4m3",
                     ["fp8e4m3"], {})
    assert moved.tolist() == [[0, 3], [1, 4], [2, 5]]


@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
def test_round_float_matches_torch(dt):
    """Nearest-even rounding of fp32 values (torch narrows a double through float)."""
    torch = pytest.importorskip("torch")
    v = np.concatenate([rng(34).standard_normal(4000) * 10.0 ** rng(35).integers(-45, 39, 4000),
                        [np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 65520.0, 3.4e38, 3.3961e38]])
    v = v.astype(np.float32).astype(np.float64)
    want = torch.from_numpy(v).to({"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dt])
    got = round_float(v, dt)
    want = want.view(torch.int16).numpy().view(np.uint16) if dt == "bf16" else want.numpy()
    np.testing.assert_array_equal(got.view(np.uint16 if dt != "fp32" else np.uint32),
                                  want.view(np.uint16 if dt != "fp32" else np.uint32))


def test_round_float_rounds_a_double_once():
    """Just above a 16-bit tie: through fp32 the excess is lost and the tie goes to even (1.0)."""
    assert pypto.from_bf16(round_float([1 + 2 ** -8 + 2 ** -30], "bf16"))[0] == 1 + 2 ** -7
    assert round_float([1 + 2 ** -11 + 2 ** -40], "fp16")[0] == 1 + 2 ** -10
    # The directed modes (pto::RoundMode ROUND, FLOOR, CEIL, TRUNC) and their overflow.
    v = [2.5 * 2 ** -7 + 1, -(1 + 2 ** -9), 1e39, -1e39]
    assert pypto.from_bf16(round_float(v, "bf16", 1)).tolist() == [1 + 3 * 2 ** -7, -1.0, np.inf, -np.inf]
    assert pypto.from_bf16(round_float(v, "bf16", 2))[1:].tolist() == [-(1 + 2 ** -7), 3.3895313892515355e38,
                                                                       -np.inf]
    assert round_float([65519.0, 65520.0, -7e4], "fp16", 4).tolist() == [65504.0, 65504.0, -65504.0]
