"""A lowered @pl.jit function (``fn.lower(args)``): the functions this compiler made for it (the
entry's orchestration and one in-core function per fused kernel, on AIC or AIV) and its levels as
text. ``pypto.ir`` (compat/ir) names these hw-native-sys pypto's way."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from ._types import FunctionType


class Function:
    """One function of a lowered program: ``name``, ``func_type`` (a pl.FunctionType) and, for
    a kernel, the core it runs on and its tile instructions."""

    def __init__(self, name: str, func_type: FunctionType, core: str = "", tile_ops: int = 0) -> None:
        self.name, self.func_type, self.core, self.tile_ops = name, func_type, core, tile_ops

    def __repr__(self) -> str:
        return f"Function({self.name!r}, {self.func_type.name})"


class Program:
    """A lowered program: ``functions`` by name (the orchestration first), ``as_python()``."""

    def __init__(self, name: str, compiled: Any) -> None:
        self.name = name
        self.compiled = compiled  # the compiled specialization (frontends.jit.CompiledFunction)
        block = json.loads(compiled.program.to_json("block_graph"))
        self.functions: Dict[str, Function] = {name: Function(name, FunctionType.Orchestration)}
        for k in block.get("kernels", []):
            core = str(k.get("core", ""))
            kind = FunctionType.AIC if core.upper() == "AIC" else FunctionType.AIV if core.upper() == "AIV" else \
                FunctionType.InCore
            self.functions[str(k["name"])] = Function(str(k["name"]), kind, core, len(k.get("tile_ops", []) or []))

    def as_python(self) -> str:
        """The program at its levels: the tensor graph, the tile graph and the kernels."""
        p = self.compiled.program
        parts: List[str] = [p.tensor_graph(), p.tile_graph(), p.block_graph()]
        return "\n\n".join(str(x) for x in parts)

    def __repr__(self) -> str:
        return f"Program({self.name!r}, {len(self.functions)} functions)"
