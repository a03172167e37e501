"""The collectives of ``pld.tensor``: allreduce (mesh and ring), broadcast, allgather,
reduce_scatter, all_to_all, composed from the window ops and the barrier, as upstream's
LowerCompositeOps composes them. Every rank makes the same call.

In a rank's function they trace into the rank's program. In a ``@pl.jit.host`` orchestrator,
called on ``pld.window`` views outside the ``device=r`` loop, each becomes one more call on every
rank, of a built-in function (``_builtins``) that makes the same composition (upstream's HOST
builtin dispatch).

Shared memory changes the costs the algorithms trade: a peer's copy is one load away, so
``mode="mesh"`` (every rank reads every copy of the whole tensor: P reads per element, least
latency) suits small tensors, and ``mode="ring"`` is the bandwidth-optimal pair of steps a ring
makes over P - 1 hops, done directly: a reduce-scatter (rank r reduces chunk r of every copy into
its own) and an allgather (each rank copies the other chunks from their owners), 2 (P - 1) / P
reads per element. Both give the same sums (the ranks' values added in rank order)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

import pypto._core as _core

from ....core import ops as _core_ops
from ....core._tracing import _format_loc, user_loc
from ....core.tensor import Tensor
from .. import _host
from .._program import Window
from . import _ops
from ._types import ReduceOp

_COMBINE: dict = {ReduceOp.Sum: _core_ops.add, ReduceOp.Max: _core_ops.maximum, ReduceOp.Min: _core_ops.minimum,
                  ReduceOp.Prod: _core_ops.mul}


def _loc() -> str:
    return _format_loc(user_loc())


def _combine(op: Any) -> Callable[[Any, Any], Any]:
    if not isinstance(op, ReduceOp):
        raise _core.UserError(f"pld.tensor: op must be a pld.ReduceOp, got {op!r}" + _loc())
    return _COMBINE[op]


def _reduce(op: Any, parts: List[Tensor]) -> Tensor:
    f = _combine(op)
    acc = parts[0]
    for p in parts[1:]:
        acc = f(acc, p)
    return acc


def _chunk(w: Window, i: int) -> Optional[tuple]:
    """Chunk i of P along the window's last dim: (offsets, shape), or None when empty."""
    n = w.shape[-1]
    if not isinstance(n, int):
        raise _core.UserError(f"pld.tensor.allreduce(mode=\"ring\") chunks the last dim, which must be static, got "
                              f"{w.shape}" + _loc())
    step = -(-n // w.nranks)
    lo, hi = i * step, min(n, (i + 1) * step)
    if lo >= hi:
        return None
    return [0] * (len(w.shape) - 1) + [lo], list(w.shape[:-1]) + [hi - lo]


def _part(t: Tensor, offsets: List[Any], shape: List[Any]) -> Tensor:
    return _core_ops.view(t, shape, offsets)


# The HOST form's dispatcher (_builtins registers it: its functions call the ones below).
_host_form: Optional[Callable[..., Any]] = None


def set_host_form(f: Callable[..., Any]) -> None:
    global _host_form
    _host_form = f


def _in_host(name: str, *args: Any, **kwargs: Any) -> Any:
    """The HOST form (in an orchestrator body): the built-in call on every rank, or None."""
    if _host.active() is None:
        return None
    assert _host_form is not None, "pld's built-in collectives are not registered"
    return _host_form(name, *args, **kwargs)


def allreduce(target: Any, signal: Any = None, *, op: ReduceOp = ReduceOp.Sum, mode: str = "mesh",
              core_num: int = 1) -> Any:
    """Every rank's `target` becomes the element-wise `op` over all ranks' targets."""
    host = _in_host("allreduce", target, signal, op=op, mode=mode, core_num=core_num)
    if host is not None:
        return host
    if mode not in ("mesh", "ring"):
        raise _core.UserError(f"pld.tensor.allreduce: mode must be \"mesh\" or \"ring\", got {mode!r}" + _loc())
    if isinstance(core_num, bool) or not isinstance(core_num, int) or core_num < 1:
        raise _core.UserError(f"pld.tensor.allreduce: core_num must be a positive int, got {core_num!r}" + _loc())
    if signal is None:
        raise _core.UserError("pld.tensor.allreduce in a rank's function needs its signal window ([nranks, 1] INT32)"
                              + _loc() + "\nhint: only the HOST form (in a @pl.jit.host body) makes its own")
    w = _ops._window("tensor.allreduce", target)
    _combine(op)
    _ops.tensor.barrier(signal)  # every rank's target is written
    if mode == "mesh":
        acc = _reduce(op, [w.copy(r) for r in range(w.nranks)])
        _ops.tensor.barrier(signal)  # every rank has read every copy
        _core_ops.assemble(acc, [0] * len(w.shape), w.copy(w.rank))
    else:
        mine = _chunk(w, w.rank)
        if mine is not None:
            acc = _reduce(op, [_part(w.copy(r), *mine) for r in range(w.nranks)])
            _core_ops.assemble(acc, mine[0], w.copy(w.rank))  # chunk `rank` of its own copy: no peer reads it now
        _ops.tensor.barrier(signal)  # every chunk is reduced at its owner
        for r in range(w.nranks):
            theirs = _chunk(w, r)
            if r != w.rank and theirs is not None:
                _core_ops.assemble(_part(w.copy(r), *theirs), theirs[0], w.copy(w.rank))
    _ops.tensor.barrier(signal)  # no rank writes its target again while a peer still reads it
    return target


def barrier(signal: Any) -> Any:
    """Every rank reaches this point before any goes on (and sees what the others wrote before
    it); the signal ([nranks, 1] INT32) is left as it was, for the next barrier."""
    host = _in_host("barrier", signal)
    if host is not None:
        return host
    return _ops.tensor.barrier(signal)


def broadcast(target: Any, signal: Any = None, *, root: int = 0) -> Any:
    """Every rank's `target` becomes rank `root`'s."""
    host = _in_host("broadcast", target, signal, root=root)
    if host is not None:
        return host
    w = _ops._window("tensor.broadcast", target)
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < w.nranks:
        raise _core.UserError(f"pld.tensor.broadcast: root must be a rank in [0, {w.nranks}), got {root!r}" + _loc())
    _ops.tensor.barrier(_need_signal("broadcast", signal))
    if w.rank != root:
        _core_ops.assemble(w.copy(root), [0] * len(w.shape), w.copy(w.rank))
    _ops.tensor.barrier(signal)
    return target


def allgather(local_data: Any, target: Any, signal: Any = None) -> Any:
    """Row r of every rank's `target` ([nranks, ...]) becomes rank r's `local_data` ([1, ...])."""
    host = _in_host("allgather", local_data, target, signal)
    if host is not None:
        return host
    w = _ops._window("tensor.allgather", target)
    if local_data is target:
        raise _core.UserError("pld.tensor.allgather: local_data and target must be different tensors" + _loc())
    src = local_data
    if not (isinstance(src, Tensor) and src.is_traced):
        raise _core.UserError(f"pld.tensor.allgather: local_data must be a tensor of the function, got {src!r}"
                              + _loc())
    row = [1] + list(w.shape[1:])
    if list(src.shape) != row or w.shape[0] != w.nranks:
        raise _core.UserError(f"pld.tensor.allgather: local_data {list(src.shape)} must be one row {row} of the "
                              f"target {w.shape}, which holds {w.nranks} rows" + _loc())
    signal = _need_signal("allgather", signal)
    _ops.tensor.barrier(signal)  # no rank still reads its target
    for r in range(w.nranks):
        _core_ops.assemble(src, [w.rank] + [0] * (len(w.shape) - 1), w.copy(r))
    _ops.tensor.barrier(signal)
    return target


def reduce_scatter(target: Any, signal: Any = None, *, op: ReduceOp = ReduceOp.Sum) -> Any:
    """Row r of rank r's `target` ([nranks, ...]) becomes the `op` over all ranks' row r."""
    host = _in_host("reduce_scatter", target, signal, op=op)
    if host is not None:
        return host
    w = _ops._window("tensor.reduce_scatter", target)
    if w.shape[0] != w.nranks:
        raise _core.UserError(f"pld.tensor.reduce_scatter: the target {w.shape} needs a row per rank ({w.nranks})"
                              + _loc())
    signal = _need_signal("reduce_scatter", signal)
    _ops.tensor.barrier(signal)
    row = [1] + list(w.shape[1:])
    at = [w.rank] + [0] * (len(w.shape) - 1)
    acc = _reduce(op, [_part(w.copy(r), at, row) for r in range(w.nranks)])
    _core_ops.assemble(acc, at, w.copy(w.rank))
    _ops.tensor.barrier(signal)
    return target


def all_to_all(input: Any, target: Any, signal: Any = None) -> Any:  # noqa: A002 - upstream's name
    """Row r of every rank's `target` becomes row `rank` of rank r's `input` (both [nranks, ...])."""
    host = _in_host("all_to_all", input, target, signal)
    if host is not None:
        return host
    w = _ops._window("tensor.all_to_all", target)
    if input is target or not (isinstance(input, Tensor) and input.is_traced):
        raise _core.UserError("pld.tensor.all_to_all: input must be a tensor of the function other than the target"
                              + _loc())
    if list(input.shape) != list(w.shape) or w.shape[0] != w.nranks:
        raise _core.UserError(f"pld.tensor.all_to_all: input {list(input.shape)} and target {w.shape} must both be "
                              f"[{w.nranks}, ...]" + _loc())
    signal = _need_signal("all_to_all", signal)
    _ops.tensor.barrier(signal)
    row = [1] + list(w.shape[1:])
    zeros = [0] * (len(w.shape) - 1)
    for r in range(w.nranks):
        _core_ops.assemble(_part(input, [r] + zeros, row), [w.rank] + zeros, w.copy(r))
    _ops.tensor.barrier(signal)
    return target


def all_to_all_v(input: Any, target: Any, signal: Any, send_counts: Any, recv_counts: Any) -> Any:  # noqa: A002
    """The variable form: `input` and `target` are [nranks * max_rows, ...] (max_rows = rows per
    peer); rank r sends block `dest` of its input (all max_rows rows) to block r of rank dest's
    target, and publishes min(send_counts[dest], max_rows) in row r of dest's `recv_counts` window
    ([nranks, 1] INT32). Rows past a block's count are whatever the sender's block held."""
    host = _in_host("all_to_all_v", input, target, signal, send_counts, recv_counts)
    if host is not None:
        return host
    w = _ops._window("tensor.all_to_all_v", target)
    counts = _ops._window("tensor.all_to_all_v", recv_counts, "recv_counts")
    n, me = w.nranks, w.rank
    src = input
    if not (isinstance(src, Tensor) and src.is_traced) or list(src.shape) != list(w.shape):
        raise _core.UserError(f"pld.tensor.all_to_all_v: input must be a tensor of the target's shape {w.shape}, "
                              f"got {src!r}" + _loc())
    rows = w.shape[0]
    if not isinstance(rows, int) or rows % n:
        raise _core.UserError(f"pld.tensor.all_to_all_v: the target's rows {rows} must split into {n} equal blocks"
                              + _loc())
    if list(counts.shape[:1]) != [n] or counts.merged.dtype != send_counts.dtype:
        raise _core.UserError(f"pld.tensor.all_to_all_v: recv_counts must be [{n}, 1] of send_counts' dtype, got "
                              f"{counts.shape}" + _loc())
    per = rows // n
    block = [per] + list(w.shape[1:])
    zeros = [0] * (len(w.shape) - 1)
    sent = send_counts if len(send_counts.shape) == 2 else _core_ops.reshape(send_counts, [n, 1])
    _ops.tensor.barrier(_need_signal("all_to_all_v", signal))  # every target is free
    for dest in range(n):
        _core_ops.assemble(_part(src, [dest * per] + zeros, block), [me * per] + zeros, w.copy(dest))
        count = _core_ops.minimum(_part(sent, [dest, 0], [1, 1]), per)
        _core_ops.assemble(count, [me, 0], counts.copy(dest))
    _ops.tensor.barrier(signal)
    return target


def _need_signal(name: str, signal: Any) -> Any:
    if signal is None:
        raise _core.UserError(f"pld.tensor.{name} in a rank's function needs its signal window ([nranks, 1] INT32)"
                              + _loc())
    return signal
