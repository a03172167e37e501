"""``pl.min`` / ``pl.max``: of two scalars (ints, or values known when the program runs: what
``pl.read``, ``pl.tensor.dim`` or a loop index give). In a module of their own: they shadow the
builtins they are named after."""

from __future__ import annotations

from typing import Any

import pypto._core as _core
from ...core._tracing import _format_loc, user_loc
from ...core.control import sym_max, sym_min
from ...core.tensor import Tensor

__all__ = ["min", "max"]


def _scalar_pair(op: str, lhs: Any, rhs: Any) -> None:
    for x in (lhs, rhs):
        if isinstance(x, Tensor) or isinstance(x, bool) or not isinstance(x, (int, float, _core.SymbolicScalar)):
            raise _core.UserError(f"pl.{op} takes two scalars (ints, or values pl.read / pl.tensor.dim / a loop "
                                  f"gave), got {x!r}" + _format_loc(user_loc())
                                  + f"\nhint: pl.{op}imum is the element-wise form on tiles and tensors")


def min(lhs: Any, rhs: Any) -> Any:  # noqa: A001 - pl.min of scalars
    """``pl.min(a, b)``: the smaller of two scalars (symbolic when either is)."""
    _scalar_pair("min", lhs, rhs)
    return sym_min(lhs, rhs)


def max(lhs: Any, rhs: Any) -> Any:  # noqa: A001 - pl.max of scalars
    """``pl.max(a, b)``: the larger of two scalars (symbolic when either is)."""
    _scalar_pair("max", lhs, rhs)
    return sym_max(lhs, rhs)
