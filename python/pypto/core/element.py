"""``pypto.Element``: a typed scalar operand (PyPTO's), ``pypto.Element(pypto.DT_FP32, 0.5)``.

It is a Python float with a ``dtype``, so every op that takes a Python scalar takes it; the
tensor's dtype decides the arithmetic, as for any scalar (docs/numerics.md), and an integer
Element that the tensor's dtype cannot hold is refused like an int.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pypto._core as _core
from ._dtypes import DT_DOUBLE, check_dtype, is_int_dtype


class Element(float):
    """A scalar with a dtype: ``Element(dtype, value)``; ``.dtype``, ``.value``."""

    dtype: Any

    def __new__(cls, dtype: Any, value: Any) -> "Element":
        # DT_DOUBLE (PyPTO's pow passes its exponent so) is a Python float's own precision.
        dt = dtype if dtype is DT_DOUBLE else check_dtype(dtype, "pypto.Element")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _core.UserError(f"pypto.Element: the value must be an int or a float, got {value!r}")
        if dt is not DT_DOUBLE and is_int_dtype(dt) and float(value) != int(value):
            raise _core.UserError(f"pypto.Element: {value!r} is not a value of {_core.dtype_name(dt)}")
        obj = super().__new__(cls, float(value))
        obj.dtype = dt
        return obj

    @property
    def value(self) -> Any:
        return int(self) if self.dtype is not DT_DOUBLE and is_int_dtype(self.dtype) else float(self)

    def __repr__(self) -> str:
        name = "DOUBLE" if self.dtype is DT_DOUBLE else _core.dtype_name(self.dtype)
        return f"pypto.Element({name}, {self.value!r})"


class _CallableModule(types.ModuleType):
    """PyPTO's lowercase constructor ``pypto.element(dtype, value)`` is this module's name too:
    the module is callable, as pypto.symbolic_scalar."""

    def __call__(self, dtype: Any, value: Any) -> Element:
        return Element(dtype, value)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, Element)


sys.modules[__name__].__class__ = _CallableModule
