"""``pypto.ir`` of hw-native-sys pypto, as far as its programs use it here: ``fn.lower(args)``
(a @pl.jit function traced and compiled for these arguments, nothing run) gives a ``Program``
whose ``functions`` are the entry's orchestration and each kernel the compiler made (an in-core
function per fused kernel, on AIC or AIV), and ``as_python()`` prints the program's levels.
Deliberate difference: the functions are those of this compiler's pipeline (one kernel per
fused tile chain), not a mirror of upstream's IR objects; docs/porting.md."""

from __future__ import annotations

from typing import Any

from ...frontends.language._lowered import Function, Program
from ...frontends.language._types import FunctionType
from . import pass_manager

__all__ = ["Program", "Function", "FunctionType", "lower", "pass_manager"]


def lower(fn: Any, *args: Any, **kwargs: Any) -> Program:
    """``pypto.ir.lower(fn, args...)``: the same as ``fn.lower(args...)``."""
    return fn.lower(*args, **kwargs)
