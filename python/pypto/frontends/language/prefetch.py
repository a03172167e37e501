"""``pl.prefetch``: hw-native-sys pypto's asynchronous GM->L2 prefetch. A prefetch is a cache hint
that changes no tensor values (upstream: "a kernel is numerically identical with or without
it"), and this runtime has no L2 to warm, so the handles are made and checked and the wait
reports done."""

from __future__ import annotations

from typing import Any

import pypto._core as _core

from ...core._tracing import _format_loc, user_loc
from ...core.tensor import Tensor
from ._names_extra import AsyncEvent, AsyncSession, PrefetchAsyncContext

__all__ = ["async_prefetch", "make_context", "session", "wait"]


def _err(msg: str) -> _core.UserError:
    return _core.UserError(msg + _format_loc(user_loc()))


def make_context() -> PrefetchAsyncContext:
    """``ctx = pl.prefetch.make_context()``: a prefetch context."""
    return PrefetchAsyncContext()


def async_prefetch(src: Tensor, ctx: PrefetchAsyncContext) -> AsyncEvent:
    """``evt = pl.prefetch.async_prefetch(src, ctx)``: starts pulling `src` (a global tensor of
    static shape whose dims are all 1 but the last, as upstream's verifier requires) into L2."""
    if not isinstance(ctx, PrefetchAsyncContext):
        raise _err(f"pl.prefetch.async_prefetch: ctx must come from pl.prefetch.make_context(), got {ctx!r}")
    if not isinstance(src, Tensor) or not src.is_traced:
        raise _err(f"pl.prefetch.async_prefetch: src must be a global tensor, got {src!r}")
    shape = list(src.shape)
    if not shape or not all(isinstance(d, int) for d in shape) or any(d != 1 for d in shape[:-1]):
        raise _err(f"pl.prefetch.async_prefetch: src must have a static shape [N] or [1, ..., N], got {shape}")
    event = AsyncEvent()
    event._ctx = ctx  # type: ignore[attr-defined]
    return event


def session(ctx: PrefetchAsyncContext) -> AsyncSession:
    """``s = pl.prefetch.session(ctx)``: the session a context's events belong to."""
    if not isinstance(ctx, PrefetchAsyncContext):
        raise _err(f"pl.prefetch.session: ctx must come from pl.prefetch.make_context(), got {ctx!r}")
    s = AsyncSession()
    s._ctx = ctx  # type: ignore[attr-defined]
    return s


def wait(event: AsyncEvent, session_handle: AsyncSession) -> Any:
    """``done = pl.prefetch.wait(evt, s)``: waits for the prefetch; True (done)."""
    if not isinstance(event, AsyncEvent) or not isinstance(session_handle, AsyncSession):
        raise _err("pl.prefetch.wait takes the AsyncEvent of pl.prefetch.async_prefetch and the AsyncSession of "
                   f"pl.prefetch.session, got {event!r}, {session_handle!r}")
    if getattr(event, "_ctx", None) is not getattr(session_handle, "_ctx", None):
        raise _err("pl.prefetch.wait: the event and the session come from different prefetch contexts")
    return True
