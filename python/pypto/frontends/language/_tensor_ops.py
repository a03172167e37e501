"""Tensor-level operators of ``pypto.language`` beside the tile ops of ``_ops``: ``pl.transpose``.

Each is the tensor-level op of the same meaning recorded into the one IR (here
``pypto.transpose``, a load through a remapped view of the operand: no copy on chip), with the
language's checks and placement."""

from __future__ import annotations

import operator
from typing import Any, Callable, List

import pypto._core as _core
from ...core.ops import shape as _shape_ops
from ...core._tracing import _format_loc, current_recorder, user_loc
from ...core.tensor import Tensor
from ._ops import _is_tile, _mark, _require, _tile_shape
from ._trace import current_trace
from ._types import MemorySpace

__all__ = ["transpose"]


def _loc() -> str:
    return _format_loc(user_loc())


def _axis(value: Any, what: str, ndim: int, shape: List[Any]) -> int:
    """`value` as an axis of a rank-`ndim` operand (negative counts from the end)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        axis = operator.index(value)  # an int, or a numpy integer
    except TypeError:
        raise _core.UserError(f"pl.transpose: {what} must be an int known when the function is traced, got "
                              f"{value!r}" + _loc()) from None
    if not -ndim <= axis < ndim:
        raise _core.UserError(f"pl.transpose: {what}={axis} is out of range for the {ndim}-D operand {shape}"
                              + _loc() + f"\nhint: use an axis in [{-ndim}, {ndim - 1}]")
    return axis % ndim


def _with_tile_shape(shape: List[int], fn: Callable[[], Tensor]) -> Tensor:
    """Records `fn()` with the vec tile shape set to `shape` (one tile of work: the result's
    tile, which for a transpose is not the operand's)."""
    rec = current_recorder("tile op")
    saved = list(rec.vec_tile_shapes())
    rec.set_vec_tile_shapes(shape, user_loc())
    try:
        return fn()
    finally:
        if saved:
            rec.set_vec_tile_shapes(saved, user_loc())
        else:
            rec.clear_vec_tile_shapes()


def transpose(input: Tensor, axis1: int, axis2: int) -> Tensor:  # noqa: A002 - the language's name
    """``pl.transpose(x, axis1, axis2)``: `x` with the two axes swapped (a tensor, or a tile:
    the result is a tile in the same memory space). Axes may be negative (counted from the end)
    and must name two different axes of an operand of at least 2 dims. In an in-core scope it
    runs on any core; in the orchestration body it takes a tensor (upstream's metadata view: here
    the consumers read the swapped view)."""
    current_trace("transpose")
    if not isinstance(input, Tensor) or not input.is_traced:
        raise _core.UserError(f"pl.transpose: expected a tensor or tile of the function, got {type(input).__name__}"
                              + _loc())
    shape = list(input.shape)
    ndim = len(shape)
    if ndim < 2:
        raise _core.UserError(f"pl.transpose: needs an operand of at least 2 dims, got the {ndim}-D {shape}" + _loc())
    a = _axis(axis1, "axis1", ndim, shape)
    b = _axis(axis2, "axis2", ndim, shape)
    if a == b:
        raise _core.UserError(f"pl.transpose: axis1 and axis2 must be different, but got axis1={axis1}, "
                              f"axis2={axis2} (both axis {a} of the {ndim}-D operand {shape})" + _loc()
                              + "\nhint: naming the same axis twice is refused, not a no-op")
    if not _is_tile(input):
        return _shape_ops.transpose(input, a, b)
    _require("transpose", "move")  # a tile: on chip, in its memory space (Vec or Mat)
    dims = _tile_shape(input)
    dims[a], dims[b] = dims[b], dims[a]
    out = _with_tile_shape(dims, lambda: _shape_ops.transpose(input, a, b))
    return _mark(out, dims, getattr(input, "_pl_mem", MemorySpace.Vec))
