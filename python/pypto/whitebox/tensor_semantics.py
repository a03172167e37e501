"""The numpy meaning of each tensor-graph op, for verify_passes and PyPTO's pass verify.

`evaluate(op, ins, attrs, out_dtype, in_dtypes, env)` computes one op of the tensor graph (the
JSON of `Program.to_json("tensor_graph")`) from numpy arrays in the arrays' storage form: bf16
values are their uint16 bit patterns, as the runtime takes them. An op without numpy semantics
here raises NoSemantics; the caller then skips the tensor-graph level (PyPTO's NO_COMPARE)
rather than failing the call.

The rules are those of the reference instructions (include/pto/elem.hpp, pto/elem_math.hpp,
pto/ref/*.hpp) and docs/numerics.md: a float result is computed from the exact inputs in float64
and rounded once to its dtype (fp16 / bf16 therefore compute "in fp32 and round once"); a
tile-scalar op takes the scalar in fp32 and rounds its fp32 result once more for a 16-bit
tensor; integers wrap, divide by 0 to 0 and compare with a scalar exactly. Movement and index
ops (permute, expand, topk, gather, scatter, iota) move storage bits unchanged (their section below).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from ..core._dtypes import from_bf16, to_bf16

NP_DTYPES = {"fp32": np.float32, "fp16": np.float16, "int8": np.int8, "int16": np.int16, "int32": np.int32,
             "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
             "bool": np.bool_}
FLOATS = ("fp32", "fp16", "bf16")
# Significand bits, least normal exponent and largest finite value of each float dtype.
_FORMATS = {"fp32": (24, -126, float(np.finfo(np.float32).max)), "fp16": (11, -14, 65504.0),
            "bf16": (8, -126, 3.3895313892515355e38)}
# pto::RoundMode: RINT (ties to even), ROUND (ties away from zero), FLOOR, CEIL, TRUNC.
_ROUND_INT: List[Callable[[np.ndarray], np.ndarray]] = [
    np.rint, lambda q: np.copysign(np.floor(np.abs(q) + 0.5), q), np.floor, np.ceil, np.trunc]


def storage_dtype(name: str) -> Any:
    """The numpy dtype of a tensor of dtype `name` as the runtime stores it (bf16: uint16 bits;
    the 8-bit float formats: uint8 bytes)."""
    if name in NP_DTYPES:
        return NP_DTYPES[name]
    return np.uint16 if name == "bf16" else np.uint8


class NoSemantics(Exception):
    """The op has no numpy semantics here."""


def load_graph(text: str) -> Dict[str, Any]:
    """The JSON of Program.to_json("tensor_graph") as dicts. The printer writes a scalar of -0.0 as
    `-0`, which json.loads reads as the integer 0: kept here as -0.0 (x / -0.0 is -inf)."""
    return json.loads(text, parse_int=lambda s: -0.0 if s == "-0" else int(s))


def eval_sym(text: str, env: Dict[str, int]) -> int:
    """A symbolic dim or offset as the tensor graph prints it, with the loop indices and dims bound."""
    return int(eval(str(text), {"min": min, "max": max, "__builtins__": {}}, env))  # noqa: S307 - our own printer


# --- numbers in and out of their storage form --------------------------------------------------

def values(x: np.ndarray, dt: str) -> np.ndarray:
    """The numbers of a `dt` tensor: float64 for the float dtypes (exact, bf16 bits decoded); the
    array itself otherwise (int64 / uint64 do not fit a double)."""
    if dt == "bf16":
        return from_bf16(x).astype(np.float64)
    return np.asarray(x, np.float64) if dt in FLOATS else np.asarray(x)


def round_float(v: Any, dt: str, mode: int = 0) -> np.ndarray:
    """float64 values rounded once to the float dtype `dt`, in its storage form, by RoundMode `mode`.
    Past the largest finite value: inf, or that value where the mode rounds toward zero."""
    v = np.asarray(v, np.float64)
    with np.errstate(all="ignore"):
        if mode == 0 and dt != "bf16":  # numpy's conversions from float64 round once to nearest even
            return v.astype(NP_DTYPES[dt])
        p, emin, fmax = _FORMATS[dt]
        _, e = np.frexp(v)
        ulp = np.ldexp(1.0, np.maximum(e - 1, emin) - (p - 1))  # the spacing of dt at v (a power of 2)
        r = _ROUND_INT[mode](v / ulp) * ulp
        toward_zero = (mode == 4) | ((mode == 2) & (v > 0)) | ((mode == 3) & (v < 0))
        over = np.isfinite(v) & (np.abs(r) > fmax)
        r = np.where(over, np.copysign(np.where(toward_zero, fmax, np.inf), v), r)
        f32 = r.astype(np.float32)  # exact: r is a value of dt
    return to_bf16(f32) if dt == "bf16" else f32.astype(NP_DTYPES[dt])


def _ints_as_float64(x: np.ndarray) -> np.ndarray:
    """Integers as float64 values that round to every float dtype as the integers themselves do:
    exact up to 2^53, beyond that rounded to odd (52+ bits and a sticky bit, enough for any
    rounding to 24 bits or fewer)."""
    if x.dtype.itemsize < 8:
        return x.astype(np.float64)
    neg = x < 0
    mag = x.view(np.uint64)
    if x.dtype == np.int64:
        mag = np.where(neg, ~mag + np.uint64(1), mag)  # |x| without overflow
    shift = np.maximum(np.frexp(mag.astype(np.float64))[1] - 53, 0).astype(np.uint64)
    t = mag >> shift
    t = t | ((t << shift) != mag).astype(np.uint64)
    return np.where(neg, -1.0, 1.0) * np.ldexp(t.astype(np.float64), shift.astype(np.int64))


def convert(x: np.ndarray, src: str, dst: str, mode: int = 0) -> np.ndarray:
    """pypto.cast (TCVT, pto::elem::convert): into a float rounds once by `mode`; float -> int
    rounds by `mode` and saturates (NaN -> 0); int -> int saturates; x -> bool is x != 0."""
    if src == dst:
        return x.copy()
    if dst == "bool":
        return values(x, src) != 0
    if dst in FLOATS:
        v = values(x, src) if src in FLOATS or src == "bool" else _ints_as_float64(x)
        return round_float(v.astype(np.float64), dst, mode)
    out = NP_DTYPES[dst]
    info = np.iinfo(out)
    if src in FLOATS:
        r = _ROUND_INT[mode](values(x, src))
        hi = 2.0 ** (info.bits - (info.min < 0))  # the first value past the range (2^64 for uint64)
        big, small = r >= hi, (r < -hi) if info.min < 0 else (r < 0)
        inner = np.where(big | small | np.isnan(r), 0.0, r).astype(out)
        return np.where(big, out(info.max), np.where(small, out(info.min), inner))
    if x.dtype == np.uint64:
        return np.minimum(x, np.uint64(info.max)).astype(out)
    return np.clip(x.astype(np.int64), max(info.min, -2 ** 63), min(info.max, 2 ** 63 - 1)).astype(out)


# --- scalars of the attributes -----------------------------------------------------------------

def _attr_number(attrs: Dict[str, Any], key: str, env: Dict[str, int], exact: bool = True) -> Any:
    """An op's scalar: a run-time expression (`key_expr`: a loop index, a dim), the exact integer
    (`key_int`: an integer's 64 bits, when `exact`) or the double (JSON may spell it "inf")."""
    if key + "_expr" in attrs:
        try:
            return eval_sym(attrs[key + "_expr"][0], env)
        except Exception as e:  # a value read from a tensor, say: not an expression of env
            raise NoSemantics(f"the run-time scalar {attrs[key + '_expr'][0]!r}") from e
    if exact and key + "_int" in attrs:
        return int(attrs[key + "_int"])
    return float(attrs[key])


def scalar_value(attrs: Dict[str, Any], key: str, dt: str, env: Dict[str, int]) -> np.ndarray:
    """A scalar as a 0-d `dt` tensor (TEXPANDS): fp32 first, then `dt`; an integer in `dt`'s bits."""
    s = _attr_number(attrs, key, env, exact=dt not in FLOATS)
    if dt in FLOATS:
        return round_float(np.float64(np.float32(s)), dt)
    if dt == "bool":
        return np.asarray(s != 0)
    return np.asarray(s).astype(NP_DTYPES[dt])


# --- elementwise -------------------------------------------------------------------------------

def _sign(v: np.ndarray) -> np.ndarray:  # numpy.sign: NaN stays, -0 gives +0
    return np.where(v > 0, 1.0, np.where(v < 0, -1.0, np.where(v == 0, 0.0, v)))


def _nan_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # NaN wins; equal values give a (-0 vs +0)
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, np.where(a < b, b, a)))


def _nan_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(a), a, np.where(np.isnan(b), b, np.where(b < a, b, a)))


_erf, _erfc = np.frompyfunc(math.erf, 1, 1), np.frompyfunc(math.erfc, 1, 1)

_F_UNARY: Dict[str, Callable[[np.ndarray], Any]] = {
    "exp": np.exp, "log": np.log, "abs": np.abs, "neg": np.negative, "sqrt": np.sqrt,
    "rsqrt": lambda v: 1.0 / np.sqrt(v), "reciprocal": lambda v: 1.0 / v, "relu": lambda v: np.where(v < 0, 0.0, v),
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "exp2": np.exp2, "expm1": np.expm1, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": lambda v: _erf(v).astype(np.float64), "erfc": lambda v: _erfc(v).astype(np.float64), "cbrt": np.cbrt,
    "floor": np.floor, "ceil": np.ceil, "rint": np.rint, "trunc": np.trunc, "sign": _sign}
_I_UNARY: Dict[str, Callable[[np.ndarray], Any]] = {
    "abs": np.abs, "neg": np.negative, "relu": lambda x: np.maximum(x, 0), "sign": np.sign,
    "bitwise_not": np.invert}

# Float binaries compute in float64 and round once; floor_div and remainder follow numpy's divmod
# in float32 arithmetic (pto::elem::floor_div / remainder), so they get float32 operands.
_F_BINARY: Dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": _nan_max,
    "minimum": _nan_min, "fmod": np.fmod, "lrelu": lambda a, s: np.where(a < 0, a * s, a), "pow": np.power,
    "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign}
_F32_BINARY = {"floor_div": np.floor_divide, "remainder": np.remainder}


def _int_division(kind: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Integer trunc / floor division, fmod (the dividend's sign), remainder (the divisor's): x / 0
    and x % 0 are 0, MIN / -1 wraps to MIN (pto::elem::div, rem, floor_div, remainder)."""
    def f(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(a, b)
        zero = b == 0
        minus1 = (b == -1) if np.issubdtype(b.dtype, np.signedinteger) else np.zeros(b.shape, bool)
        safe = np.where(zero | minus1, 1, b).astype(b.dtype)
        if kind in ("trunc", "floor"):
            q = np.floor_divide(a, safe)
            if kind == "trunc":
                q = np.where((np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0)), q + 1, q)
            r = np.where(minus1, np.negative(a), q)
        else:
            r = np.where(minus1, 0, (np.fmod if kind == "fmod" else np.remainder)(a, safe))
        return np.where(zero, 0, r).astype(a.dtype)
    return f


def _shift(left: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """x << n, x >> n (arithmetic for signed dtypes); an amount outside [0, bits) gives 0, or for
    >> the sign fill."""
    def f(a: np.ndarray, n: np.ndarray) -> np.ndarray:
        a, n = np.broadcast_arrays(a, n)
        n64 = n.astype(np.int64)  # a uint64 amount >= 2^63 reads as negative: outside either way
        inside = (n64 >= 0) & (n64 < a.dtype.itemsize * 8)
        k = np.where(inside, n64, 0).astype(a.dtype)
        if left:
            return np.where(inside, np.left_shift(a, k), 0).astype(a.dtype)
        fill = a >> (a.dtype.itemsize * 8 - 1) if a.dtype.kind == "i" else np.zeros_like(a)  # -1 or 0
        return np.where(inside, np.right_shift(a, k), fill)
    return f


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b wrapping like repeated multiplication; b < 0 gives 1 / a**|b| truncated (pto::elem::pow)."""
    a, b = np.broadcast_arrays(a, b)
    signed = np.issubdtype(a.dtype, np.signedinteger)
    neg = (b < 0) if signed else np.zeros(b.shape, bool)
    base, n = a.astype(np.uint64), np.where(neg, 0, b).astype(np.uint64)  # low bits as the dtype's
    r = np.ones(a.shape, np.uint64)
    while np.any(n):
        r = np.where(n & np.uint64(1), r * base, r)
        base, n = base * base, n >> np.uint64(1)
    r = r.astype(a.dtype)
    if not signed:
        return r
    inv = np.where(a == 1, 1, np.where(a == -1, np.where(b & 1, -1, 1), 0)).astype(a.dtype)
    return np.where(neg, inv, r)


_I_BINARY: Dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _int_division("trunc"), "maximum": np.maximum,
    "minimum": np.minimum, "fmod": _int_division("fmod"), "floor_div": _int_division("floor"),
    "remainder": _int_division("remainder"), "lrelu": lambda a, s: np.where(a < 0, a * s, a),
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": _shift(True), "bitwise_right_shift": _shift(False), "pow": _int_pow, "gcd": np.gcd}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}


@dataclass
class Call:
    """One op of the tensor graph with its operands (storage form) and dtype names."""

    op: str
    ins: List[np.ndarray]
    attrs: Dict[str, Any]
    out: str
    dts: List[str]
    env: Dict[str, int]

    def int_attr(self, key: str, default: int = 0) -> int:
        return int(self.attrs.get(key, default))

    def shape(self) -> List[int]:
        return [eval_sym(str(d), self.env) for d in self.attrs["shape"]]


def _float_binary(name: str, a: np.ndarray, b: np.ndarray, dt: str) -> np.ndarray:
    if name in _F32_BINARY:
        return round_float(_F32_BINARY[name](np.asarray(a, np.float32), np.asarray(b, np.float32)), dt)
    return round_float(_F_BINARY[name](a, b), dt)


def _unary(c: Call) -> np.ndarray:
    x, dt = c.ins[0], c.dts[0]
    table = _F_UNARY if dt in FLOATS else _I_UNARY
    if c.op not in table:
        raise NoSemantics(f"{c.op} on {dt}")
    r = table[c.op](values(x, dt))
    return round_float(r, dt) if dt in FLOATS else r


def _binary(c: Call) -> np.ndarray:
    """x op y, or with a scalar (NAME_scalar: `scalar` / `scalar_int`, `scalar_first` for s op x)."""
    name, x, dt = c.op.removesuffix("_scalar"), c.ins[0], c.dts[0]
    with_scalar = c.op.endswith("_scalar")
    if dt not in FLOATS:
        if name not in _I_BINARY:
            raise NoSemantics(f"{c.op} on {dt}")
        y = scalar_value(c.attrs, "scalar", dt, c.env) if with_scalar else c.ins[1]
        a, b = (y, x) if c.int_attr("scalar_first") else (x, y)
        return np.asarray(_I_BINARY[name](a, b)).astype(NP_DTYPES[dt])
    if name not in _F_BINARY and name not in _F32_BINARY:
        raise NoSemantics(f"{c.op} on {dt}")
    if not with_scalar:
        return _float_binary(name, values(x, dt), values(c.ins[1], dt), dt)
    s = np.float64(np.float32(_attr_number(c.attrs, "scalar", c.env, exact=False)))  # scalar_t: fp32
    a, b = (s, values(x, dt)) if c.int_attr("scalar_first") else (values(x, dt), s)
    r32 = _float_binary(name, a, b, "fp32")  # 16-bit tensors: the fp32 result rounded once more
    return r32 if dt == "fp32" else round_float(r32, dt)


def _compare(c: Call) -> np.ndarray:
    """A DT_BOOL comparison with a tensor or a scalar in the tensor's dtype (TCMPS's operand)."""
    dt = c.dts[0]
    other = c.ins[1] if len(c.ins) > 1 else scalar_value(c.attrs, "scalar", dt, c.env)
    return _COMPARE[c.op](values(c.ins[0], dt), values(other, dt))


def _where(c: Call) -> np.ndarray:
    """cond ? a : b; a missing tensor operand is the scalar `a_scalar` / `b_scalar` (+ `_int`)."""
    rest = iter(c.ins[1:])
    a, b = (scalar_value(c.attrs, k, c.out, c.env) if k in c.attrs else next(rest) for k in ("a_scalar", "b_scalar"))
    return np.where(c.ins[0].astype(bool), a, b)


# --- reductions, scans, conversions, matmul, creation ------------------------------------------

_REDUCE = {"sum": np.sum, "prod": np.prod, "amax": np.max, "amin": np.min}


def _reduce(c: Call) -> np.ndarray:
    """sum / prod in float64 rounded once (integers wrap in their dtype); amax / amin exact with NaN
    propagating; argmax / argmin the first extreme, a NaN counting as one (int32)."""
    x, dt, ax, keep = c.ins[0], c.dts[0], c.int_attr("dim"), bool(c.int_attr("keepdim"))
    v = values(x, dt)
    if c.op in ("argmax", "argmin"):
        return (np.argmax if c.op == "argmax" else np.argmin)(v, axis=ax, keepdims=keep).astype(np.int32)
    if dt in FLOATS:
        return round_float(_REDUCE[c.op](v, axis=ax, keepdims=keep), dt)
    wrap = {"dtype": x.dtype} if c.op in ("sum", "prod") else {}
    return _REDUCE[c.op](x, axis=ax, keepdims=keep, **wrap)


def _scan(c: Call) -> np.ndarray:
    """Inclusive prefix sum / product in order: floats step in fp32, each result rounded to the
    dtype (pto/ref/scan.hpp); integers wrap."""
    x, dt, ax = c.ins[0], c.dts[0], c.int_attr("dim")
    fn = np.cumsum if c.op == "cumsum" else np.cumprod
    if dt in FLOATS:
        return round_float(fn(values(x, dt).astype(np.float32), axis=ax, dtype=np.float32), dt)
    return fn(x, axis=ax, dtype=x.dtype)


def _cast(c: Call) -> np.ndarray:
    return convert(c.ins[0], c.dts[0], c.out, c.int_attr("round_mode"))


def _matmul(c: Call) -> np.ndarray:
    """Products summed in float64 and rounded once (int8: exactly in int64, then wrapped to int32)."""
    a, b = (values(t, d) for t, d in zip(c.ins[:2], c.dts[:2]))
    if c.int_attr("a_trans"):
        a = np.swapaxes(a, -1, -2)
    if c.int_attr("b_trans"):
        b = np.swapaxes(b, -1, -2)
    if c.dts[0] in FLOATS:
        return round_float(a @ b, c.out)
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(NP_DTYPES[c.out])


def _full(c: Call) -> np.ndarray:
    return np.full(c.shape(), scalar_value(c.attrs, "value", c.out, c.env))


# --- the movement and index ops: permute, expand, iota, topk, gather, scatter -------------------------
# They move elements rather than compute them, so they work on the storage form directly (bits
# kept: -0.0, NaN payloads, bf16 patterns, the bytes of the FP8 / FP4 formats). Index semantics
# are those of the reference instructions (pto/ref/scan.hpp TROWTOPK / TCOLGATHER, pypto/
# index_nd.hpp ScatterND): topk orders NaN above every number with ties by index; an index
# outside its dim is an error, as the runtime raises one.

_INDEX_MOVES = {"permute", "expand", "gather", "scatter"}


def _permute(c: Call) -> np.ndarray:
    """Output dim d is input dim perm[d], or a new dim of 1 where perm[d] is -1; input dims left
    out have extent 1 (squeeze)."""
    x, perm = c.ins[0], [int(p) for p in c.attrs["perm"]]
    kept = sorted(p for p in perm if p >= 0)
    y = x.reshape([x.shape[d] for d in kept]).transpose([kept.index(p) for p in perm if p >= 0])
    return y.reshape([x.shape[p] if p >= 0 else 1 for p in perm])


def _expand(c: Call) -> np.ndarray:
    return np.broadcast_to(c.ins[0], c.shape()).copy()


def _iota(c: Call) -> np.ndarray:
    """0, 1, ..., n - 1 along `dim`; every other dim has extent 1."""
    shape, dim = c.shape(), c.int_attr("dim")
    return np.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))])


def _topk(c: Call) -> np.ndarray:
    """The k largest (or smallest) along the last dim in order, or their int32 indices. NaN is above
    every number (first for the largest, last for the smallest), equal values keep index order."""
    x, dt, k = c.ins[0], c.dts[0], c.int_attr("k")
    if c.int_attr("dim") % x.ndim != x.ndim - 1:
        raise NoSemantics(f"topk along dim {c.attrs['dim']} (the op works along the last)")
    largest = bool(c.int_attr("largest"))
    v = values(x, dt)
    idx = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    if dt in FLOATS:
        nan = np.isnan(v)
        v = np.where(nan, 0.0, v)
        keys = (idx, -v, ~nan) if largest else (idx, v, nan)  # np.lexsort: the last key first
    else:  # ~ reverses the order of int64 and of uint64 alike, without overflow
        v = v.astype(np.uint64 if v.dtype == np.uint64 else np.int64)
        keys = (idx, ~v) if largest else (idx, v)
    order = np.lexsort(keys, axis=-1)[..., :k]
    return order.astype(np.int32) if c.int_attr("indices") else np.take_along_axis(x, order, axis=-1)


def _checked(index: np.ndarray, n: int, op: str) -> np.ndarray:
    ii = index.astype(np.int64)  # a uint64 index >= 2^63 reads as negative: outside either way
    bad = (ii < 0) | (ii >= n)
    if bad.any():
        raise IndexError(f"{op}: index {int(ii[bad].flat[0])} is out of range [0, {n})")
    return ii


def _gather(c: Call) -> np.ndarray:
    """torch.gather: out[..., i, ...] = x[..., index[..., i, ...], ...] along `dim`; the index may be
    smaller than x along the other dims (their first elements take part)."""
    x, ax = c.ins[0], c.int_attr("dim") % c.ins[0].ndim
    ii = _checked(c.ins[1], x.shape[ax], "gather")
    box = tuple(slice(None) if d == ax else slice(0, ii.shape[d]) for d in range(x.ndim))
    return np.take_along_axis(x[box], ii, axis=ax)


def _targets(c: Call) -> Tuple[np.ndarray, ...]:
    """The destination position of each element of the values: its own, `dim` from the index."""
    src, dst, ax = c.ins[0], c.ins[2], c.int_attr("dim") % c.ins[2].ndim
    ii = _checked(c.ins[1], dst.shape[ax], "scatter")
    grid = np.indices(src.shape, sparse=True)
    return tuple(np.broadcast_to(ii if d == ax else grid[d], src.shape) for d in range(src.ndim))


def _scatter(c: Call) -> np.ndarray:
    """Writes (reduce 0), adds (1) or multiplies (2) the values into the destination (ins[2]) in
    place, in the values' row-major order: a repeated position combines once per occurrence, each
    step rounded to the dtype (pto::elem::add / mul); for a plain write the last one stays."""
    src, dst, dt, mode = c.ins[0], c.ins[2], c.dts[2], c.int_attr("reduce")
    where = _targets(c)
    if mode == 0:
        dst[where] = src
        return dst
    if dt == "bool" or not np.issubdtype(dst.dtype, np.number) or (dt not in FLOATS and dt not in NP_DTYPES):
        raise NoSemantics(f"scatter with reduce {mode} on {dt}")  # bytes of an FP8 format: no arithmetic
    lin = np.ravel_multi_index(where, dst.shape).ravel()
    vals = src.ravel()
    order = np.argsort(lin, kind="stable")
    first = np.r_[True, lin[order][1:] != lin[order][:-1]]
    rank = np.empty(lin.size, np.int64)  # how many earlier values land on the same position
    rank[order] = np.arange(lin.size) - np.maximum.accumulate(np.where(first, np.arange(lin.size), 0))
    for step in range(int(rank.max(initial=-1)) + 1):  # one vectorized pass per repetition
        sel = rank == step
        pos = np.unravel_index(lin[sel], dst.shape)
        cur, new = dst[pos], vals[sel]
        if dt in FLOATS:
            fn = np.add if mode == 1 else np.multiply
            dst[pos] = round_float(fn(values(cur, dt), values(new, dt)), dt)
        else:
            dst[pos] = (cur + new) if mode == 1 else (cur * new)
    return dst


_INDEX_HANDLERS: Dict[str, Callable[[Call], np.ndarray]] = {
    "permute": _permute, "expand": _expand, "iota": _iota, "topk": _topk, "gather": _gather, "scatter": _scatter}


_HANDLERS: Dict[str, Callable[[Call], np.ndarray]] = {}
_MOVES: set = set()  # ops that only move elements: any dtype, the FP8 / FP4 bytes included


def _table() -> Dict[str, Callable[[Call], np.ndarray]]:
    """Op name -> handler, built on first use."""
    if _HANDLERS:
        return _HANDLERS
    table: Dict[str, Callable[[Call], np.ndarray]] = {}
    for name in set(_F_UNARY) | set(_I_UNARY):
        table[name] = _unary
    for name in set(_F_BINARY) | set(_F32_BINARY) | set(_I_BINARY):
        table[name] = table[name + "_scalar"] = _binary
    table.update({name: _compare for name in _COMPARE})
    table.update({name: _reduce for name in ("sum", "prod", "amax", "amin", "argmax", "argmin")})
    table.update({"cumsum": _scan, "cumprod": _scan, "where": _where, "cast": _cast, "matmul": _matmul,
                  "full": _full})
    table.update(_INDEX_HANDLERS)
    _MOVES.update(_INDEX_MOVES)
    _HANDLERS.update(table)  # whole, at once
    return _HANDLERS


def evaluate(op: str, ins: List[np.ndarray], attrs: Dict[str, Any], out_dtype: str, in_dtypes: Sequence[str],
             env: Dict[str, int]) -> np.ndarray:
    """The result of one op in its storage form. `scatter` has none: it writes its destination
    (ins[2], a view into the caller's array) in place and returns it."""
    handlers = _table()
    if op not in handlers:
        raise NoSemantics(op)
    known = set(NP_DTYPES) | {"bf16"}
    if op not in _MOVES and any(d not in known for d in [*in_dtypes, out_dtype]):  # FP8 / FP4: bytes only
        raise NoSemantics(f"{op} on {', '.join(list(in_dtypes) + [out_dtype])}")
    with np.errstate(all="ignore"):
        r = handlers[op](Call(op, list(ins), dict(attrs), out_dtype, list(in_dtypes), env))
    return r if op == "scatter" else np.ascontiguousarray(r, storage_dtype(out_dtype))
