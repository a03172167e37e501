"""The module paths users import from before the package was layered (``pypto.tensor``,
``pypto.asc``, ``pypto.npu_compat``, ``python -m pypto.fuzz``, ...): each names the same module
object as its place in core/, frontends/, compat/ or tools/ (never a second copy of it)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

# old path -> where it lives now (a package moves with everything under it)
MOVED = {
    "pypto._tracing": "pypto.core._tracing", "pypto._dtypes": "pypto.core._dtypes", "pypto._enums": "pypto.core._enums",
    "pypto._aliasing": "pypto.core._aliasing", "pypto.error": "pypto.core.error",
    "pypto.element": "pypto.core.element", "pypto.symbolic_scalar": "pypto.core.symbolic_scalar",
    "pypto.symbolic_api": "pypto.core.symbolic_api", "pypto.tensor": "pypto.core.tensor",
    "pypto.tensor_factory": "pypto.core.tensor_factory", "pypto.control": "pypto.core.control",
    "pypto.ops": "pypto.core.ops", "pypto.config": "pypto.core.config", "pypto.pass_config": "pypto.core.pass_config",
    "pypto.hifloat8": "pypto.core.hifloat8",
    "pypto.jit": "pypto.frontends.jit", "pypto.tile": "pypto.frontends.tile", "pypto.language": "pypto.frontends.language",
    "pypto.asc": "pypto.frontends.asc", "pypto.isa": "pypto.frontends.isa",
    "pypto.frontend": "pypto.compat.frontend", "pypto.npu_compat": "pypto.compat.npu_compat",
    "pypto.npu_platform": "pypto.compat.npu_platform", "pypto.npu_reference": "pypto.compat.npu_reference",
    "pypto.pypto_impl": "pypto.compat.pypto_impl", "pypto.operation": "pypto.compat.operation",
    "pypto.function_block": "pypto.compat.function_block", "pypto.experimental": "pypto.compat.experimental",
    "pypto.runtime": "pypto.compat.runtime", "pypto.ir": "pypto.compat.ir", "pypto.backend": "pypto.compat.backend",
    "pypto.sim": "pypto.tools.sim", "pypto.tune": "pypto.tools.tune", "pypto.pass_verify": "pypto.tools.pass_verify",
    "pypto.tools.swimlane": "pypto.whitebox.swimlane", "pypto.tools.graph_html": "pypto.whitebox.graph_html",
    "pypto.tools.debug_output": "pypto.whitebox.debug_output", "pypto.tools.verify": "pypto.whitebox.verify",
    "pypto.tools.tensor_semantics": "pypto.whitebox.tensor_semantics",
    "pypto.tools.pass_verify": "pypto.whitebox.pass_verify",
}


def real_name(name: str) -> Optional[str]:
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return None


class _SameModule(importlib.abc.Loader):
    """Loads an old path as the module already at its new place."""

    def __init__(self, real: str) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.real)

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = importlib.util.find_spec(self.real)  # the import system set the alias's

    def get_code(self, fullname: str) -> Any:  # `python -m pypto.fuzz` runs the real __main__
        spec = importlib.util.find_spec(self.real)
        assert spec is not None and spec.loader is not None
        return spec.loader.get_code(self.real)  # type: ignore[attr-defined]


class _OldPaths(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        real = real_name(fullname)
        if real is None:
            return None
        found = importlib.util.find_spec(real)
        if found is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _SameModule(real),
                                              is_package=found.submodule_search_locations is not None)
        if found.submodule_search_locations is not None:
            spec.submodule_search_locations = list(found.submodule_search_locations)
        return spec


def install() -> None:
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())


def alias_loaded() -> None:
    """Old paths of the modules loaded so far: the same objects, bound without importing (an
    import would set the package attribute, and `pypto.tensor` / `pypto.tune` are functions)."""
    for name, module in list(sys.modules.items()):
        for old, new in MOVED.items():
            if name == new or name.startswith(new + "."):
                sys.modules.setdefault(old + name[len(new):], module)
                parent, leaf = old.rsplit(".", 1)
                if name == new and parent in sys.modules and not hasattr(sys.modules[parent], leaf):
                    setattr(sys.modules[parent], leaf, module)  # `pypto.ops.add`, as before
