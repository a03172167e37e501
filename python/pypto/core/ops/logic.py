"""Comparisons (DT_BOOL results), logical and bitwise ops, where and clip."""

from __future__ import annotations

import builtins
import math as _pymath
from typing import Any, Optional, Tuple, Union

import numpy as np

import pypto._core as _core
from .._dtypes import (DT_BOOL, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_UINT8, DT_UINT16, is_float_dtype,
                       is_int_dtype, to_numpy_dtype)
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor
from .._dtypes import exact_int64 as _exact
from .core import _convert as cast
from .core import _binary, _known, _run_time_scalar, _scalar, _suffix, _t, _unary, abs, fit_valid, maximum, minimum

__all__ = [
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "isnan", "isfinite", "isinf", "signbit", "where", "clip",
]

_SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))


def _record(op: str, inputs: list, attrs: dict) -> Tensor:
    rec = current_recorder(op)
    return Tensor(_rec=rec, _id=rec.op(op, [t._id for t in inputs], attrs, user_loc()))


def _int_scalar_compare(op: str, x: Tensor, s: Union[int, float]) -> Tuple[str, int]:
    """x op s for an integer tensor and any real s, as an exact comparison with an integer the
    dtype holds (x < 2.5 is x < 3; Python ints compare exactly, beyond 2^53 too)."""
    info = np.iinfo(to_numpy_dtype(x.dtype))
    lo, hi = int(info.min), int(info.max)
    always, never = ("ge", lo), ("lt", lo)  # x >= MIN is always true, x < MIN never
    if s != s:  # NaN: only != holds
        return always if op == "ne" else never
    finite = isinstance(s, int) or _pymath.isfinite(s)
    if op in ("eq", "ne"):
        if finite and s == _pymath.floor(s) and lo <= s <= hi:
            return op, int(s)
        return never if op == "eq" else always
    if op in ("lt", "ge"):  # x < s  <=>  x < ceil(s);  x >= s  <=>  x >= ceil(s)
        c = _pymath.ceil(s) if finite else s
        if c > hi:
            return always if op == "lt" else never
        if c <= lo:
            return never if op == "lt" else always
        return op, int(c)
    f = _pymath.floor(s) if finite else s  # x <= s <=> x <= floor(s); x > s <=> x > floor(s)
    if f >= hi:
        return always if op == "le" else never
    if f < lo:
        return never if op == "le" else always
    return op, int(f)


def _compare(op: str, x: Any, y: Any) -> Tensor:
    x, y = _known(x), _known(y)
    if (_is_scalar(x) or isinstance(x, _core.SymbolicScalar)) and isinstance(y, Tensor):  # 2 < t is t > 2
        x, y, op = y, x, _SWAPPED[op]
    x = _t(x, op)
    if isinstance(y, _core.SymbolicScalar):  # known at run time: against a tile of it in x's dtype
        if x.dtype in (DT_INT8, DT_INT16, DT_UINT8, DT_UINT16):  # an index past their range compares exactly
            x = cast(x, DT_INT32)
        return _record(op, [x], _run_time_scalar(y))
    if isinstance(y, (bool, np.bool_)):
        raise _core.UserError(f"pypto.{op}: a bool operand is not supported" + _suffix())
    if _is_scalar(y):
        y = y.item() if isinstance(y, np.number) else y
        if is_int_dtype(x.dtype):
            op, i = _int_scalar_compare(op, x, y)
            return _record(op, [x], {"scalar": float(i), "scalar_int": _exact(i)})
        return _record(op, [x], {"scalar": _scalar(y, op)})
    return _record(op, fit_valid([x, _t(y, op)]), {})


def eq(input: Any, other: Any) -> Tensor:  # noqa: A002 - PyPTO's parameter names
    """input == other elementwise (DT_BOOL), with broadcasting; other may be a scalar."""
    return _compare("eq", input, other)


def ne(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input != other elementwise (DT_BOOL); NaN != anything."""
    return _compare("ne", input, other)


def lt(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input < other elementwise (DT_BOOL)."""
    return _compare("lt", input, other)


def le(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input <= other elementwise (DT_BOOL)."""
    return _compare("le", input, other)


def gt(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input > other elementwise (DT_BOOL)."""
    return _compare("gt", input, other)


def ge(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input >= other elementwise (DT_BOOL)."""
    return _compare("ge", input, other)


def greater(input: Any, other: Any) -> Tensor:  # noqa: A002
    """PyPTO's alias of gt."""
    return _compare("gt", input, other)


def _as_bool(x: Any, op: str) -> Tensor:
    """Non-zero is True (NaN included), as numpy's logical ops read their operands."""
    x = _t(x, op)
    return x if x.dtype == DT_BOOL else _compare("ne", x, 0)


def logical_and(input: Any, other: Any) -> Tensor:  # noqa: A002
    """Elementwise AND of the truth values (non-zero is True); operands of any dtypes."""
    return _binary("bitwise_and", _as_bool(input, "logical_and"), _as_bool(other, "logical_and"))


def logical_or(input: Any, other: Any) -> Tensor:  # noqa: A002
    """Elementwise OR of the truth values (non-zero is True)."""
    return _binary("bitwise_or", _as_bool(input, "logical_or"), _as_bool(other, "logical_or"))


def logical_xor(input: Any, other: Any) -> Tensor:  # noqa: A002
    """Elementwise XOR of the truth values (non-zero is True)."""
    return _binary("bitwise_xor", _as_bool(input, "logical_xor"), _as_bool(other, "logical_xor"))


def logical_not(input: Any) -> Tensor:  # noqa: A002
    """True where the input is zero (DT_BOOL)."""
    x = _t(input, "logical_not")
    return _unary("bitwise_not", x) if x.dtype == DT_BOOL else _compare("eq", x, 0)


def bitwise_and(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input & other on integer or bool tensors; other may be an int."""
    return _binary("bitwise_and", input, other)


def bitwise_or(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input | other on integer or bool tensors; other may be an int."""
    return _binary("bitwise_or", input, other)


def bitwise_xor(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input ^ other on integer or bool tensors; other may be an int."""
    return _binary("bitwise_xor", input, other)


def bitwise_not(input: Any) -> Tensor:  # noqa: A002
    """~input on integers, not input on bool."""
    return _unary("bitwise_not", input)


def bitwise_left_shift(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input << other on integers (shifts of the width or more give 0); either may be an int."""
    return _binary("bitwise_left_shift", input, other)


def bitwise_right_shift(input: Any, other: Any) -> Tensor:  # noqa: A002
    """input >> other on integers, arithmetic for signed types; either may be an int."""
    return _binary("bitwise_right_shift", input, other)


def isnan(input: Any) -> Tensor:  # noqa: A002
    """True where the input is NaN (never for integers)."""
    x = _t(input, "isnan")
    return _compare("ne", x, x)


def isfinite(input: Any) -> Tensor:  # noqa: A002
    """True where the input is neither infinite nor NaN (always for integers)."""
    x = _t(input, "isfinite")
    if not is_float_dtype(x.dtype):
        return _compare("eq", x, x)
    return _compare("lt", abs(x), float("inf"))


def isinf(input: Any) -> Tensor:  # noqa: A002
    """True where the input is +inf or -inf (never for integers)."""
    x = _t(input, "isinf")
    if not is_float_dtype(x.dtype):
        return _compare("ne", x, x)
    return _compare("eq", abs(x), float("inf"))


def signbit(input: Any) -> Tensor:  # noqa: A002
    """True where the sign bit is set (numpy.signbit: -0.0 and negative NaNs included)."""
    x = _t(input, "signbit")
    if not is_float_dtype(x.dtype):
        return _compare("lt", x, 0)
    return _compare("lt", _copysign_one(x), 0)


def _copysign_one(x: Tensor) -> Tensor:
    """1 with the sign of x (the scalar-first form of copysign)."""
    rec = current_recorder("signbit")
    return Tensor(_rec=rec, _id=rec.binary_scalar("copysign", x._id, 1.0, user_loc(), True))


def where(condition: Any, input: Any, other: Any) -> Tensor:  # noqa: A002 - PyPTO's names
    """condition ? input : other elementwise, with broadcasting. The condition is a DT_BOOL tensor;
    input and other are tensors of one dtype or Python scalars (a scalar takes the other operand's
    dtype; with two scalars the result is fp32)."""
    cond = _t(condition, "where")
    inputs = [cond]
    attrs: dict = {}
    tensors = [v for v in (input, other) if isinstance(v, Tensor)]
    dtype = _t(tensors[0], "where").dtype if tensors else DT_FP32
    for key, v in (("a_scalar", input), ("b_scalar", other)):
        if isinstance(v, Tensor):
            inputs.append(_t(v, "where"))
            continue
        if not _is_scalar(v) and not isinstance(v, (bool, np.bool_)):
            raise _core.UserError(f"pypto.where: {key[0]} must be a pypto.Tensor or a Python scalar, got "
                                  f"{type(v).__name__}" + _suffix())
        s = float(v)
        if is_int_dtype(dtype) and (not _pymath.isfinite(s) or s != _pymath.floor(s)):
            raise _core.UserError(f"pypto.where: the scalar {v!r} is not an integer but the other value is an "
                                  f"integer tensor ({dtype})" + _suffix())
        if is_int_dtype(dtype):
            info = np.iinfo(to_numpy_dtype(dtype))
            if not info.min <= s <= info.max:
                raise _core.UserError(f"pypto.where: the scalar {v!r} is out of the range of "
                                      f"{_core.dtype_name(dtype)} [{info.min}, {info.max}] of the other value"
                                      + _suffix()
                                      + "\nhint: use a scalar the dtype can hold, or cast the tensor first")
        attrs[key] = s
        if is_int_dtype(dtype) and _exact(v) is not None:
            attrs[key + "_int"] = _exact(v)
    if not tensors:
        attrs["dtype"] = DT_FP32
    return _record("where", fit_valid(inputs), attrs)


def clip(input: Any, min: Optional[Any] = None, max: Optional[Any] = None) -> Tensor:  # noqa: A001,A002
    """min(max(input, min), max) elementwise: bounds are scalars or tensors that broadcast to the
    input; a missing bound is no bound; NaN propagates; when min > max the result is max."""
    x = _t(input, "clip")
    if is_int_dtype(x.dtype):  # integer bounds: x >= 2.5 is x >= 3, and within the dtype
        info = np.iinfo(to_numpy_dtype(x.dtype))
        lo, hi = int(info.min), int(info.max)  # (Python ints: exact beyond 2^53)
        if _is_scalar(min):
            m = min.item() if isinstance(min, np.number) else min
            min = m if m != m else builtins.max(lo, builtins.min(_pymath.ceil(m) if _pymath.isfinite(m) else m, hi))
        if _is_scalar(max):
            m = max.item() if isinstance(max, np.number) else max
            max = m if m != m else builtins.min(hi, builtins.max(_pymath.floor(m) if _pymath.isfinite(m) else m, lo))
    out = x
    if min is not None:
        out = maximum(out, min)
    if max is not None:
        out = minimum(out, max)
    return out
