"""``import pypto.language.distributed as pld``: hw-native-sys pypto's distributed language, on
the ranks of one host (each rank a process; windows in a shared symmetric heap; docs/distributed.md).

In a ``@pl.jit.host`` orchestrator: ``pld.world_size()``, ``pld.alloc_window_buffer(shape,
dtype=)`` and ``pld.window(buf, shape, dtype=)``; calls with ``device=r`` run on rank r. In a
rank's functions: ``pld.DistributedTensor[[shape], dtype]`` parameters, ``pld.get_comm_ctx`` /
``pld.rank`` / ``pld.nranks``, the signals ``pld.system.notify`` / ``wait`` (``NotifyOp``,
``WaitCmp``), ``pld.tile.remote_load`` / ``remote_store``, ``pld.tensor.put`` / ``get`` /
``barrier`` and the collectives ``pld.tensor.allreduce`` (mesh, ring), ``broadcast``,
``allgather``, ``reduce_scatter``, ``all_to_all`` (in a rank's function, or in the host body on
window views)."""

from __future__ import annotations

from typing import Any, Sequence

import pypto._core as _core

from ....core._tracing import _format_loc, user_loc
from ....dist import context as _rank
from .. import _host
from types import SimpleNamespace

from . import _builtins  # noqa: F401 - registers the HOST form of the collectives
from . import _collectives
from ._ops import CommContext, get_comm_ctx, nranks, rank, tile
from ._ops import system as _signal_ops
from ._ops import tensor as _window_ops
from ._types import AtomicType, DistributedTensor, NotifyOp, ReduceOp, WaitCmp

__all__ = ["DistributedTensor", "NotifyOp", "WaitCmp", "AtomicType", "ReduceOp", "CommContext", "CommCtx", "world_size",
           "alloc_window_buffer", "window", "get_comm_ctx", "rank", "nranks", "remote_load", "remote_store", "system",
           "tile", "tensor"]

CommCtx = CommContext  # upstream's name


def remote_load(target: Any, peer: Any, offsets: Sequence[Any], shape: Sequence[Any],
                valid_shape: Any = None) -> Any:
    """``pld.remote_load``: ``pld.tile.remote_load``."""
    return tile.remote_load(target, peer, offsets, shape, valid_shape)


def remote_store(src: Any, target: Any, peer: Any, offsets: Sequence[Any], *, atomic: AtomicType = AtomicType.None_
                 ) -> None:
    """``pld.remote_store``: the tile form for a tile, the tensor form for a tensor (the same write here)."""
    _window_ops.remote_store(src, target, peer, offsets, atomic=atomic)


def world_size() -> int:
    """The number of ranks: in a host orchestrator, its DistributedConfig's; on a rank, its
    communicator's."""
    n = _host.world_size()
    if n is not None:
        return n
    ctx = _rank.current()
    if ctx is None:
        raise _core.UserError("pld.world_size() is known in a @pl.jit.host orchestrator (its DistributedConfig) or "
                              "on a rank" + _format_loc(user_loc()))
    return ctx.nranks


def alloc_window_buffer(shape: Sequence[Any], dtype: Any = None) -> Any:
    """A window of every rank (its shape and dtype per rank), zeroed; in a host orchestrator."""
    if dtype is None:
        raise _core.UserError("pld.alloc_window_buffer(shape, dtype=...): give the dtype" + _format_loc(user_loc()))
    return _host.alloc_window_buffer(shape, dtype)


def window(buf: Any, shape: Sequence[Any], dtype: Any = None) -> Any:
    """The window `buf` as a rank's argument (a ``pld.DistributedTensor`` parameter)."""
    return _host.window(buf, shape, dtype)


# pld.system: the communicator and the signals (upstream's members).
system = SimpleNamespace(notify=_signal_ops.notify, wait=_signal_ops.wait, defer_wait=_signal_ops.defer_wait,
                         world_size=world_size, get_comm_ctx=get_comm_ctx, rank=rank, nranks=nranks)
# pld.tensor: whole windows between ranks and the collectives.
tensor = SimpleNamespace(put=_window_ops.put, get=_window_ops.get, remote_store=_window_ops.remote_store,
                         barrier=_collectives.barrier, allreduce=_collectives.allreduce,
                         broadcast=_collectives.broadcast, allgather=_collectives.allgather,
                         reduce_scatter=_collectives.reduce_scatter, all_to_all=_collectives.all_to_all,
                         all_to_all_v=_collectives.all_to_all_v, alloc_window_buffer=alloc_window_buffer,
                         window=window)
