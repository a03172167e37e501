"""``@pl.program``: a class whose methods are the functions of one program (hw-native-sys pypto's
form), and ``ir.compile`` / ``pypto.runtime.run`` of it.

    @pl.program
    class Add:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, a: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
            ...
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[128, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
            return self.kernel(a, out)

``Add`` is a :class:`Program` (upstream's decorator returns an ``ir.Program`` too): its
``functions`` (each a :class:`ProgramFunction`), ``get_function(name)``, ``as_python()``. Its
methods are bound to the program, so ``self.kernel(...)`` (and ``pl.submit(self.kernel, ...)``)
calls the program's own function; in-core functions defined at module level and called by the
program's functions belong to it too, as upstream adds them. The entry is the orchestration
function: it is traced by the same tracer as ``@pl.jit`` (a :class:`LanguageFunction` of the bound
method), so the program enters the one IR and pipeline. Upstream parses the class body into its
IR at decoration time; here it is traced at ``ir.compile`` from the parameters' annotations (or at
the first call, from the arguments), docs/porting.md.
"""

from __future__ import annotations

import datetime
import inspect
import os
import types
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

import pypto._core as _core
from ...core._dtypes import to_numpy_dtype
from ...core._tracing import _format_loc, function_scope, user_loc
from ...core.tensor import Tensor
from . import _host
from ._program import KernelFunction, LanguageFunction, RunConfig, entry_of
from ._types import Direction, FunctionType, Level, Role, machine_of

__all__ = ["program", "Program", "ProgramFunction", "CompiledProgram", "compile_program", "run"]


class ProgramFunction:
    """One function of a program: ``name``, ``func_type`` (a pl.FunctionType), ``level`` and
    ``role`` as declared, ``params`` (names, ``self`` left out) and
    ``requires_runtime_binding`` (a HOST sub-worker whose body is ``...``: its implementation is
    bound when the program is prepared)."""

    def __init__(self, name: str, impl: Any, func_type: FunctionType, level: Optional[Level], role: Optional[Role],
                 params: List[str], requires_runtime_binding: bool) -> None:
        self.name, self.impl, self.func_type = name, impl, func_type
        self.level, self.role, self.params = level, role, params
        self.requires_runtime_binding = requires_runtime_binding

    def as_python(self) -> str:
        fn = getattr(self.impl, "fn", self.impl)
        try:
            return inspect.getsource(getattr(fn, "__func__", fn))
        except (OSError, TypeError):
            return f"def {self.name}({', '.join(self.params)}): ..."

    def __repr__(self) -> str:
        return f"ProgramFunction({self.name!r}, {self.func_type.name})"


def _declared(impl: Any) -> Tuple[FunctionType, Optional[Level], Optional[Role]]:
    """What a function of the program was declared as (pl.function records it)."""
    return (getattr(impl, "func_type", None) or FunctionType.Opaque, getattr(impl, "declared_level", None),
            getattr(impl, "role", None))


def _raw_fn(impl: Any) -> Any:
    fn = getattr(impl, "fn", impl)
    return getattr(fn, "__func__", fn)


def _takes_self(fn: Any) -> bool:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0] == "self"


class _Self:
    """What ``self`` is in a program's functions: the program's functions, bound to it."""

    def __init__(self, program: "Program") -> None:
        self._program = program

    def __getattr__(self, name: str) -> Any:
        bound = self._program._bound.get(name)
        if bound is None:
            raise AttributeError(f"program {self._program.name} has no function {name!r}")
        return bound


class Program:
    """A ``@pl.program`` class: its functions, the entry (its orchestration) and what compiles it."""

    def __init__(self, cls: type) -> None:
        self.name = cls.__name__
        self.cls = cls
        self.__doc__ = cls.__doc__
        self._self = _Self(self)
        self._bound: Dict[str, Any] = {}
        self.functions: Dict[str, ProgramFunction] = {}
        for name, member in cls.__dict__.items():
            if not isinstance(member, (KernelFunction, _host.HostFunction, _host.HostCallback)):
                continue
            self._add(name, member)
        # In-core functions at module level the program's functions call (upstream adds them).
        for f in list(self.functions.values()):
            raw = _raw_fn(f.impl)
            scope = function_scope(raw)
            for n in raw.__code__.co_names + raw.__code__.co_freevars:
                v = scope.get(n)
                if isinstance(v, KernelFunction) and n not in self.functions and not _takes_self(_raw_fn(v)):
                    ft, lv, ro = _declared(v)
                    self.functions[n] = ProgramFunction(n, v, ft, lv, ro, list(inspect.signature(v.fn).parameters),
                                                        False)
        self._entry_name = self._find_entry()

    def _add(self, name: str, impl: Any) -> None:
        raw = _raw_fn(impl)
        ft, lv, ro = _declared(impl)
        if isinstance(impl, _host.HostFunction) and ft is FunctionType.Opaque:
            ft = FunctionType.Orchestration
        params = list(inspect.signature(raw).parameters)
        if params and params[0] == "self":
            params = params[1:]
            bound_fn = types.MethodType(raw, self._self)
            if isinstance(impl, KernelFunction):
                bound: Any = KernelFunction(bound_fn, impl.level, impl.inline)
                for attr in ("func_type", "declared_level", "role", "_def_locals"):
                    setattr(bound, attr, getattr(impl, attr, None))
            else:
                bound = _host.HostFunction(bound_fn)
        else:
            bound = impl
        self._bound[name] = bound
        abstract = isinstance(impl, _host.HostCallback) and impl.abstract
        self.functions[name] = ProgramFunction(name, bound, ft, lv, ro, params, abstract)

    def _find_entry(self) -> Optional[str]:
        hosts = [f.name for f in self.functions.values()
                 if f.role is Role.Orchestrator and f.level not in (None, Level.CHIP, Level.CHIP_DIE)
                 and f.name in self._bound]
        if hosts:
            return hosts[0]
        orch = [f.name for f in self.functions.values() if f.func_type is FunctionType.Orchestration
                and f.name in self._bound]
        return orch[0] if orch else None

    # --- what upstream's ir.Program offers ---------------------------------------------------------

    def get_function(self, name: str) -> Optional[ProgramFunction]:
        return self.functions.get(name)

    @property
    def entry(self) -> ProgramFunction:
        if self._entry_name is None:
            raise _core.UserError(f"@pl.program {self.name} has no orchestration function (a "
                                  "@pl.function(type=pl.FunctionType.Orchestration) method): nothing to run"
                                  + _format_loc(user_loc()))
        return self.functions[self._entry_name]

    def as_python(self) -> str:
        """The program's source, one function after another (upstream prints its IR as Python;
        the levels this compiler made of it are ``ir.compile(...)``'s dumps and
        ``fn.lower(args).as_python()``)."""
        parts = [f"# @pl.program {self.name}"]
        for f in self.functions.values():
            parts.append(f.as_python().rstrip())
        return "\n\n".join(parts) + "\n"

    def __getattr__(self, name: str) -> Any:
        bound = self.__dict__.get("_bound", {}).get(name)
        if bound is None:
            raise AttributeError(f"program {self.__dict__.get('name', '?')} has no attribute {name!r}")
        return bound

    def __repr__(self) -> str:
        return f"Program({self.name!r}, functions={list(self.functions)})"

    # --- compiling ---------------------------------------------------------------------------------------

    def compile(self, *args: Any, config: Optional[RunConfig] = None, output_dir: Optional[str] = None,
                dump_passes: Any = False) -> "CompiledProgram":
        return compile_program(self, *args, config=config, output_dir=output_dir, dump_passes=dump_passes)


def program(cls: Optional[type] = None, **kwargs: Any) -> Any:
    """``@pl.program``: the class's ``@pl.function`` methods as one program (a :class:`Program`)."""
    def wrap(c: type) -> Program:
        if not isinstance(c, type):
            raise _core.UserError(f"@pl.program decorates a class, got {c!r}" + _format_loc(user_loc()))
        return Program(c)
    return wrap(cls) if cls is not None else wrap


# --- compiled programs -------------------------------------------------------------------------------------


def _annotation(entry: LanguageFunction, name: str) -> Any:
    """The parameter's annotation, resolved (a string under `from __future__ import annotations`)
    and without its pl.Out / pl.InOut direction."""
    return entry._resolve(entry.sig.parameters[name].annotation)


def _static_shape(ann: Any) -> Optional[List[int]]:
    if isinstance(ann, Tensor) and not ann.is_traced and ann.shape is not None:
        shape = list(ann.shape)
        if shape and all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            return shape
    return None


class CompiledProgram:
    """A compiled ``@pl.program`` (``ir.compile`` / ``pypto.runtime.run``): call it with the
    entry's arguments (torch tensors or numpy arrays; ``pl.Out`` parameters written in place).
    Called without its ``pl.Out`` parameters, it allocates them and returns them. It is also the
    path of its output directory (``os.fspath(compiled)``, ``str(compiled)``): the per-pass
    dumps, the generated kernels' source and the program's text."""

    def __init__(self, prog: Program, entry: Any, output_dir: str, machine: Optional[str],
                 config: Optional[RunConfig]) -> None:
        self.program, self.entry, self.output_dir = prog, entry, output_dir
        self.machine, self.config = machine, config
        self.name = prog.name

    def __fspath__(self) -> str:
        return self.output_dir

    def __str__(self) -> str:
        return self.output_dir

    def __repr__(self) -> str:
        return f"CompiledProgram({self.name!r}, output_dir={self.output_dir!r})"

    def _call_config(self, config: Optional[RunConfig]) -> RunConfig:
        cfg = config if config is not None else self.config if self.config is not None else RunConfig()
        if self.machine and not cfg.machine:  # the platform it was compiled for
            cfg = RunConfig(platform={"a2a3": "a2a3sim", "a5": "a5sim"}.get(self.machine, ""), **cfg.fields)
        return cfg

    def __call__(self, *args: Any, config: Optional[RunConfig] = None, **kwargs: Any) -> Any:
        entry = self.entry
        if isinstance(entry, _host.HostFunction):
            return entry(*args, config=self._call_config(config), **kwargs)
        names = [p.name for p in entry.params]
        outs_missing = [n for n in names if entry.directions.get(n) is Direction.Out]
        allocated: List[Any] = []
        if len(args) + len(kwargs) == len(names) - len(outs_missing) and outs_missing:
            # The inputs only: the outputs are made here, and returned (as upstream's call returns them).
            it = iter(args)
            full: List[Any] = []
            use_torch = any(type(a).__module__.startswith("torch") for a in args)
            for n in names:
                if n in outs_missing:
                    full.append(self._new_output(entry, n, use_torch))
                    allocated.append(full[-1])
                elif n in kwargs:
                    full.append(kwargs.pop(n))
                else:
                    full.append(next(it))
            args = tuple(full)
        result = entry(*args, config=self._call_config(config), **kwargs)
        if allocated:
            return allocated[0] if len(allocated) == 1 else tuple(allocated)
        return result

    def _new_output(self, entry: LanguageFunction, name: str, use_torch: bool) -> Any:
        ann = _annotation(entry, name)
        shape = _static_shape(ann)
        if shape is None or ann.dtype is None:
            raise _core.UserError(f"{self.name}: the pl.Out parameter '{name}' is not passed and its annotation "
                                  f"{ann!r} has no static shape and dtype to allocate it from"
                                  + _format_loc(user_loc()) + f"\nhint: pass '{name}' (it is written in place)")
        if use_torch:
            import torch

            from ...core._dtypes import DT_BF16
            if ann.dtype == DT_BF16:
                return torch.zeros(shape, dtype=torch.bfloat16)
            return torch.from_numpy(np.zeros(shape, dtype=to_numpy_dtype(ann.dtype)))
        return np.zeros(shape, dtype=to_numpy_dtype(ann.dtype))


def _output_dir(prog: Program, output_dir: Optional[str]) -> str:
    if output_dir:
        path = os.fspath(output_dir)
    else:
        stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S_%f")
        path = os.path.join(os.getcwd(), "build_output", f"{prog.name}_{stamp}")
    os.makedirs(path, exist_ok=True)
    return path


def compile_program(prog: Any, *args: Any, config: Optional[RunConfig] = None, output_dir: Optional[str] = None,
                    dump_passes: Any = False, platform: Optional[str] = None, backend_type: Any = None,
                    distributed_config: Any = None, **_ignored: Any) -> Any:
    """Compiles a ``@pl.program`` (``pypto.ir.compile``): its entry traced from `args` (arrays or
    shapes) or, without them, from its parameters' annotations when they are all static; the
    output directory gets ``program.py`` (the source), ``kernels/`` (each generated kernel's C++)
    and, with ``dump_passes``, ``passes/`` (the program after each pass). Parameters whose
    annotations are not static compile at the first call."""
    if not isinstance(prog, Program):
        raise _core.UserError("pypto.ir.compile / pypto.runtime.run take a @pl.program class, got "
                              f"{type(prog).__name__}" + _format_loc(user_loc()))
    ent = prog.entry
    machine = None
    if platform:
        machine = RunConfig(platform=platform).machine
        if machine is None:
            raise _core.UserError(f"ir.compile: unknown platform {platform!r}; one of a2a3, a2a3sim, a5, a5sim"
                                  + _format_loc(user_loc()))
    elif config is not None and config.machine:
        machine = config.machine
    elif backend_type is not None:
        machine = machine_of(backend_type)
    if config is None:
        config = RunConfig(platform={"a2a3": "a2a3sim", "a5": "a5sim"}.get(machine or "", ""))
    out_dir = _output_dir(prog, output_dir)
    with open(os.path.join(out_dir, "program.py"), "w") as fh:
        fh.write(prog.as_python())
    if isinstance(ent.impl, _host.HostFunction):
        # A host orchestrator: the program runs on ranks (DistributedConfig), a DistributedCompiledProgram.
        dist = distributed_config if distributed_config is not None else config.fields.get("distributed_config")
        return ent.impl.compile(config=RunConfig(platform=config.platform, **dict(config.fields,
                                                                                  distributed_config=dist)))
    bound_fn = ent.impl.fn
    entry = entry_of(bound_fn, None, ent.impl)
    if dump_passes:
        entry.group_options["debug"]["dump_dir"] = os.path.join(out_dir, "passes")
        entry.group_options["debug"]["dump_passes"] = True
    compiled = CompiledProgram(prog, entry, out_dir, machine, config)
    shapes: List[Any] = list(args)
    if not shapes:
        for p in entry.params:
            shape = _static_shape(_annotation(entry, p.name))
            if shape is None:
                return compiled  # compiled at the first call, for its arguments
            shapes.append(shape)
    cf = entry.compile(*shapes, config=config)
    kdir = os.path.join(out_dir, "kernels")
    os.makedirs(kdir, exist_ok=True)
    with open(os.path.join(kdir, f"{prog.name}.cpp"), "w") as fh:
        fh.write(cf.program.native_source())
    with open(os.path.join(out_dir, f"{prog.name}.ir.txt"), "w") as fh:
        fh.write("\n\n".join(str(x) for x in (cf.program.tensor_graph(), cf.program.tile_graph(),
                                               cf.program.block_graph(), cf.program.exec_graph())))
    return compiled


def run(prog: Any, *tensors: Any, config: Optional[RunConfig] = None) -> CompiledProgram:
    """``pypto.runtime.run(program, *tensors, config=RunConfig(...))``: compiles the program and,
    given tensors, runs it on them (its ``pl.Out`` tensors written in place); returns the compiled
    program, to call again with other tensors."""
    if config is not None and not isinstance(config, RunConfig):
        raise _core.UserError(f"run: config must be a pypto.runtime.RunConfig, got {config!r}"
                              + _format_loc(user_loc()))
    cfg = config or RunConfig()
    fields = cfg.fields
    compiled = compile_program(prog, config=cfg, output_dir=fields.get("save_kernels_dir"),
                               dump_passes=fields.get("dump_passes", False), backend_type=fields.get("backend_type"))
    if tensors and not fields.get("codegen_only", False):
        compiled(*tensors, config=cfg)
    return compiled
