"""PyPTO's ``pypto.symbolic_scalar`` module (``from pypto.symbolic_scalar import SymInt``). The
name is also PyPTO's constructor, ``pypto.symbolic_scalar(32)``: this module is callable, so both
spellings work whichever was imported first."""

import sys
import types
from typing import Any, Union

from .._core import SymbolicScalar

SymInt = Union[int, SymbolicScalar]  # an int or a symbolic scalar (PyPTO's annotation alias)

__all__ = ["SymInt", "SymbolicScalar"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> SymbolicScalar:
        return SymbolicScalar(*args, **kwargs)

    def __instancecheck__(self, obj: Any) -> bool:  # isinstance(x, pypto.symbolic_scalar), as in PyPTO
        return isinstance(obj, SymbolicScalar)


sys.modules[__name__].__class__ = _CallableModule
