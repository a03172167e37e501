"""PyPTO's SymbolicScalar surface in Python: the methods its programs call (``a.min(b)``,
``is_symbol``, ``concrete``, ...), the user's line on the errors the C++ type raises (int(),
bool() and comparisons of a value only known when the kernel runs), and print() of a symbolic
value while tracing (its expression, with a warning once per line). Installed on import."""

from __future__ import annotations

import warnings
from typing import Any

import pypto._core as _core
from .._core import SymbolicScalar
from ._tracing import _format_loc, decide_in_loop, maybe_recorder, user_loc


class SymbolicPrintWarning(UserWarning):
    """print() or an f-string of a symbolic value while a @pypto.jit function is traced: it
    shows the expression (e.g. ``x_dim0``), not a run-time value."""


def _add_location_to_symbolic_errors() -> None:
    """int(), bool() and comparisons of a symbolic value fail in C++; add the user's line."""
    def wrap(name: str) -> None:
        orig = getattr(SymbolicScalar, name)

        def method(self: SymbolicScalar, *args: Any) -> Any:
            try:
                return orig(self, *args)
            except _core.UserError as e:
                if name == "__bool__":  # `if pypto.cond(i == 0):` in a loop body: one trace per path
                    decided = decide_in_loop(self)
                    if decided is not None:
                        return decided
                raise _core.UserError(str(e) + _format_loc(user_loc())) from None

        setattr(SymbolicScalar, name, method)

    for name in ("__int__", "__index__", "__bool__", "__lt__", "__le__", "__gt__", "__ge__"):
        wrap(name)

    # print() or an f-string of a symbolic value while tracing shows its expression, as in PyPTO
    # ("compile phase print"); a warning says so once per line, since the run-time value is
    # what a user usually wants.
    def to_text(self: SymbolicScalar, *args: Any) -> str:
        text = sym_text(self)
        if maybe_recorder() is not None and not self.is_const():
            loc = user_loc()
            warnings.warn_explicit(
                f"printing the symbolic value '{text}' while tracing shows its expression: print() runs once, "
                "when the function is traced, and the value is only known when the kernel runs",
                SymbolicPrintWarning, loc[0] or "<pypto>", loc[1] or 0)
        return text

    # PyPTO's SymbolicScalar methods: a.min(b) / a.max(b) (Python's min/max would compare).
    SymbolicScalar.min = lambda self, o: _core.sym_min(self, o)  # type: ignore[attr-defined]
    SymbolicScalar.max = lambda self, o: _core.sym_max(self, o)  # type: ignore[attr-defined]
    SymbolicScalar.is_concrete = SymbolicScalar.is_const  # type: ignore[attr-defined]
    # PyPTO's three kinds of symbolic value: an immediate (a constant), a symbol (one name: a
    # dim, a loop index, a read element) and an expression of them.
    SymbolicScalar.is_immediate = SymbolicScalar.is_const  # type: ignore[attr-defined]
    SymbolicScalar.is_symbol = lambda self: (  # type: ignore[attr-defined]
        not self.is_const() and len(self.free_vars()) == 1 and sym_text(self) == self.free_vars()[0])
    SymbolicScalar.is_expression = lambda self: (  # type: ignore[attr-defined]
        not self.is_const() and not self.is_symbol())
    def concrete(self: SymbolicScalar) -> int:
        if not self.is_const():
            raise ValueError(f"Not concrete value: the symbolic value '{sym_text(self)}' is only known when "
                             "the kernel runs (check is_concrete() first)")
        return int(self)

    SymbolicScalar.concrete = concrete  # type: ignore[attr-defined]

    SymbolicScalar.__str__ = to_text  # type: ignore[method-assign]
    SymbolicScalar.__format__ = to_text  # type: ignore[method-assign]


sym_text = SymbolicScalar.__str__  # the expression as text, for pypto's own messages

_add_location_to_symbolic_errors()
