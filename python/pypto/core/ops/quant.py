"""int8 quantization: quantize / dequantize with per-row (axis=-1) or per-column (axis=-2)
scales and optional zero points, as PyPTO documents them (composites of mul, add, sub, cast)."""

from __future__ import annotations

from typing import Any, Optional

import pypto._core as _core
from ..._core import DataType
from .._dtypes import DT_FP32, DT_INT8, DT_UINT8, is_float_dtype, is_int_dtype
from ..tensor import Tensor
from .cast import cast
from .core import CastMode, _suffix, _t, add, mul, sub
from .shape import unsqueeze

__all__ = ["quantize", "dequantize"]


def _per(op: str, x: Tensor, v: Any, axis: int, what: str) -> Tensor:
    """A scale or zero-point tensor (x's shape without `axis`) with `axis` back as a dim of 1."""
    v = _t(v, op)
    want = [d for i, d in enumerate(x.shape) if i != axis % x.ndim]
    if v.ndim != len(want) or any(not _core.to_sym(a).same_as(_core.to_sym(b)) for a, b in zip(v.shape, want)):
        raise _core.UserError(f"pypto.{op}: {what} {v!r} must have the input's shape without dim {axis} "
                              f"({tuple(want)})" + _suffix())
    v = v if v.dtype == DT_FP32 else cast(v, DT_FP32)
    return unsqueeze(v, axis)


def _axis(op: str, x: Tensor, axis: int) -> int:
    if axis not in (-1, -2) or (axis == -2 and x.ndim < 2):
        raise _core.UserError(f"pypto.{op}: axis must be -1 (a scale per row) or -2 (per column) and within "
                              f"{x!r}, got {axis!r}" + _suffix())
    return axis


def quantize(input: Tensor, scale: Tensor, otype: DataType, axis: int = -1,  # noqa: A002
             zero_points: Optional[Tensor] = None) -> Tensor:
    """round_half_even(input * scale [+ zero_points]) saturated to otype (DT_INT8 or DT_UINT8);
    scale and zero_points have the input's shape without ``axis``, computed in fp32."""
    x = _t(input, "quantize")
    if otype not in (DT_INT8, DT_UINT8):
        raise _core.UserError(f"pypto.quantize: otype must be DT_INT8 or DT_UINT8, got {otype!r}" + _suffix())
    if not is_float_dtype(x.dtype):
        raise _core.UserError(f"pypto.quantize needs a floating-point input, got {x!r}" + _suffix())
    a = _axis("quantize", x, axis)
    xf = x if x.dtype == DT_FP32 else cast(x, DT_FP32)
    q = mul(xf, _per("quantize", x, scale, a, "scale"))
    if zero_points is not None:
        q = add(q, _per("quantize", x, zero_points, a, "zero_points"))
    return cast(q, otype, CastMode.CAST_RINT)  # round half to even, then saturate


def dequantize(input: Tensor, scale: Tensor, otype: DataType = DT_FP32, axis: int = -1,  # noqa: A002
               zero_points: Optional[Tensor] = None) -> Tensor:
    """(float(input) [- zero_points]) * scale in fp32, scale and zero_points with the input's shape
    without ``axis``. The zero point is subtracted, as PTO's TDEQUANT does and PyPTO's own
    dequantize tests check; its operation page writes ``+`` (docs/porting.md)."""
    x = _t(input, "dequantize")
    if not is_int_dtype(x.dtype):
        raise _core.UserError(f"pypto.dequantize needs an integer input, got {x!r}" + _suffix())
    if otype != DT_FP32:
        raise _core.UserError(f"pypto.dequantize: otype must be DT_FP32, got {otype!r}" + _suffix())
    a = _axis("dequantize", x, axis)
    xf = cast(x, DT_FP32)
    if zero_points is not None:
        xf = sub(xf, _per("dequantize", x, zero_points, a, "zero_points"))
    return mul(xf, _per("dequantize", x, scale, a, "scale"))
