"""A name a runtime branch left without one value (control.py binds it after the branch): any use
is a UserError naming the branch. Below the Tensor, which checks for it in assignments."""

from __future__ import annotations

from typing import Any, Callable

import pypto._core as _core
from ._tracing import _format_loc, user_loc


class Unavailable:
    """A name assigned in a runtime branch, after the branch: any use is an error."""

    def __init__(self, name: str, line: int) -> None:
        self._name, self._line = name, line

    def fail(self) -> None:
        raise _core.UserError(
            f"`{self._name}` is assigned in the runtime branch at line {self._line} (an `if` on a value known only "
            "when the kernel runs), so after it its value depends on the branch taken" + _format_loc(user_loc())
            + "\nhint: write the result into a tensor in each branch (out[...] = value) and read that tensor")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        self.fail()

    def __repr__(self) -> str:
        return f"<{self._name}: assigned in a runtime branch>"


def _poison_dunder(name: str) -> Callable[..., Any]:
    def method(self: Unavailable, *args: Any) -> Any:
        self.fail()
    method.__name__ = name
    return method


for _m in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
           "__floordiv__", "__mod__", "__pow__", "__neg__", "__bool__", "__getitem__", "__setitem__", "__lt__",
           "__le__", "__gt__", "__ge__", "__int__", "__index__", "__iter__", "__len__", "__call__", "__and__",
           "__or__"):
    setattr(Unavailable, _m, _poison_dunder(_m))
