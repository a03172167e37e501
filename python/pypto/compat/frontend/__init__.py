"""`pypto.frontend`: the decorators of the PyPTO tensor-level frontend. ``jit`` compiles a kernel;
``function`` marks a helper the kernels call (traced inline, each call, at its call site), whose
``if`` statements on symbolic values become runtime branches as in the kernel itself."""

import functools
from typing import Any, Callable, Optional

from ...frontends.jit import JitFunction, jit
from ...core import control

__all__ = ["jit", "JitFunction", "function"]


def function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@pypto.frontend.function``: a reusable helper of @pypto.jit kernels (PyPTO: inlined into
    the calling kernel). Its body is traced where it is called; an ``if`` on a loop index or another
    symbolic value in it is a runtime branch (see docs/porting.md)."""

    rewritten: Optional[Callable[..., Any]] = None

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        nonlocal rewritten
        if rewritten is None:
            rewritten = control.with_runtime_branches(fn)
        return rewritten(*args, **kwargs)

    return call
