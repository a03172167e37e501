"""The cross-core pipe of ``pypto.language``: ``pl.tpush_to_aiv`` / ``pl.tpush_to_aic`` hand a tile
from a cube function to a vector one (or back), ``pl.tpop_from_aic`` / ``pl.tpop_from_aiv`` take
it, ``pl.tfree_to_aic`` / ``pl.tfree_to_aiv`` release its ring slot; the pipes pair in program
order per pipe id (the trace's FIFOs, ``_trace._Trace``)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import pypto._core as _core
from ...core._tracing import user_loc
from ...core.control import bytes_of
from ...core.tensor import Tensor
from ._trace import current_trace
from ._types import Level, MemorySpace

from ._ops import (_CAPACITY, _loc, _mark, _require, _tile_shape)


# --- the cross-core pipe ---------------------------------------------------------------------------------


def _push(op: str, direction: str, tile: Tensor, split: int, pipe_id: Optional[int]) -> None:
    level = _require(op, "move")
    producer = Level.AIC if direction == "aic->aiv" else Level.AIV
    if level not in (producer, Level.CORE_GROUP):
        raise _core.UserError(f"pl.{op} pushes from the {producer.value} side, but it is called in an "
                              f"{level.value} function or scope" + _loc())
    if not isinstance(tile, Tensor) or not tile.is_traced:
        raise _core.UserError(f"pl.{op}: pushes a tile, got {type(tile).__name__}" + _loc())
    trace = current_trace(op)
    scope = trace.incore()
    slots = scope.slots if scope is not None else 2
    shape = _tile_shape(tile) or [d if isinstance(d, int) else 1 for d in tile.shape]
    # The ring lives in the consumer's buffer: UB for a cube -> vector pipe, L1 the other way.
    mem = MemorySpace.Vec if direction == "aic->aiv" else MemorySpace.Mat
    key, name = _CAPACITY[mem]
    cap = int(_core.machine_info(trace.machine)[key])
    ring = slots * math.prod(shape) * bytes_of(tile.dtype)
    if ring > cap:
        raise _core.UserError(f"pl.{op}: the cross-core ring of {slots} slots of a {list(shape)} "
                              f"{_core.dtype_name(tile.dtype)} tile is {ring} bytes, more than the consumer's {name} "
                              f"buffer of {cap} bytes on {trace.machine}" + _loc()
                              + "\nhint: push a smaller tile, or lower the depth with "
                              "optimizations=[pl.cross_core_slot(slot_num=N)]")
    trace.fifos.setdefault((direction, pipe_id or 0), []).append((tile, user_loc()))


def _pop(op: str, direction: str, shape: Optional[Sequence[int]], dtype: Any, pipe_id: Optional[int]) -> Tensor:
    level = _require(op, "move")
    consumer = Level.AIV if direction == "aic->aiv" else Level.AIC
    if level not in (consumer, Level.CORE_GROUP):
        raise _core.UserError(f"pl.{op} pops on the {consumer.value} side, but it is called in an {level.value} "
                              "function or scope" + _loc())
    trace = current_trace(op)
    queue = trace.fifos.get((direction, pipe_id or 0), [])
    push = "tpush_to_aiv" if direction == "aic->aiv" else "tpush_to_aic"
    if not queue:
        raise _core.UserError(f"pl.{op}: no tile has been pushed to this pipe (id {pipe_id or 0}): there is no "
                              f"matching pl.{push} before it" + _loc()
                              + "\nhint: call the producer function before the consumer in the orchestration, and "
                              "push once per pop")
    tile, push_loc = queue.pop(0)
    pushed_shape = _tile_shape(tile) or list(tile.shape)
    if shape is not None and [int(d) for d in shape] != [int(d) if isinstance(d, int) else d for d in pushed_shape]:
        raise _core.UserError(f"pl.{op}: pops a {list(shape)} tile, but the tile pushed at line {push_loc[1]} is "
                              f"{list(pushed_shape)}" + _loc())
    if dtype is not None and dtype != tile.dtype:
        raise _core.UserError(f"pl.{op}: pops a {_core.dtype_name(dtype)} tile, but the tile pushed at line "
                              f"{push_loc[1]} is {_core.dtype_name(tile.dtype)}" + _loc())
    free = "tfree_to_aic" if direction == "aic->aiv" else "tfree_to_aiv"
    # A fresh Python object for the popped tile: it is the same value of the graph.
    popped = Tensor(_rec=tile._rec, _id=tile._id)
    _mark(popped, [d if isinstance(d, int) else 1 for d in pushed_shape],
          MemorySpace.Vec if direction == "aic->aiv" else MemorySpace.Mat)
    trace.popped[id(popped)] = (popped, free, user_loc())
    return popped


def _free(op: str, tile: Tensor) -> None:
    _require(op, "move")
    trace = current_trace(op)
    entry = trace.popped.pop(id(tile), None)
    if entry is None:
        raise _core.UserError(f"pl.{op}: this tile was not popped from a pipe (or was freed already)" + _loc())
    if entry[1] != op:
        raise _core.UserError(f"pl.{op}: the tile was popped from the other pipe; release it with pl.{entry[1]}"
                              + _loc())


def tpush_to_aiv(tile: Tensor, *, split: int = 0, lane_stride: Optional[int] = None, id: Optional[int] = None) -> None:  # noqa: A002
    """Pushes a tile from the cube (AIC) side to the vector (AIV) side."""
    _push("tpush_to_aiv", "aic->aiv", tile, split, id)


def tpush_to_aic(tile: Tensor, *, split: int = 0, id: Optional[int] = None) -> None:  # noqa: A002
    """Pushes a tile from the vector (AIV) side to the cube (AIC) side."""
    _push("tpush_to_aic", "aiv->aic", tile, split, id)


def tpop_from_aic(*, shape: Optional[Sequence[int]] = None, dtype: Any = None, split: int = 0,
                  lane_stride: Optional[int] = None, id: Optional[int] = None) -> Tensor:  # noqa: A002
    """Pops, on the AIV side, the oldest tile the AIC side pushed (release it with tfree_to_aic)."""
    return _pop("tpop_from_aic", "aic->aiv", shape, dtype, id)


def tpop_from_aiv(*, shape: Optional[Sequence[int]] = None, dtype: Any = None, split: int = 0,
                  id: Optional[int] = None) -> Tensor:  # noqa: A002
    """Pops, on the AIC side, the oldest tile the AIV side pushed (release it with tfree_to_aiv)."""
    return _pop("tpop_from_aiv", "aiv->aic", shape, dtype, id)


def tfree_to_aic(tile: Tensor, *, split: Optional[int] = None, id: Optional[int] = None) -> None:  # noqa: A002
    """Releases a tile popped with tpop_from_aic (its ring slot goes back to the producer)."""
    _free("tfree_to_aic", tile)


def tfree_to_aiv(tile: Tensor, *, split: Optional[int] = None, id: Optional[int] = None) -> None:  # noqa: A002
    """Releases a tile popped with tpop_from_aiv."""
    _free("tfree_to_aiv", tile)


def aic_initialize_pipe(*args: Any, **kwargs: Any) -> None:
    """Sets up the cube side of a pipe (nothing to set up here: the pipe is part of the trace)."""
    _require("aic_initialize_pipe", "move")


def aiv_initialize_pipe(*args: Any, **kwargs: Any) -> None:
    """Sets up the vector side of a pipe (nothing to set up here)."""
    _require("aiv_initialize_pipe", "move")


