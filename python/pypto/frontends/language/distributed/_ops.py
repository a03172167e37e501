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
from typing import Any, Dict, Optional, Sequence

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


    @staticmethod
    def defer_wait(signal: Any, offsets: Sequence[Any], expected: Any = 1, cmp: WaitCmp = WaitCmp.Ge) -> None:
        """Upstream's non-blocking wait (a condition the enclosing task completes on): here the wait
        itself, in program order (the same results; the rank's later launches wait for it)."""
        if cmp is not WaitCmp.Ge:
            raise _core.UserError(f"pld.system.defer_wait: only cmp=pld.WaitCmp.Ge is accepted, got {cmp!r}" + _loc())
        _System.wait(signal, offsets, expected, cmp)


system = _System()


def _check_window_tile(op: str, w: Window, offsets: Sequence[Any], shape: Sequence[Any]) -> None:
    if len(offsets) != len(w.shape) or len(shape) != len(w.shape):
        raise _core.UserError(f"pld.{op}: offsets {list(offsets)} and shape {list(shape)} need one entry per dim "
                              f"of the window {w.shape}" + _loc())


def _atomic(op: str, atomic: Any) -> bool:
    """Whether a write adds (atomically: several ranks may add into one place at once)."""
    if not isinstance(atomic, AtomicType):
        raise _core.UserError(f"pld.{op}: atomic must be a pld.AtomicType, got {atomic!r}" + _loc())
    return atomic is AtomicType.Add


def _write(op: str, src: Tensor, dst: Tensor, offsets: Sequence[Any], add: bool) -> None:
    """dst[offsets...] = src (or += src, atomically), tiled by the compiler."""
    if src.dtype != dst.dtype:
        raise _core.UserError(f"pld.{op}: the source is {src.dtype} and the window {dst.dtype}" + _loc())
    current_recorder(f"pld.{op}").assemble(src._id, list(offsets), dst._id, user_loc(), add)


class _Tile:
    """``pld.tile``: tiles of a peer's window."""

    @staticmethod
    def remote_load(target: Any, peer: Any, offsets: Sequence[Any], shape: Sequence[Any],
                    valid_shape: Optional[Sequence[Any]] = None) -> Tensor:
        """The tile of `peer`'s copy of window `target` at `offsets` (read when the program gets
        there: order it after the peer's write with a signal or a barrier)."""
        w = _window("tile.remote_load", target)
        _check_window_tile("tile.remote_load", w, offsets, shape)
        return _pl.load(w.copy(_peer("tile.remote_load", peer, w.nranks)), list(offsets), list(shape),
                        valid_shape=list(valid_shape) if valid_shape is not None else None)

    @staticmethod
    def remote_store(src_tile: Any, target: Any, peer: Any, offsets: Sequence[Any], *,
                     atomic: AtomicType = AtomicType.None_) -> None:
        """Writes the tile into `peer`'s copy of window `target` at `offsets` (``atomic=Add``: adds)."""
        w = _window("tile.remote_store", target)
        copy = w.copy(_peer("tile.remote_store", peer, w.nranks))
        if _atomic("tile.remote_store", atomic):
            _write("tile.remote_store", src_tile, copy, offsets, True)
        else:
            _pl.store(src_tile, list(offsets), copy)


tile = _Tile()


def _region(op: str, t: Tensor, offsets: Optional[Sequence[Any]], shape: Optional[Sequence[Any]]) -> Tensor:
    return t if offsets is None else _core_ops.view(t, list(shape or []), list(offsets))


def _traced(op: str, t: Any, what: str) -> Tensor:
    """`t` as the local side of a transfer: a tensor of the function (this rank's window is one)."""
    if not (isinstance(t, Tensor) and t.is_traced):
        raise _core.UserError(f"pld.{op}: the {what} must be a tensor of the function, got {t!r}" + _loc())
    return t


def _regions(op: str, dst_offsets: Any, src_offsets: Any, shape: Any) -> None:
    given = [a is not None for a in (dst_offsets, src_offsets, shape)]
    if any(given) and not all(given):
        raise _core.UserError(f"pld.{op}: dst_offsets, src_offsets and shape go together (a region of each side)"
                              + _loc())


class _Tensor:
    """``pld.tensor``: windows between ranks, and the barrier."""

    @staticmethod
    def put(dst: Any, peer: Any, src: Any, dst_offsets: Optional[Sequence[Any]] = None,
            src_offsets: Optional[Sequence[Any]] = None, shape: Optional[Sequence[Any]] = None, *,
            atomic: AtomicType = AtomicType.None_, chunk_rows: int = 0, chunk_cols: int = 0,
            pipeline: bool = False) -> None:
        """Copies `src` (this rank's window, or a tensor of the function) into `peer`'s copy of window
        `dst`, whole or a region (``atomic=Add``: adds, atomically). `chunk_rows` / `chunk_cols` /
        `pipeline` (upstream's staging through UB) are accepted: the compiler tiles the copy here."""
        dw = _window("tensor.put", dst, "destination")
        _regions("tensor.put", dst_offsets, src_offsets, shape)
        local = _traced("tensor.put", src, "source")
        target = dw.copy(_peer("tensor.put", peer, dw.nranks))
        if dst_offsets is None and list(local.shape) != list(dw.shape):
            raise _core.UserError(f"pld.tensor.put: the source {list(local.shape)} and the window {dw.shape} differ "
                                  "(give dst_offsets, src_offsets and shape for a region)" + _loc())
        piece = _region("tensor.put", local, src_offsets, shape)
        _write("tensor.put", piece, target, list(dst_offsets) if dst_offsets is not None else [0] * len(dw.shape),
               _atomic("tensor.put", atomic))

    @staticmethod
    def get(dst: Any, peer: Any, src: Any, dst_offsets: Optional[Sequence[Any]] = None,
            src_offsets: Optional[Sequence[Any]] = None, shape: Optional[Sequence[Any]] = None, *,
            chunk_rows: int = 0, chunk_cols: int = 0, pipeline: bool = False) -> None:
        """Copies `peer`'s copy of window `src`, whole or a region, into `dst` (this rank's window
        or a tensor of the function)."""
        sw = _window("tensor.get", src, "source")
        _regions("tensor.get", dst_offsets, src_offsets, shape)
        local = _traced("tensor.get", dst, "destination")
        remote = sw.copy(_peer("tensor.get", peer, sw.nranks))
        if dst_offsets is None and list(local.shape) != list(sw.shape):
            raise _core.UserError(f"pld.tensor.get: the window {sw.shape} and the destination {list(local.shape)} "
                                  "differ (give dst_offsets, src_offsets and shape for a region)" + _loc())
        _write("tensor.get", _region("tensor.get", remote, src_offsets, shape), local,
               list(dst_offsets) if dst_offsets is not None else [0] * len(sw.shape), False)

    @staticmethod
    def remote_store(src: Any, target: Any, peer: Any, offsets: Sequence[Any], *,
                     atomic: AtomicType = AtomicType.None_) -> None:
        """Writes a tensor the function computed into `peer`'s copy of window `target` at `offsets`."""
        w = _window("tensor.remote_store", target)
        _write("tensor.remote_store", _traced("tensor.remote_store", src, "source"), w.copy(_peer("tensor.remote_store", peer, w.nranks)), offsets,
               _atomic("tensor.remote_store", atomic))

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
