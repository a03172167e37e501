"""``pypto.ir`` of hw-native-sys pypto, as far as its programs use it here: ``fn.lower(args)``
(a @pl.jit function traced and compiled for these arguments, nothing run) gives a ``Program``
whose ``functions`` are the entry's orchestration and each kernel the compiler made (an in-core
function per fused kernel, on AIC or AIV), and ``as_python()`` prints the program's levels.
Deliberate difference: the functions are those of this compiler's pipeline (one kernel per
fused tile chain), not a mirror of upstream's IR objects; docs/porting.md."""

from __future__ import annotations

from typing import Any

from ...frontends.language._lowered import Function, Program
from ...frontends.language._parse import deserialize, deserialize_from_file, serialize, serialize_to_file
from ...frontends.language._program_class import CompiledProgram, compile_program
from ...frontends.language._types import FunctionType
from . import pass_manager
from .pass_manager import OptimizationStrategy

__all__ = ["Program", "Function", "FunctionType", "lower", "compile", "CompiledProgram", "OptimizationStrategy",
           "pass_manager", "serialize", "deserialize", "serialize_to_file", "deserialize_from_file"]


def compile(program: Any, output_dir: Any = None, *, strategy: Any = None, dump_passes: Any = False,  # noqa: A001
            backend_type: Any = None, platform: Any = None, **options: Any) -> CompiledProgram:
    """``pypto.ir.compile(program, ...)``: a ``@pl.program`` compiled (its entry traced from its
    annotations), a ``CompiledProgram`` to call with tensors and the path of its output directory.
    ``strategy`` and upstream's other compile options are accepted: this compiler runs one
    pipeline (docs/ARCHITECTURE.md)."""
    return compile_program(program, output_dir=output_dir, dump_passes=dump_passes, backend_type=backend_type,
                           platform=platform, **options)


def lower(fn: Any, *args: Any, **kwargs: Any) -> Program:
    """``pypto.ir.lower(fn, args...)``: the same as ``fn.lower(args...)``."""
    return fn.lower(*args, **kwargs)
