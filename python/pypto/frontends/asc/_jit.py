"""Kernels of ``pypto.asc``: ``@asc.jit`` (options as keywords: ``checked=True``), launched as
``kernel[core_num](args...)``; ``asc.check(kernel[core_num], args...)`` runs in checked mode
and returns the report instead of raising."""

from __future__ import annotations

import __future__
import ast
import copy
import functools
import inspect
import os
import threading
import types
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import pypto._core as _core
from ...core._tracing import _format_loc, user_loc
from ._memory import Block, GlobalAddress, _state, bfloat16
from ._native import Tape
from ._checker import CheckReport, Checker
from .adv import MatmulServer
from .runtime.config import KernelType


class ConstExpr:
    """``tile_length: asc.ConstExpr[int]``: a compile-time parameter (here every scalar is a
    Python value already)."""

    def __class_getitem__(cls, item: Any) -> Any:
        return item


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _as_global(name: str, x: Any) -> GlobalAddress:
    if _is_torch(x):
        if not x.is_cpu:  # (an npu_compat "npu" tensor is a CPU tensor)
            raise _core.UserError(f"asc kernel argument '{name}': a {x.device.type} tensor; pass a CPU tensor"
                                  + _format_loc(user_loc()))
        if not x.is_contiguous():
            raise _core.UserError(f"asc kernel argument '{name}': a non-contiguous tensor (a kernel addresses global "
                                  "memory linearly); pass .contiguous()" + _format_loc(user_loc()))
        if str(x.dtype) == "torch.bfloat16":  # its bit patterns, as asc.bfloat16
            return GlobalAddress(x.detach().view(_torch_int16()).numpy().view(np.uint16).reshape(-1), 0, name, bfloat16)
        x = x.detach().numpy()
    if isinstance(x, np.ndarray) and x.dtype.name == "bfloat16":  # ml_dtypes' bfloat16
        x = np.ascontiguousarray(x)
        return GlobalAddress(x.view(np.uint16).reshape(-1), 0, name, bfloat16)
    if not isinstance(x, np.ndarray):
        raise _core.UserError(f"asc kernel argument '{name}': a GlobalAddress parameter takes a numpy array or torch "
                              f"tensor, got {type(x).__name__}" + _format_loc(user_loc()))
    if not x.flags.c_contiguous:
        raise _core.UserError(f"asc kernel argument '{name}': a non-contiguous array (a kernel addresses global memory "
                              "linearly); pass np.ascontiguousarray(x)" + _format_loc(user_loc()))
    return GlobalAddress(x.reshape(-1), 0, name)


def _torch_int16() -> Any:
    import torch
    return torch.int16


class Kernel:
    """An ``@asc.jit`` function. Launched as ``kernel[core_num](args)`` (``kernel[core_num,
    stream]`` is accepted) it runs once per block; called inside a running kernel it is a
    sub-function and runs in the caller's block."""

    def __init__(self, fn: Callable[..., Any], checked: bool = False, machine: str = "a2a3",
                 workers: Optional[int] = None, cube: bool = False, kernel_type: Any = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = _with_iterate_as_loop(fn)
        self.cube = cube
        if kernel_type is not None and not isinstance(kernel_type, KernelType):
            try:
                kernel_type = KernelType(kernel_type)
            except ValueError:
                raise _core.UserError(f"@asc.jit(kernel_type={kernel_type!r}): one of asc.runtime.config.KernelType"
                                      + _format_loc(user_loc())) from None
        self._kernel_type: Optional[KernelType] = kernel_type
        self.checked = checked
        self.machine = machine
        self.workers = workers
        self.sig = inspect.signature(fn)
        self.last_report: Optional[CheckReport] = None
        # The native path: per launch signature, each block's recorded stream (None: the kernel
        # does something the native path cannot run, so it stays interpreted).
        self.native: Dict[Any, Optional[_core.AscProgram]] = {}
        self.last_native = False

    @property
    def kernel_type(self) -> KernelType:
        """As PyAsc decides it: the option if given; else a kernel that calls
        ``asc.adv.register_matmul`` (itself or in an @asc.jit function it calls) is MIX_AIC_1_2,
        or AIC_ONLY with ``matmul_cube_only=True``; any other kernel AIV_ONLY."""
        if self._kernel_type is None:
            if _calls_register_matmul(self.fn.__code__, self.fn.__globals__, set()):
                self._kernel_type = KernelType.AIC_ONLY if self.cube else KernelType.MIX_AIC_1_2
            else:
                self._kernel_type = KernelType.AIC_ONLY if self.cube else KernelType.AIV_ONLY
        return self._kernel_type

    def cores(self, block_num: int) -> List[Tuple[int, bool, int, int, bool]]:
        """The cores a launch of `block_num` blocks runs: (get_block_idx, cube, get_sub_block_idx,
        get_task_ratio, mix) each. A MIX_AIC_1_2 block is a group of one cube and two vector cores
        (vector indices block * 2 + sub); MIX_AIC_1_1 one and one."""
        kt = self.kernel_type
        if kt in (KernelType.AIC_ONLY, KernelType.MIX_AIC_1_0, KernelType.MIX_AIC_HARD_SYNC):
            return [(i, True, 0, 1, False) for i in range(block_num)]
        if kt in (KernelType.AIV_ONLY, KernelType.MIX_AIV_1_0, KernelType.MIX_AIV_HARD_SYNC):
            return [(i, False, 0, 1, False) for i in range(block_num)]
        ratio = 2 if kt is KernelType.MIX_AIC_1_2 else 1
        return ([(i, True, 0, 1, True) for i in range(block_num)]
                + [(i, False, i % ratio, ratio, True) for i in range(block_num * ratio)])

    def __getitem__(self, launch: Any) -> "Launch":
        core_num = launch[0] if isinstance(launch, tuple) else launch
        if not isinstance(core_num, int) or isinstance(core_num, bool) or core_num <= 0:
            raise _core.UserError(f"{self.fn.__name__}[core_num]: core_num must be a positive int, got {core_num!r}"
                                  + _format_loc(user_loc()))
        return Launch(self, core_num)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "block", None) is None:
            raise _core.UserError(f"{self.fn.__name__} is an @asc.jit kernel: launch it as "
                                  f"{self.fn.__name__}[core_num](args...)" + _format_loc(user_loc()))
        return self.fn(*args, **kwargs)


class Launch:
    """``kernel[core_num]``: call it with the kernel's arguments."""

    def __init__(self, kernel: Kernel, core_num: int) -> None:
        self.kernel, self.core_num = kernel, core_num

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        report = self.run(args, kwargs, self.kernel.checked)
        if report is not None and not report.clean:
            raise _core.UserError(str(report))

    def run(self, args: Tuple[Any, ...], kwargs: Dict[str, Any], checked: bool) -> Optional[CheckReport]:
        k = self.kernel
        try:
            bound = k.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise _core.UserError(f"{k.fn.__name__}{k.sig}: {e}" + _format_loc(user_loc())) from None
        call: Dict[str, Any] = {}
        for name, v in bound.arguments.items():
            ann = k.sig.parameters[name].annotation
            if ann is GlobalAddress or ann == "asc.GlobalAddress" or isinstance(v, np.ndarray) or _is_torch(v):
                call[name] = _as_global(name, v)
            else:
                call[name] = v
        report = CheckReport() if checked else None
        gm = [v for v in call.values() if isinstance(v, GlobalAddress)]
        roots: List[np.ndarray] = []
        gm_index: Dict[int, int] = {}
        for g in gm:
            if id(g.root) not in gm_index:
                gm_index[id(g.root)] = len(roots)
                roots.append(g.root)
        key = self._key(call) if not checked else None
        cores = k.cores(self.core_num)
        workers = k.workers or min(len(cores), os.cpu_count() or 1)
        streams = k.native.get(key) if key is not None else None
        if streams is not None:
            streams.run(roots, self._ub_bytes(), workers)
            k.last_native = True
            return None
        k.last_native = False
        recording = key is not None and key not in k.native
        tapes: List[Optional[Tape]] = [None] * len(cores)

        stop = threading.Event()  # Ctrl-C: the blocks still running end at their next instruction

        def one(n: int) -> None:
            if stop.is_set():
                return
            idx, cube, sub, ratio, mix = cores[n]
            checker = Checker(idx, report) if report is not None else None
            block = _state.block = Block(idx, self.core_num, k.machine, checker, cube, sub, ratio, mix)
            block.cancelled = stop
            block.gm_roots, block.gm_index = roots, gm_index
            if recording:
                block.tape = tapes[n] = Tape()
            try:
                k.fn(**call)
            except MatmulServer:
                pass  # a MIX group's cube core from register_matmul on: it serves the matmuls
            finally:
                _state.block = None
            if checker is not None:
                checker.finish()

        if workers <= 1 or len(cores) == 1 or checked:
            for n in range(len(cores)):  # checked: one report, in block order
                one(n)
        else:
            pool = ThreadPoolExecutor(max_workers=workers)  # numpy releases the GIL in big ops
            try:
                futures = [pool.submit(one, n) for n in range(len(cores))]
                pending = set(futures)
                while pending:  # short waits: a Ctrl-C is handled between them, not after the launch
                    _, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
                    for f in futures:
                        if f.done() and f.exception() is not None:
                            f.result()
            except BaseException:
                stop.set()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
        k.last_report = report
        if recording and key is not None:
            ok = all(t is not None and t.valid for t in tapes)
            k.native[key] = _core.AscProgram([t.packed() for t in tapes if t is not None]) if ok else None
        return report

    def _ub_bytes(self) -> int:
        return int(_core.machine_info(self.kernel.machine)["ub_bytes"])

    def _key(self, call: Dict[str, Any]) -> Any:
        """What a recorded stream depends on: the block count, the arrays' shapes and dtypes, the
        other arguments' values (None when one has no stable value: no native path)."""
        parts: List[Any] = [self.core_num, self.kernel.kernel_type]
        for name, v in call.items():
            if isinstance(v, GlobalAddress):
                # writeable too: a stream that writes an array must not replay onto a read-only one
                parts.append((name, v.root.shape, v.dtype.name, bool(v.root.flags.writeable)))
            elif isinstance(v, (int, float, bool, str, type(None))):
                parts.append((name, type(v).__name__, v))
            else:
                text = repr(v)
                if " object at 0x" in text:
                    return None
                parts.append((name, type(v).__name__, text))
        return tuple(parts)


def jit(fn: Optional[Callable[..., Any]] = None, *, checked: bool = False, machine: str = "a2a3",
        workers: Optional[int] = None, matmul_cube_only: bool = False, kernel_type: Any = None,
        **options: Any) -> Any:
    """``@asc.jit`` or ``@asc.jit(checked=True)``: an element-level kernel. `machine` names the
    chip whose local memory sizes the kernel gets ("a2a3": 192 KiB UB, 512 KiB L1, ...). The
    cores it runs on are PyAsc's: a kernel that registers a matmul is MIX (each launched block one
    cube and two vector cores), or cube-only with ``matmul_cube_only=True``; any other runs on
    vector cores; ``kernel_type=KernelType...`` sets it. PyAsc's other options
    (``always_compile``, ...) are accepted."""
    def wrap(f: Callable[..., Any]) -> Kernel:
        return Kernel(f, checked, machine, workers, matmul_cube_only, kernel_type)
    return wrap(fn) if fn is not None else wrap


def _uses_iterate(code: Any) -> bool:
    """Whether `code` (or a function nested in it) names an attribute ``iterate``."""
    return "iterate" in code.co_names or any(hasattr(c, "co_names") and _uses_iterate(c) for c in code.co_consts)


class _IterateWith(ast.NodeTransformer):
    """``with <expr>.iterate(...) as NAME: BODY`` -> ::

        _asc_iterate_L<line> = <expr>.iterate(...)
        if getattr(_asc_iterate_L<line>, "_pypto_asc_loop", False):
            for NAME in _asc_iterate_L<line>: BODY        # PyAsc's while loop over the base blocks
        else:
            with _asc_iterate_L<line> as NAME: BODY     # any other object: the `with` as written

    every node keeping the line and column of the `with`, so errors and tracebacks point at the
    user's lines."""

    def __init__(self) -> None:
        self.count = 0

    def visit_With(self, node: ast.With) -> Any:
        if len(node.items) > 1:  # `with A as x, B as y:` is `with A as x: with B as y:`
            inner = ast.copy_location(ast.With(items=node.items[1:], body=node.body), node)
            node = ast.copy_location(ast.With(items=node.items[:1], body=[inner]), node)
        self.generic_visit(node)
        item = node.items[0]
        call = item.context_expr
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "iterate"):
            return node
        self.count += 1
        tmp = f"_asc_iterate_L{node.lineno}_{self.count}"
        target = item.optional_vars if item.optional_vars is not None else ast.Name(id="_", ctx=ast.Store())
        assign = ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=call)
        test = ast.Call(func=ast.Name(id="getattr", ctx=ast.Load()),
                        args=[ast.Name(id=tmp, ctx=ast.Load()), ast.Constant("_pypto_asc_loop"), ast.Constant(False)],
                        keywords=[])
        loop = ast.For(target=copy.deepcopy(target), iter=ast.Name(id=tmp, ctx=ast.Load()), body=node.body, orelse=[])
        plain = ast.With(items=[ast.withitem(context_expr=ast.Name(id=tmp, ctx=ast.Load()),
                                             optional_vars=item.optional_vars)],
                         body=copy.deepcopy(node.body))
        branch = ast.If(test=test, body=[loop], orelse=[plain])
        for stmt in (assign, branch):
            for n in ast.walk(stmt):
                if isinstance(n, (ast.stmt, ast.expr)) and not hasattr(n, "lineno"):
                    ast.copy_location(n, node)
        return [assign, branch]


def _with_iterate_as_loop(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with each ``with <expr>.iterate(...) as NAME:`` run as a loop (see _IterateWith), or
    `fn` itself when it has none or its source cannot be read (then entering the iterator raises).
    The new function has fn's globals, closure cells, defaults and lines."""
    code = getattr(fn, "__code__", None)
    if code is None or not _uses_iterate(code) or fn.__name__ == "<lambda>":
        return fn
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return fn
    source = "".join(lines)
    indented = bool(lines) and lines[0][:1] in (" ", "\t")
    try:
        # An indented def (in a class or a function) parses under `if 1:`, keeping its columns.
        tree = ast.parse("if 1:\n" + source if indented else source)
    except SyntaxError:
        return fn
    ast.increment_lineno(tree, first - (2 if indented else 1))
    body = tree.body[0].body if indented else tree.body  # type: ignore[attr-defined]
    defs = [d for d in body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == fn.__name__]
    if len(defs) != 1:
        return fn
    fdef = defs[0]  # its decorators stay: they are compiled, never run (the def is not executed)
    rewriter = _IterateWith()
    rewriter.visit(fdef)
    if not rewriter.count:
        return fn
    # Compiled inside a function that binds fn's free variables, so they stay free variables
    # (then given fn's own cells); the code object of the def is taken out of it.
    outer = ast.parse("def _asc_outer():\n    return None\n").body[0]
    assert isinstance(outer, ast.FunctionDef)
    outer.body = [*(ast.Assign(targets=[ast.Name(id=v, ctx=ast.Store())], value=ast.Constant(None))
                    for v in code.co_freevars), fdef, *outer.body]
    for stmt in (outer, *outer.body):
        if stmt is not fdef:
            for n in ast.walk(stmt) if stmt is not outer else (outer,):
                ast.copy_location(n, fdef)
    module = ast.Module(body=[outer], type_ignores=[])
    ast.fix_missing_locations(module)
    flags = code.co_flags & __future__.annotations.compiler_flag  # `from __future__ import annotations`
    try:
        compiled = compile(module, code.co_filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return fn
    outer_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new_code = next((c for c in outer_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__name__),
                    None)
    if new_code is None or new_code.co_firstlineno != code.co_firstlineno or new_code.co_argcount != code.co_argcount \
            or new_code.co_varnames[:code.co_argcount] != code.co_varnames[:code.co_argcount]:
        return fn  # the file changed since fn was defined: keep fn
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    if any(v not in cells for v in new_code.co_freevars):
        return fn
    new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(cells[v] for v in new_code.co_freevars) or None)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = fn.__annotations__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    return new


def _calls_register_matmul(code: Any, env: Dict[str, Any], seen: set) -> bool:
    """Whether `code` (or a nested function, or an @asc.jit function it names) names
    register_matmul: PyAsc's compiler makes such a kernel MIX from its inlined IR, whichever
    branch the call is in; the names a code object uses are the same static view."""
    if id(code) in seen:
        return False
    seen.add(id(code))
    if "register_matmul" in code.co_names:
        return True
    for c in code.co_consts:
        if hasattr(c, "co_names") and _calls_register_matmul(c, env, seen):
            return True
    for name in code.co_names:
        callee = env.get(name)
        if isinstance(callee, Kernel) and _calls_register_matmul(callee.fn.__code__, callee.fn.__globals__, seen):
            return True
    return False


def check(launch: Launch, *args: Any, **kwargs: Any) -> CheckReport:
    """Runs ``kernel[core_num](args)`` in checked mode and returns the report (data races and
    misplaced local tensors) instead of raising."""
    if not isinstance(launch, Launch):
        raise _core.UserError("asc.check(kernel[core_num], args...): give a launch" + _format_loc(user_loc()))
    report = launch.run(args, kwargs, True)
    assert report is not None
    return report



