"""The ops of ``pypto.language.distributed`` inside a rank's program: the communication context,
the signals (``system.notify`` / ``wait``), remote tiles (``tile.remote_load`` /
``remote_store``) and whole-window transfers (``tensor.put`` / ``get`` / ``barrier``).

A window parameter is every rank's copy of the window, one tensor [nranks, *shape]; the
function sees its own copy (``[rank]``) and these ops address a peer's copy as ``[peer]``. So a
remote load or store is an ordinary load or store the compiler tiles, fuses and orders with the
rank's other accesses, and what orders them across ranks is the signals: a notify or wait runs
after every earlier launch of the rank and before every later one (``Kernel::fence``), in
program order, as the upstream language's in-core functions run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Sequence

import pypto._core as _core

from ....core import ops as _core_ops
from ....core._tracing import _format_loc, current_recorder, user_loc
from ....core.tensor import Tensor
from ....dist import context
from .. import _ops as _pl
from .._program import Window, current_trace
from ._types import AtomicType, NotifyOp, WaitCmp


def _loc() -> str:
    return _format_loc(user_loc())


@dataclass(frozen=True)
class CommContext:
    """``pld.get_comm_ctx(t)``: the communicator of a window (this rank, the rank count)."""

    rank: int
    nranks: int


def windows() -> Dict[int, Window]:
    """The windows of the function being traced: id(this rank's copy) -> its Window."""
    return current_trace("pld").windows


def _window(op: str, t: Any, what: str = "window") -> Window:
    if isinstance(t, Tensor) and t.is_traced:
        found = windows().get(id(t))
        if found is not None:
            return found
    raise _core.UserError(f"pld.{op}: the {what} must be a pld.DistributedTensor parameter of the function (or "
                          f"passed down from one unchanged), got {t!r}" + _loc()
                          + "\nhint: allocate it with pld.alloc_window_buffer and pass pld.window(...) to the rank")


def get_comm_ctx(t: Any) -> CommContext:
    _window("get_comm_ctx", t)
    ctx = context.require("pld.get_comm_ctx")
    return CommContext(ctx.rank, ctx.nranks)


def rank(ctx: Any) -> int:
    if not isinstance(ctx, CommContext):
        raise _core.UserError(f"pld.rank takes the context pld.get_comm_ctx returns, got {ctx!r}" + _loc())
    return ctx.rank


def nranks(ctx: Any) -> int:
    if not isinstance(ctx, CommContext):
        raise _core.UserError(f"pld.nranks takes the context pld.get_comm_ctx returns, got {ctx!r}" + _loc())
    return ctx.nranks


def _int(op: str, name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _core.UserError(f"pld.{op}: {name} must be an integer known when the rank's program is compiled, "
                              f"got {v!r}" + _loc())
    return v


def _peer(op: str, peer: Any, n: int) -> Any:
    if isinstance(peer, int) and not isinstance(peer, bool):
        if not 0 <= peer < n:
            raise _core.UserError(f"pld.{op}: peer {peer} is not a rank of the {n}-rank communicator" + _loc())
    return peer


def _cell(op: str, w: Window, at_rank: Any, offsets: Sequence[Any]) -> Tensor:
    offsets = list(offsets)
    if len(offsets) != len(w.shape):
        raise _core.UserError(f"pld.{op}: {len(offsets)} offsets for the {len(w.shape)}-D signal window {w.shape}"
                              + _loc())
    return w.cell(at_rank, offsets)


# The IR's encodings (NotifyOp: Set 0, AtomicAdd 1; pto CmpMode: EQ 0 ... GE 5).
_NOTIFY = {NotifyOp.Set: 0, NotifyOp.AtomicAdd: 1}
_CMP = {WaitCmp.Eq: 0, WaitCmp.Ge: 5}


def _record_signal(op: str, cell: Tensor, attrs: Dict[str, Any]) -> None:
    rec = current_recorder(f"pld signal ({op})")
    rec.op(op, [cell._id], attrs, user_loc())


class _System:
    """``pld.system``: the signals."""

    @staticmethod
    def notify(signal: Any, peer: Any, offsets: Sequence[Any], value: Any = 1,
               op: NotifyOp = NotifyOp.AtomicAdd) -> None:
        """Sets (``NotifyOp.Set``) or atomically adds to (``AtomicAdd``) the int32 cell at `offsets`
        of `peer`'s copy of the signal window, after every earlier write of this rank."""
        w = _window("system.notify", signal, "signal")
        if not isinstance(op, NotifyOp):
            raise _core.UserError(f"pld.system.notify: op must be a pld.NotifyOp, got {op!r}" + _loc())
        cell = _cell("system.notify", w, _peer("system.notify", peer, w.nranks), offsets)
        _record_signal("notify", cell, {"value": _int("system.notify", "value", value), "op": _NOTIFY[op]})

    @staticmethod
    def wait(signal: Any, offsets: Sequence[Any], expected: Any = 1, cmp: WaitCmp = WaitCmp.Ge) -> None:
        """Sleeps until this rank's signal cell at `offsets` compares true with `expected`; later
        reads of this rank see what the notifying ranks wrote before their notify."""
        w = _window("system.wait", signal, "signal")
        if not isinstance(cmp, WaitCmp):
            raise _core.UserError(f"pld.system.wait: cmp must be a pld.WaitCmp, got {cmp!r}" + _loc())
        cell = _cell("system.wait", w, w.rank, offsets)
        _record_signal("wait", cell, {"expected": _int("system.wait", "expected", expected), "cmp": _CMP[cmp],
                                      "consume": 0})


system = _System()


def _check_window_tile(op: str, w: Window, offsets: Sequence[Any], shape: Sequence[Any]) -> None:
    if len(offsets) != len(w.shape) or len(shape) != len(w.shape):
        raise _core.UserError(f"pld.{op}: offsets {list(offsets)} and shape {list(shape)} need one entry per dim "
                              f"of the window {w.shape}" + _loc())


class _Tile:
    """``pld.tile``: tiles of a peer's window."""

    @staticmethod
    def remote_load(data: Any, peer: Any, offsets: Sequence[Any], shape: Sequence[Any]) -> Tensor:
        """The tile of `peer`'s copy of window `data` at `offsets` (read when the program gets
        there: order it after the peer's write with a signal or a barrier)."""
        w = _window("tile.remote_load", data)
        _check_window_tile("tile.remote_load", w, offsets, shape)
        return _pl.load(w.copy(_peer("tile.remote_load", peer, w.nranks)), list(offsets), list(shape))

    @staticmethod
    def remote_store(tile: Any, data: Any, peer: Any, offsets: Sequence[Any]) -> None:
        """Writes `tile` into `peer`'s copy of window `data` at `offsets`."""
        w = _window("tile.remote_store", data)
        _pl.store(tile, list(offsets), w.copy(_peer("tile.remote_store", peer, w.nranks)))


tile = _Tile()


class _Tensor:
    """``pld.tensor``: whole windows between ranks, and the barrier."""

    @staticmethod
    def put(dst: Any, peer: Any, src: Any, atomic: AtomicType = AtomicType.None_) -> None:
        """Copies this rank's window `src` into `peer`'s copy of window `dst`."""
        dw = _window("tensor.put", dst, "destination")
        sw = _window("tensor.put", src, "source")
        _same_window("tensor.put", dw, sw)
        if atomic is AtomicType.Add:
            raise _core.UserError("pld.tensor.put(atomic=pld.AtomicType.Add) into a peer's window is not supported "
                                  "yet: several ranks adding into one window need an atomic add of the memory, which "
                                  "the CPU backend does not make yet" + _loc()
                                  + "\nhint: put into a separate slot per source rank and add them after a wait")
        if atomic is not AtomicType.None_:
            raise _core.UserError(f"pld.tensor.put: atomic must be a pld.AtomicType, got {atomic!r}" + _loc())
        _copy(sw.copy(sw.rank), dw.copy(_peer("tensor.put", peer, dw.nranks)))

    @staticmethod
    def get(dst: Any, peer: Any, src: Any) -> None:
        """Copies `peer`'s copy of window `src` into this rank's window `dst`."""
        dw = _window("tensor.get", dst, "destination")
        sw = _window("tensor.get", src, "source")
        _same_window("tensor.get", dw, sw)
        _copy(sw.copy(_peer("tensor.get", peer, sw.nranks)), dw.copy(dw.rank))

    @staticmethod
    def barrier(signal: Any) -> Any:
        """Every rank of the communicator reaches this point before any goes on (and sees what
        the others wrote before it). `signal` is an INT32 window of at least [nranks, 1]: rank r
        adds a token to row r of each peer's copy, then waits for and takes one token from each
        peer's row of its own, so the same window serves any number of barriers."""
        w = _window("tensor.barrier", signal, "signal")
        n, me, shape = w.nranks, w.rank, list(w.shape)
        if not shape or not isinstance(shape[0], int) or shape[0] < n:
            raise _core.UserError(f"pld.tensor.barrier: the signal window needs a row per rank ([{n}, 1] for {n} "
                                  f"ranks), got {shape}" + _loc())
        zeros = [0] * (len(shape) - 1)
        for peer in range(n):
            if peer != me:
                _record_signal("notify", _cell("tensor.barrier", w, peer, [me] + zeros),
                               {"value": 1, "op": _NOTIFY[NotifyOp.AtomicAdd]})
        for src in range(n):
            if src != me:
                _record_signal("wait", _cell("tensor.barrier", w, me, [src] + zeros),
                               {"expected": 1, "cmp": _CMP[WaitCmp.Ge], "consume": 1})
        return signal


tensor = _Tensor()


def _same_window(op: str, a: Window, b: Window) -> None:
    if list(a.shape) != list(b.shape) or a.merged.dtype != b.merged.dtype:
        raise _core.UserError(f"pld.{op}: the windows differ: {a.merged.dtype}{a.shape} and "
                              f"{b.merged.dtype}{b.shape}" + _loc())


def _copy(src: Tensor, dst: Tensor) -> None:
    """dst[...] = src, tiled by the compiler (a whole window need not fit one tile)."""
    _core_ops.assemble(src, [0] * len(src.shape), dst)


