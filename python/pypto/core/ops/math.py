"""Elementwise math: the PTO_MATH_UNARY / PTO_MATH_BINARY instructions of the one instruction
list (include/pto/isa_list.hpp), each a tensor op of the same name, plus the few composites
PyPTO defines over them. fp32 gives numpy's answer within 2 ulp; fp16 and bf16 compute in fp32
and round once (torch's answer)."""

from __future__ import annotations

import math
from typing import Any

import pypto._core as _core
from .._dtypes import DT_BF16, DT_FP16, DT_FP32, is_int_dtype
from ..tensor import Tensor
from .core import _convert as cast
from .core import _binary, _suffix, _t, _unary, add, div, exp, mul, neg, sub
from .logic import eq, isnan, where
from .shape import reshape

__all__ = [
    "tanh",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "exp2",
    "expm1",
    "log2",
    "log10",
    "log1p",
    "erf",
    "erfc",
    "cbrt",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "round",
    "pow",
    "atan2",
    "hypot",
    "copysign",
    "floor_div",
    "ceil_div",
    "remainder",
    "fmod",
    "gcd",
    "lrelu",
    "prelu",
    "expand_exp_dif",
    "axpy_",
]


def _is_int(x: Tensor) -> bool:
    return is_int_dtype(x.dtype)


def tanh(input: Tensor) -> Tensor:  # noqa: A002 - PyPTO's parameter name
    """Hyperbolic tangent, elementwise."""
    return _unary("tanh", input)


def sin(input: Tensor) -> Tensor:  # noqa: A002
    """Sine (radians), elementwise."""
    return _unary("sin", input)


def cos(input: Tensor) -> Tensor:  # noqa: A002
    """Cosine (radians), elementwise."""
    return _unary("cos", input)


def tan(input: Tensor) -> Tensor:  # noqa: A002
    """Tangent (radians), elementwise."""
    return _unary("tan", input)


def asin(input: Tensor) -> Tensor:  # noqa: A002
    """Arc sine in [-pi/2, pi/2]; NaN outside [-1, 1]."""
    return _unary("asin", input)


def acos(input: Tensor) -> Tensor:  # noqa: A002
    """Arc cosine in [0, pi]; NaN outside [-1, 1]."""
    return _unary("acos", input)


def atan(input: Tensor) -> Tensor:  # noqa: A002
    """Arc tangent in [-pi/2, pi/2]."""
    return _unary("atan", input)


def sinh(input: Tensor) -> Tensor:  # noqa: A002
    """Hyperbolic sine, elementwise."""
    return _unary("sinh", input)


def cosh(input: Tensor) -> Tensor:  # noqa: A002
    """Hyperbolic cosine, elementwise."""
    return _unary("cosh", input)


def asinh(input: Tensor) -> Tensor:  # noqa: A002
    """Inverse hyperbolic sine, elementwise."""
    return _unary("asinh", input)


def acosh(input: Tensor) -> Tensor:  # noqa: A002
    """Inverse hyperbolic cosine; NaN below 1."""
    return _unary("acosh", input)


def atanh(input: Tensor) -> Tensor:  # noqa: A002
    """Inverse hyperbolic tangent; +-inf at +-1, NaN beyond."""
    return _unary("atanh", input)


def _float_of_int(x: Any, op: str) -> Tensor:
    """PyPTO's rule for exp2 / expm1: an integer input gives an fp32 result."""
    x = _t(x, op)
    return cast(x, DT_FP32) if _is_int(x) else x


def exp2(input: Tensor) -> Tensor:  # noqa: A002
    """2 ** x, elementwise (integer inputs give fp32)."""
    return _unary("exp2", _float_of_int(input, "exp2"))


def expm1(input: Tensor) -> Tensor:  # noqa: A002
    """e ** x - 1, accurate near 0 (integer inputs give fp32)."""
    return _unary("expm1", _float_of_int(input, "expm1"))


def log2(input: Tensor) -> Tensor:  # noqa: A002
    """Base-2 logarithm, elementwise."""
    return _unary("log2", input)


def log10(input: Tensor) -> Tensor:  # noqa: A002
    """Base-10 logarithm, elementwise."""
    return _unary("log10", input)


def log1p(input: Tensor) -> Tensor:  # noqa: A002
    """log(1 + x), accurate near 0."""
    return _unary("log1p", input)


def erf(input: Tensor) -> Tensor:  # noqa: A002
    """The error function, elementwise."""
    return _unary("erf", input)


def erfc(input: Tensor) -> Tensor:  # noqa: A002
    """1 - erf(x), accurate where erf(x) is near 1."""
    return _unary("erfc", input)


def cbrt(input: Tensor) -> Tensor:  # noqa: A002
    """Real cube root (cbrt(-8) = -2)."""
    return _unary("cbrt", input)


def sign(input: Tensor) -> Tensor:  # noqa: A002
    """-1, 0 or 1 in the input's dtype (numpy.sign: NaN stays NaN, -0 gives 0; fp16 / bf16
    follow torch, the 16-bit contract of docs/numerics.md: sign(NaN) is 0)."""
    x = _t(input, "sign")
    s = _unary("sign", x)
    if x.dtype in (DT_FP16, DT_BF16):
        return where(isnan(x), 0.0, s)
    return s


def _rounding(op: str, x: Any) -> Tensor:
    x = _t(x, op)
    return x if _is_int(x) else _unary(op, x)  # integers are already whole


def floor(input: Tensor) -> Tensor:  # noqa: A002
    """Largest integer not above x (integers pass through)."""
    return _rounding("floor", input)


def ceil(input: Tensor) -> Tensor:  # noqa: A002
    """Smallest integer not below x (integers pass through)."""
    return _rounding("ceil", input)


def trunc(input: Tensor) -> Tensor:  # noqa: A002
    """x rounded toward zero (integers pass through)."""
    return _rounding("trunc", input)


def round(input: Tensor, decimals: int = 0) -> Tensor:  # noqa: A001,A002 - PyPTO's names
    """x rounded half to even at ``decimals`` decimal places, as torch.round: with decimals != 0
    it is rint(x * 10**d) / 10**d in the input's precision (integers pass through)."""
    x = _t(input, "round")
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise _core.UserError(f"pypto.round: decimals must be an int, got {decimals!r}" + _suffix())
    if _is_int(x):
        return x
    if decimals == 0:
        return _unary("rint", x)
    scale = 10.0 ** decimals
    return div(_unary("rint", mul(x, scale)), scale)


def pow(input: Any, other: Any) -> Tensor:  # noqa: A001,A002 - PyPTO's names
    """input ** other, elementwise with broadcasting; either may be a Python scalar. Integer
    tensors raised to an integer give integers (exact, wrapping); to a float, fp32."""
    if isinstance(input, Tensor) and _is_int(input) and isinstance(other, float):
        input = cast(_t(input, "pow"), DT_FP32)
    return _binary("pow", input, other)


def atan2(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The angle of the point (other, input): atan(input / other) in the right quadrant."""
    return _binary("atan2", input, other)


def hypot(input: Any, other: Any) -> Tensor:  # noqa: A002
    """sqrt(input**2 + other**2) without overflow or underflow in between."""
    return _binary("hypot", input, other)


def copysign(input: Any, other: Any) -> Tensor:  # noqa: A002
    """|input| with the sign of other."""
    return _binary("copysign", input, other)


def floor_div(input: Any, other: Any) -> Tensor:  # noqa: A002
    """Python's // (numpy.floor_divide), in the input's dtype. Integer x // 0 is 0."""
    return _binary("floor_div", input, other)


def ceil_div(input: Any, other: Any) -> Tensor:  # noqa: A002
    """ceil(input / other) on integer tensors: -((-input) // other)."""
    x = _t(input, "ceil_div")
    if not _is_int(x):
        raise _core.UserError(f"pypto.ceil_div needs an integer tensor, got {x!r}" + _suffix()
                              + "\nhint: for floats use pypto.ceil(pypto.div(a, b))")
    return neg(_binary("floor_div", neg(x), other))


def remainder(input: Any, other: Any) -> Tensor:  # noqa: A002
    """Python's % (numpy.remainder): the result has the divisor's sign. Integer x % 0 is 0. For
    fp16 / bf16 a zero result has the dividend's sign (torch's, the 16-bit contract)."""
    r = _binary("remainder", input, other)
    if r.dtype in (DT_FP16, DT_BF16):
        return where(eq(r, 0.0), _binary("copysign", r, input), r)
    return r


def fmod(input: Any, other: Any) -> Tensor:  # noqa: A002
    """C's fmod (numpy.fmod): the result has the dividend's sign."""
    return _binary("fmod", input, other)


def gcd(input: Any, other: Any) -> Tensor:  # noqa: A002
    """Greatest common divisor of |input| and |other| on integer tensors (gcd(0, 0) = 0)."""
    return _binary("gcd", input, other)


def lrelu(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    """x if x >= 0 else negative_slope * x (16-bit inputs compute in fp32)."""
    x = _t(input, "lrelu")
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)) or \
            not math.isfinite(negative_slope) or negative_slope < 0:
        raise _core.UserError(f"pypto.lrelu: negative_slope must be a finite number >= 0, got {negative_slope!r}"
                              + _suffix())
    return _binary("lrelu", x, float(negative_slope))


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """x if x >= 0 else weight[c] * x, with c the index along dim 1 (weight has 1 entry, or one per
    channel of dim 1; a 1-D input uses weight[0])."""
    x, w = _t(input, "prelu"), _t(weight, "prelu")
    if w.ndim != 1:
        raise _core.UserError(f"pypto.prelu: weight must be 1-D, got {w!r}" + _suffix())
    if x.ndim >= 2 and not (isinstance(w.shape[0], int) and w.shape[0] == 1):
        w = reshape(w, [1, w.shape[0]] + [1] * (x.ndim - 2))
    return _binary("lrelu", x, w)


def expand_exp_dif(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """exp(input - other) with broadcasting (x - row max, then exp: one fused instruction)."""
    return exp(sub(input, other))


def axpy_(y: Tensor, x: Tensor, alpha: float = 1.0) -> Tensor:
    """y = alpha * x + y, updating y as PyPTO's ``y.move(...)`` does: a parameter (or a tensor
    the function made) is written; a view made by ``pypto.view`` takes the result as its value
    and the viewed tensor keeps its data (PyPTO's views are handles). x broadcasts to y, y does
    not broadcast. fp32 + fp32, fp16 + fp16 (in fp32, rounded once) and fp32 (y) + fp16 (x)."""
    yt, xt = _t(y, "axpy_"), _t(x, "axpy_")
    if (yt.dtype, xt.dtype) not in ((DT_FP32, DT_FP32), (DT_FP16, DT_FP16), (DT_FP32, DT_FP16)):
        raise _core.UserError(f"pypto.axpy_: y {yt!r} and x {xt!r}: the dtypes must be DT_FP32 + DT_FP32, "
                              "DT_FP16 + DT_FP16 or DT_FP32 (y) + DT_FP16 (x), as in PyPTO" + _suffix())
    if yt.ndim != xt.ndim or any(isinstance(a, int) and isinstance(b, int) and a == 1 and b != 1
                                 for a, b in zip(yt.shape, xt.shape)):
        raise _core.UserError(f"pypto.axpy_: x {xt!r} must broadcast to y {yt!r} (same rank; y does not "
                              "broadcast)" + _suffix())
    res = add(cast(yt, DT_FP32) if yt.dtype != DT_FP32 else yt,
              mul(cast(xt, DT_FP32) if xt.dtype != DT_FP32 else xt, float(alpha)))
    yt.move(res if yt.dtype == DT_FP32 else cast(res, yt.dtype))
    return yt
