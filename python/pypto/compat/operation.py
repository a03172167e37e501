"""CANN PyPTO's ``pypto.operation``: the tensor ops (the same functions as ``pypto.<op>``) and
``op_wrapper``, the decorator its model code puts on helpers that call ``pypto_impl``. Here the
ops need no argument conversion, so ``op_wrapper`` only keeps the function's name and doc."""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from ..core.ops import *  # noqa: F401,F403
from ..core.ops import __all__ as _ops_all

F = TypeVar("F", bound=Callable[..., Any])


def op_wrapper(func: F) -> F:
    """PyPTO's op decorator: the function, unchanged (errors already name the user's line)."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


__all__ = ["op_wrapper", *_ops_all]
