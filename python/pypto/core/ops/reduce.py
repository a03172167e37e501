"""Reductions and scans beyond sum / amax / amin / mean: prod, argmax, argmin, var, cumsum,
cumprod. argmax/argmin and the scans keep their whole axis in one tile (the axis needs a static
size); prod and var reduce across tiles like sum."""

from __future__ import annotations

from typing import Any, Sequence, Union

import pypto._core as _core
from .._dtypes import DT_INT64, DT_UINT16, DT_UINT32, DT_UINT64, is_float_dtype, is_int_dtype
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor
from .cast import cast
from .core import _narrow, _on_reduced, _reduce, _suffix, _t, _widen, div, mean, mul, sqrt, sub, sum

__all__ = ["prod", "argmax", "argmin", "cumsum", "cumprod", "var", "std"]


def _dim(x: Tensor, dim: Any, op: str) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise _core.UserError(f"pypto.{op}: dim must be an int, got {dim!r}" + _suffix())
    return dim % x.ndim if -x.ndim <= dim < x.ndim else dim  # out of range: the recorder says so


def _record(op: str, x: Tensor, attrs: dict) -> Tensor:
    rec = current_recorder(op)
    return Tensor(_rec=rec, _id=rec.op(op, [x._id], attrs, user_loc()))


def prod(input: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:  # noqa: A002 - PyPTO's name
    """Product along ``dim`` (16-bit inputs multiply in fp32 and round once)."""
    x, dt = _widen(_t(input, "prod"))
    y = _reduce("prod", x, dim, keepdim)
    return _on_reduced(lambda: _narrow(y, dt), x.ndim, [] if keepdim else [dim % x.ndim])


def argmax(input: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:  # noqa: A002
    """Index (int32) of the first maximum along ``dim``; a NaN counts as the maximum (numpy)."""
    x = _t(input, "argmax")
    return _record("argmax", x, {"dim": _dim(x, dim, "argmax"), "keepdim": bool(keepdim)})


def argmin(input: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:  # noqa: A002
    """Index (int32) of the first minimum along ``dim``; a NaN counts as the minimum (numpy)."""
    x = _t(input, "argmin")
    return _record("argmin", x, {"dim": _dim(x, dim, "argmin"), "keepdim": bool(keepdim)})


def _scan(op: str, input: Any, dim: int) -> Tensor:  # noqa: A002
    x = _t(input, op)
    if is_int_dtype(x.dtype):
        # Integer scans accumulate in 64 bits, as numpy and torch do: uint16/32/64 in uint64
        # (numpy's choice; uint8 follows torch, int64).
        wide = DT_UINT64 if x.dtype in (DT_UINT16, DT_UINT32, DT_UINT64) else DT_INT64
        if x.dtype != wide:
            x = cast(x, wide)
    return _record(op, x, {"dim": _dim(x, dim, op)})


def cumsum(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """Inclusive prefix sum along ``dim``, in order (numpy.cumsum); integers give int64
    (uint16/32/64: uint64), fp16 and bf16 accumulate in fp32 and round each result."""
    return _scan("cumsum", input, dim)


def cumprod(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """Inclusive prefix product along ``dim``; integers give int64 (uint16/32/64: uint64)."""
    return _scan("cumprod", input, dim)


def var(input: Tensor, dim: Union[int, Sequence[int], None] = None, correction: float = 1,  # noqa: A002
        keepdim: bool = False) -> Tensor:
    """Variance sum((x - mean)**2) / max(0, N - correction) over ``dim`` (an int, a list of dims,
    or None or an empty list for all, as PyPTO's ``var(x, [], 1)``); 16-bit inputs compute in
    fp32. A reduced dim of run-time size takes an integer correction (N is known when the tile
    runs)."""
    x = _t(input, "var")
    if not is_float_dtype(x.dtype):
        raise _core.UserError(f"pypto.var needs a floating-point tensor, got {x!r}" + _suffix())
    dims = [dim] if isinstance(dim, int) else list(dim) if dim is not None else []
    if not dims:
        dims = list(range(x.ndim))
    dims = sorted({_dim(x, d, "var") for d in dims})
    n = 1
    for d in dims:
        if not isinstance(d, int) or not 0 <= d < x.ndim:
            raise _core.UserError(f"pypto.var: dim {d} is out of range for {x!r}" + _suffix())
        n = n * x.shape[d]
    if isinstance(n, int):
        denom: Any = max(0.0, n - float(correction))  # 0: inf, or NaN for a constant input (numpy)
    elif float(correction) == int(correction):
        denom = _core.sym_max(_core.to_sym(n) - int(correction), _core.to_sym(0))
    else:
        raise _core.UserError(f"pypto.var: correction={correction!r} over dims {dims} of run-time size of {x!r}: "
                              "the correction must be an integer there" + _suffix())
    xw, dt = _widen(x)
    m = xw
    for d in dims:
        m = mean(m, d, keepdim=True)
    c = sub(xw, m)
    sq = mul(c, c)
    for d in reversed(dims):
        sq = sum(sq, d, keepdim=keepdim)
    return _on_reduced(lambda: _narrow(div(sq, denom), dt), x.ndim, [] if keepdim else dims)


def std(input: Tensor, dim: Union[int, Sequence[int], None] = None, *, correction: float = 1,  # noqa: A002
        keepdim: bool = False) -> Tensor:
    """Standard deviation: sqrt(var(...))."""
    x = _t(input, "std")
    xw, dt = _widen(x)
    v = var(xw, dim, correction=correction, keepdim=keepdim)
    dims = [dim] if isinstance(dim, int) else list(dim) if dim is not None else []
    removed = [] if keepdim else dims or list(range(x.ndim))
    return _on_reduced(lambda: _narrow(sqrt(v), dt), x.ndim, sorted({d % x.ndim for d in removed}))

