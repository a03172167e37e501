"""The HOST form of the collectives: ``pld.tensor.allreduce(data, signal)`` in a ``@pl.jit.host``
body (on ``pld.window`` views, outside the ``device=r`` loop) is one call on every rank of the
built-in function below (upstream's ``builtin.tensor.<op>`` dispatch), made after the calls
before it and before the calls after it, as the ranks run their calls in order."""

from __future__ import annotations

from typing import Any

import pypto._core as _core

from ....core._dtypes import DT_INT32
from ....core._tracing import _format_loc, user_loc
from ....core.tensor import Tensor
from ....dist import launcher
from .. import _host
from .._program import LanguageFunction
from . import _collectives
from ._types import ReduceOp


def _window_of_any_shape() -> Tensor:
    ann = Tensor()  # shape and dtype from the argument
    ann._pld_window = []  # type: ignore[attr-defined]
    return ann


_W = _window_of_any_shape()


def _allreduce(target: _W, signal: _W, op: int = 0, mode: str = "mesh") -> None:  # type: ignore[valid-type]
    _collectives.allreduce(target, signal, op=ReduceOp(op), mode=mode)


def _broadcast(target: _W, signal: _W, root: int = 0) -> None:  # type: ignore[valid-type]
    _collectives.broadcast(target, signal, root=root)


def _allgather(local_data: _W, target: _W, signal: _W) -> None:  # type: ignore[valid-type]
    _collectives.allgather(local_data, target, signal)


def _reduce_scatter(target: _W, signal: _W, op: int = 0) -> None:  # type: ignore[valid-type]
    _collectives.reduce_scatter(target, signal, op=ReduceOp(op))


def _all_to_all(input: _W, target: _W, signal: _W) -> None:  # type: ignore[valid-type]  # noqa: A002
    _collectives.all_to_all(input, target, signal)


def _all_to_all_v(input: _W, target: _W, signal: _W, send_counts: _W, recv_counts: _W) -> None:  # type: ignore[valid-type]  # noqa: A002
    _collectives.all_to_all_v(input, target, signal, send_counts, recv_counts)


def _barrier(signal: _W) -> None:  # type: ignore[valid-type]
    _collectives.barrier(signal)


# Module-level, so a rank process finds them by name (pypto.dist.launcher.resolve).
builtin_allreduce = LanguageFunction(_allreduce)
builtin_broadcast = LanguageFunction(_broadcast)
builtin_allgather = LanguageFunction(_allgather)
builtin_reduce_scatter = LanguageFunction(_reduce_scatter)
builtin_all_to_all = LanguageFunction(_all_to_all)
builtin_barrier = LanguageFunction(_barrier)
builtin_all_to_all_v = LanguageFunction(_all_to_all_v)
for _f, _name in ((builtin_allreduce, "builtin_allreduce"), (builtin_broadcast, "builtin_broadcast"),
                  (builtin_allgather, "builtin_allgather"), (builtin_reduce_scatter, "builtin_reduce_scatter"),
                  (builtin_all_to_all, "builtin_all_to_all"), (builtin_barrier, "builtin_barrier"),
                  (builtin_all_to_all_v, "builtin_all_to_all_v")):
    _f.fn.__qualname__ = _name  # the rank looks the function up by this name


def host_collective(name: str, *args: Any, **kwargs: Any) -> Any:
    run = _host.active()
    assert run is not None
    where = _format_loc(user_loc())
    for a in args:
        if a is not None and not isinstance(a, launcher.WindowArg):
            raise _core.UserError(f"pld.tensor.{name} in a @pl.jit.host body works on pld.window(...) views, got "
                                  f"{a!r}" + where)
    args = list(args)
    if name == "allreduce" and args[1] is None:
        if kwargs.get("mode", "mesh") != "mesh":
            raise _core.UserError("pld.tensor.allreduce(mode=\"ring\") needs its signal window" + where)
        args[1] = _host.window(_host.alloc_window_buffer([run.nranks, 1], DT_INT32), [run.nranks, 1], DT_INT32)
    if any(a is None for a in args):
        raise _core.UserError(f"pld.tensor.{name} needs its signal window (pld.window of an INT32 buffer with a row "
                              "per rank)" + where)
    fn = {"barrier": builtin_barrier, "allreduce": builtin_allreduce, "broadcast": builtin_broadcast, "allgather": builtin_allgather,
          "reduce_scatter": builtin_reduce_scatter, "all_to_all": builtin_all_to_all,
          "all_to_all_v": builtin_all_to_all_v}[name]
    if "op" in kwargs:
        if not isinstance(kwargs["op"], ReduceOp):
            raise _core.UserError(f"pld.tensor.{name}: op must be a pld.ReduceOp, got {kwargs['op']!r}" + where)
        kwargs["op"] = int(kwargs["op"])
    kwargs.pop("core_num", None)
    for r in range(run.nranks):
        _host.dispatch(fn, args, kwargs, r)
    return args[1] if name in ("allgather", "all_to_all", "all_to_all_v") else args[0]


_collectives.set_host_form(host_collective)
