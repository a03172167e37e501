"""Which rank this process is. A rank process (``launcher``) sets it once, before it runs any
program; the distributed ops read it while they trace (rank and rank count are compile-time
constants of a rank's programs, as a scalar argument is)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pypto._core as _core


@dataclass(frozen=True)
class RankContext:
    rank: int
    nranks: int
    group: str = "default"


_current: Optional[RankContext] = None


def set_current(ctx: Optional[RankContext]) -> None:
    global _current
    _current = ctx


def current() -> Optional[RankContext]:
    return _current


def require(what: str) -> RankContext:
    """This process's rank, or a UserError saying where `what` may be called."""
    if _current is None:
        raise _core.UserError(f"{what} is only meaningful on a rank: call it inside a function a @pl.jit.host "
                              "orchestrator dispatches with device=r (or a program its ranks run)")
    return _current
