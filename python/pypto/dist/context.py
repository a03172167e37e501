"""Which rank this process is. A rank process (``launcher``) sets it once, before it runs any
program; the distributed ops read it while they trace (rank and rank count are compile-time
constants of a rank's programs, as a scalar argument is)."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Iterator, Optional

import pypto._core as _core


@dataclass(frozen=True)
class RankContext:
    rank: int
    nranks: int
    group: str = "default"


_current: Optional[RankContext] = None
class _ThreadRank(threading.local):
    """A rank that is a thread of the orchestrator's process (one-process runs). The class default
    makes the common case, no such rank, one attribute read (a call asks on its fast path)."""

    ctx: Optional[RankContext] = None


_thread = _ThreadRank()


def set_current(ctx: Optional[RankContext]) -> None:
    global _current
    _current = ctx


def current() -> Optional[RankContext]:
    return _thread.ctx or _current


def in_thread_rank() -> bool:
    """Whether this thread is a rank of a one-process run (its programs are specialised per
    thread: the jit's fast path, which remembers one program, is off)."""
    return _thread.ctx is not None


@contextlib.contextmanager
def thread_rank(ctx: RankContext) -> Iterator[None]:
    """This thread is rank `ctx` while the block runs."""
    prev = _thread.ctx
    _thread.ctx = ctx
    try:
        yield
    finally:
        _thread.ctx = prev


def require(what: str) -> RankContext:
    """This process's (or thread's) rank, or a UserError saying where `what` may be called."""
    ctx = current()
    if ctx is None:
        raise _core.UserError(f"{what} is only meaningful on a rank: call it inside a function a @pl.jit.host "
                              "orchestrator dispatches with device=r (or a program its ranks run)")
    return ctx
