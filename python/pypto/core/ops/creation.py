"""Tensors made inside a function: full, zeros, ones, arange. Their elements are computed tile by
tile where they are used (no memory is written unless the result must live there)."""

from __future__ import annotations

import math as _pymath
from typing import Any, List, Optional, Sequence

import numpy as np

import pypto._core as _core
from ..._core import DataType, SymbolicScalar
from .._dtypes import DT_BOOL, DT_FP32, DT_INT32, DT_INT64, check_dtype, is_int_dtype, to_numpy_dtype
from .._tracing import at_top_level, automatic_tiles, current_recorder, user_loc
from ..tensor import Tensor
from .._dtypes import exact_int64 as _exact
from .core import _convert as cast
from .core import _suffix, add, mul
from ..tensor_factory import tensor

__all__ = ["full", "zeros", "ones", "arange"]


def _shape(size: Any, op: str) -> List[Any]:
    if isinstance(size, (int, SymbolicScalar)) and not isinstance(size, bool):
        return [size]
    if not isinstance(size, (list, tuple)) or not size:
        raise _core.UserError(f"pypto.{op}: the size must be a non-empty list of dims, got {size!r}" + _suffix())
    for d in size:
        if not isinstance(d, (int, SymbolicScalar)) or isinstance(d, bool):
            raise _core.UserError(f"pypto.{op}: dim {d!r} of {list(size)} is not an int or a symbolic dim"
                                  + _suffix())
    return list(size)


def _record(op: str, attrs: dict) -> Tensor:
    rec = current_recorder(op)
    return Tensor(_rec=rec, _id=rec.op(op, [], attrs, user_loc()))


def full(size: Sequence[Any], fill_value: Any, dtype: DataType, *,
         valid_shape: Optional[Sequence[Any]] = None) -> Tensor:
    """A tensor of ``size`` (dims may be symbolic) holding ``fill_value`` in ``dtype``; with
    ``valid_shape``, the tensor has that shape (on the CPU there is no padding to fill).

    Made outside every runtime loop and branch, it is a tensor in memory that later code may
    write (``acc = pypto.full([1, n], 0.0, ...)`` before a loop that does ``acc[:] = acc + x``,
    as PyPTO programs accumulate); inside one, a value computed where it is used."""
    value = full_value(size, fill_value, dtype, valid_shape=valid_shape)
    if not at_top_level():
        return value
    out = tensor(list(value.shape), dtype)
    with automatic_tiles("full"):
        out[...] = value
    return out


def full_value(size: Sequence[Any], fill_value: Any, dtype: DataType, *,
               valid_shape: Optional[Sequence[Any]] = None) -> Tensor:
    """pypto.full as a value computed where it is used (not a tensor in memory)."""
    dtype = check_dtype(dtype, "pypto.full", _suffix())
    shape = _shape(valid_shape if valid_shape is not None else size, "full")
    if isinstance(fill_value, _core.SymbolicScalar) and fill_value.is_concrete():
        fill_value = int(fill_value)
    if isinstance(fill_value, _core.SymbolicScalar):  # known at run time (a loop index, a dim)
        return _record("full", {"shape": shape, "value": 0.0, "value_expr": [fill_value], "dtype": dtype})
    if isinstance(fill_value, (bool, np.bool_)):
        v = float(bool(fill_value))
    elif isinstance(fill_value, (int, float, np.number)):
        v = float(fill_value)
    else:
        raise _core.UserError("pypto.full: fill_value must be a Python or symbolic scalar, got "
                              f"{type(fill_value).__name__}" + _suffix())
    if is_int_dtype(dtype):
        info = np.iinfo(to_numpy_dtype(dtype))
        exact = fill_value if isinstance(fill_value, (int, np.integer)) else v  # (an int: beyond 2^53 too)
        if v != v or v != _pymath.floor(v) or not info.min <= exact <= info.max:
            raise _core.UserError(f"pypto.full: {fill_value!r} is not a value of {dtype}" + _suffix())
    elif dtype == DT_BOOL:
        v = float(v != 0)
    attrs = {"shape": shape, "value": v, "dtype": dtype}
    if is_int_dtype(dtype):  # exact beyond 2^53
        attrs["value_int"] = _exact(int(fill_value))
    return _record("full", attrs)


def _size_args(size: Sequence[Any]) -> Any:
    return size[0] if len(size) == 1 and isinstance(size[0], (list, tuple)) else list(size)


def zeros(*size: Any, dtype: Optional[DataType] = None) -> Tensor:
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros([2, 3])``; dtype (keyword) defaults to fp32."""
    return full(_size_args(size), 0, dtype or DT_FP32)


def ones(*size: Any, dtype: Optional[DataType] = None) -> Tensor:
    """A tensor of ones: ``ones(2, 3)`` or ``ones([2, 3])``; dtype (keyword) defaults to fp32."""
    return full(_size_args(size), 1, dtype or DT_FP32)


def arange(*args: Any, dtype: Optional[DataType] = None) -> Tensor:
    """``arange(end)``, ``arange(start, end)``, ``arange(start, end, step)``: a 1-D tensor of
    ceil((end - start) / step) values start + i * step, as torch.arange. Int arguments give int32
    (int64 with ``dtype=pypto.DT_INT64``), any float argument fp32; a float value is
    i * step + start, rounded after each step as numpy's fp32 arange."""
    if not 1 <= len(args) <= 3:
        raise _core.UserError(f"pypto.arange takes 1 to 3 numbers, got {len(args)}" + _suffix())
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], 1) if len(args) == 2 else args
    for v in (start, end, step):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise _core.UserError(f"pypto.arange: {v!r} is not a number (the bounds are trace-time values)"
                                  + _suffix())
    if step == 0:
        raise _core.UserError("pypto.arange: step must not be zero" + _suffix())
    n = _pymath.ceil((end - start) / step)
    if n <= 0:
        raise _core.UserError(f"pypto.arange({start}, {end}, {step}) is empty; tensors need at least one element"
                              + _suffix())
    is_float = any(isinstance(v, float) for v in (start, end, step))
    out_dt = dtype or (DT_FP32 if is_float else DT_INT32)
    if is_int_dtype(out_dt) and is_float:
        raise _core.UserError(f"pypto.arange: float bounds with the integer dtype {out_dt}" + _suffix())
    idx_dt = DT_INT64 if out_dt == DT_INT64 or n > 2 ** 31 - 1 else DT_INT32
    rec = current_recorder("arange")
    tile = list(rec.vec_tile_shapes())
    if len(tile) > 1:  # the steps after the index are 1-D: a 1-D tile of the user's last dim
        rec.set_vec_tile_shapes(tile[-1:], user_loc())
    try:
        val = _record("iota", {"shape": [n], "dim": 0, "dtype": idx_dt})
        if is_int_dtype(out_dt):
            val = val if step == 1 else mul(val, step)
            val = val if start == 0 else add(val, start)
            return val if val.dtype == out_dt else cast(val, out_dt)
        val = cast(val, out_dt)
        val = val if step == 1 else mul(val, float(step))
        return val if start == 0 else add(val, float(start))
    finally:
        if len(tile) > 1:
            rec.set_vec_tile_shapes(tile, user_loc())
