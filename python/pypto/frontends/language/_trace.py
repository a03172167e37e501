"""The per-trace state of the language (`_Trace`): placement scopes, cross-core FIFOs, loop
carries and the entry's parameters, held in a thread-local while a ``@pl.jit`` entry is traced.
The lowest module of the language: the ops (``_ops``), the loops and the functions
(``_program``) all read it."""

from __future__ import annotations

import inspect
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pypto._core as _core
from ...core._tracing import SourceLoc, _format_loc, maybe_recorder, user_loc
from ...core.tensor import Tensor
from ._types import INCORE_LEVELS, Direction, Level, declared_directions

_state = threading.local()


class _Scope:
    def __init__(self, level: Level, name: str, slots: int) -> None:
        self.level, self.name, self.slots = level, name, slots


class _Trace:
    """Placement scopes and cross-core FIFOs of one pl.jit trace."""

    def __init__(self, fn_name: str, machine: str) -> None:
        self.fn_name = fn_name
        self.machine = machine
        self.scopes: List[_Scope] = []
        # (direction, pipe id) -> pushed (tile, loc) not yet popped
        self.fifos: Dict[Tuple[str, int], List[Tuple[Any, SourceLoc]]] = {}
        self.popped: Dict[int, Tuple[Any, str, SourceLoc]] = {}  # id(tile) -> (tile, free op, loc)
        self.loop_values: List[List[Any]] = []  # pl.range(init_values=...) state, innermost last
        self.blocks: List[Tuple[Any, Any]] = []  # (index, trip count) of the enclosing pl.parallel loops
        self.spmd: List[Any] = []  # block counts of the enclosing `with pl.spmd(n):` (dispatch form)
        # id() of the entry's parameter tensors -> name, and the names passed (or a view of them) to
        # a callee's pl.Out / pl.InOut parameter: written as declared there (upstream's
        # DeriveCallDirections promotes the caller's parameter the same way).
        self.entry_params: Dict[int, str] = {}
        self.written_via_callee: set = set()
        # id(this rank's copy of a window) -> (every rank's copy, this rank): pld's ops find a
        # peer's copy from the tensor the function was handed (pld.DistributedTensor).
        self.windows: Dict[int, Any] = {}  # _program.Window

    def note_callee_writes(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any]) -> None:
        if not self.entry_params:
            return
        try:
            bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
        except TypeError:
            return
        directions = declared_directions(fn)
        for name, arg in bound.items():
            if directions.get(name) not in (Direction.Out, Direction.InOut):
                continue
            t = arg
            while isinstance(t, Tensor):
                if id(t) in self.entry_params:
                    self.written_via_callee.add(self.entry_params[id(t)])
                    break
                src = getattr(t, "_view_of", None)
                t = src[0] if src else getattr(t, "_reshape_of", None)

    def incore(self) -> Optional[_Scope]:
        for s in reversed(self.scopes):
            if s.level in INCORE_LEVELS:
                return s
        return None

    def finish(self) -> None:
        for (direction, pid), pending in self.fifos.items():
            if pending:
                _, loc = pending[0]
                pop = "tpop_from_aic" if direction == "aic->aiv" else "tpop_from_aiv"
                raise _core.UserError(f"pl.{_push_name(direction)}: a pushed tile (pipe {pid}) is never popped: no "
                                      f"pl.{pop} takes it" + _format_loc(loc)
                                      + "\nhint: every push needs a matching pop in the peer function")
        for _tile, free, loc in self.popped.values():
            raise _core.UserError(f"the tile popped here is never released with pl.{free}: on the chip its ring slot "
                                  "stays taken and the producer stalls once the ring fills" + _format_loc(loc)
                                  + f"\nhint: call pl.{free}(tile) once the tile has been used")


def _push_name(direction: str) -> str:
    return "tpush_to_aiv" if direction == "aic->aiv" else "tpush_to_aic"


def current_trace(op: str) -> _Trace:
    t = getattr(_state, "trace", None)
    if t is None or maybe_recorder() is None:
        raise _core.UserError(f"pl.{op} can only be used in a @pl.jit function while it is traced"
                              + _format_loc(user_loc()))
    return t


class _Scoped:
    """Pushes a placement scope for the duration of a `with` block."""

    def __init__(self, level: Level, name: str, slots: int = 2) -> None:
        self.scope = _Scope(level, name, slots)

    def __enter__(self) -> "_Scoped":
        current_trace("at").scopes.append(self.scope)
        return self

    def __exit__(self, *exc: object) -> None:
        current_trace("at").scopes.pop()
