"""`@pypto.jit` / `@pypto.frontend.jit()`: trace a Python function into the tensor graph,
compile it once per static signature, and run it on numpy arrays or torch tensors."""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from . import _core, options
from ._tracing import NO_LOC, Tracing, _format_loc, user_loc
from ._dtypes import DT_BF16, as_dtype, to_numpy_dtype
from .tensor import DYNAMIC, STATIC, Tensor


def _defining_scope() -> Dict[str, Any]:
    """Locals of the scope the decorated function is defined in (string annotations may use
    them, and with ``from __future__ import annotations`` they are not in the closure)."""
    import sys

    pkg = os.path.dirname(os.path.abspath(__file__))
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f = f.f_back
    return dict(f.f_locals) if f is not None and f.f_locals is not f.f_globals else {}


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


class CompiledFunction:
    """One compiled specialization: the program of every IR level and its runtime."""

    def __init__(self, program: Any, dump_dir: str, writes: Optional[List[bool]] = None) -> None:
        self.program = program
        self.dump_dir = dump_dir
        self.graph_written = False
        self.writes = writes or []  # per parameter: the program writes it (an in-place output)

    @property
    def dumps(self) -> List[Tuple[str, str]]:
        return list(self.program.dumps)


class JitFunction:
    def __init__(self, fn: Callable[..., Any], debug_options: Optional[Dict[str, Any]] = None,
                 pass_options: Optional[Dict[str, Any]] = None,
                 runtime_options: Optional[Dict[str, Any]] = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._def_locals = _defining_scope()
        self.debug_options = dict(debug_options or {})
        self.pass_options = dict(pass_options or {})
        self.runtime_options = dict(runtime_options or {})
        # Validate option names now, so a typo fails at the decorator.
        options.merged("debug", self.debug_options)
        options.merged("pass", self.pass_options)
        options.merged("runtime", self.runtime_options)
        self.sig = inspect.signature(fn)
        self.params: List[Tuple[str, Tensor]] = []
        for name, p in self.sig.parameters.items():
            ann = self._resolve(p.annotation)
            if not isinstance(ann, Tensor) or ann.is_traced:
                raise _core.UserError(
                    f"@pypto.jit {fn.__name__}: parameter '{name}' needs an annotation pypto.Tensor(shape, dtype)")
            for d in ann.shape:
                if isinstance(d, int) and not isinstance(d, bool) and d <= 0:
                    raise _core.UserError(
                        f"@pypto.jit {fn.__name__}: parameter '{name}' is annotated with shape {tuple(ann.shape)}, "
                        f"which has a dim {d}: dims must be positive"
                        + _format_loc((fn.__code__.co_filename, fn.__code__.co_firstlineno, 0, ""))
                        + "\nhint: use pypto.DYNAMIC for a dim whose size (0 included) comes from the call")
            self.params.append((name, ann))
        self._cache: Dict[Tuple[Any, ...], CompiledFunction] = {}
        self._has_static = any(d is STATIC for _, ann in self.params for d in ann.shape)
        # The numpy dtype each parameter takes as it is (bf16: its bit patterns as uint16);
        # anything else goes through _as_array, which converts torch tensors or explains.
        self._want = [np.dtype(np.uint16) if ann.dtype == DT_BF16 else np.dtype(to_numpy_dtype(ann.dtype))
                      for _, ann in self.params]
        self._rt_cache: Tuple[int, Dict[str, Any]] = (-1, {})
        self._dbg_cache: Tuple[int, Dict[str, Any]] = (-1, {})
        self.last: Optional[CompiledFunction] = None
        self.last_stats: Dict[str, Any] = {}

    def _resolve(self, ann: Any) -> Any:
        """Evaluates a string annotation (``from __future__ import annotations``) in the
        function's globals and closure."""
        if not isinstance(ann, str):
            return ann
        scope = dict(self.fn.__globals__)
        scope.update(self._def_locals)
        for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
        try:
            return eval(ann, scope)  # noqa: S307 - the user's own annotation
        except Exception as e:  # noqa: BLE001
            raise _core.UserError(f"@pypto.jit {self.fn.__name__}: cannot evaluate the annotation {ann!r}: {e}") \
                from None

    # --- compilation ---------------------------------------------------------------------------
    def _key(self, arrays: List[np.ndarray]) -> Tuple[Any, ...]:
        key: List[Any] = []
        for (name, ann), a in zip(self.params, arrays):
            for i, d in enumerate(ann.shape):
                if d is STATIC:
                    key.append(a.shape[i] if i < a.ndim else None)
        return tuple(key)

    def compile(self, *args: Any) -> CompiledFunction:
        """Trace and compile for these arguments (arrays or shapes); cached by STATIC dims."""
        arrays = [self._as_array(a, name, shapes_ok=True) for (name, _), a in zip(self.params, args)]
        key = self._key(arrays)
        if key not in self._cache:
            self._cache[key] = self._compile(arrays)
        return self._cache[key]

    def _compile(self, arrays: List[np.ndarray]) -> CompiledFunction:
        rec = _core.Recorder(self.fn.__name__)
        args: List[Tensor] = []
        for (name, ann), a in zip(self.params, arrays):
            shape: List[Any] = []
            for i, d in enumerate(ann.shape):
                if d is DYNAMIC:
                    shape.append(rec.add_dynamic_var(f"{name}_dim{i}"))
                elif d is STATIC:
                    if i >= a.ndim:
                        raise _core.UserError(f"@{self.fn.__name__}: parameter '{name}' expects rank "
                                              f"{len(ann.shape)}, got an array of shape {a.shape}")
                    shape.append(int(a.shape[i]))
                elif isinstance(d, int) and not isinstance(d, bool):
                    shape.append(d)
                else:
                    raise _core.UserError(f"@{self.fn.__name__}: parameter '{name}': shape entry {d!r} must be "
                                          "an int, pypto.DYNAMIC or pypto.STATIC")
            vid = rec.add_param(name, shape, ann.dtype, False, NO_LOC)
            args.append(Tensor(_rec=rec, _id=vid))
        with Tracing(rec):
            result = self.fn(*args)
            self._record_return(rec, result)
        if result is None and all(rec.value_kind(t._id) != "output" for t in args):
            raise _core.UserError(self._no_output_message())
        dbg = options.merged("debug", self.debug_options)
        pas = options.merged("pass", self.pass_options)
        dump_dir = os.path.join(dbg["dump_dir"], self.fn.__name__) if dbg["dump_dir"] else ""
        dump = dbg["dump_passes"]
        only = list(dump) if isinstance(dump, (list, tuple)) else []
        program = rec.compile(pas["machine"], dump_dir, bool(dump), only, bool(pas["reciprocal_division"]),
                              bool(dbg["verify_passes"]))
        return CompiledFunction(program, dump_dir, [rec.value_kind(t._id) == "output" for t in args])

    def _no_output_message(self) -> str:
        """The function returns nothing and writes no parameter: most often `out = expr` (which
        only rebinds a Python name) where `out[:] = expr` was meant. Point at that line."""
        import dis

        names = {name for name, _ in self.params}
        for ins in dis.get_instructions(self.fn):
            if ins.opname in ("STORE_FAST", "STORE_DEREF") and ins.argval in names:
                line = ins.positions.lineno if ins.positions else None
                import linecache
                text = linecache.getline(self.fn.__code__.co_filename, line or 0).strip()
                return (f"@{self.fn.__name__} returns nothing and writes no output: `{text}` "
                        f"only rebinds the Python name '{ins.argval}'"
                        f'\n  File "{self.fn.__code__.co_filename}", line {line}\n    {text}'
                        f"\nhint: write into the parameter with {ins.argval}[:] = ... (or pypto.assemble), "
                        "or return the result")
        return (f"@{self.fn.__name__} returns nothing and writes no output"
                "\nhint: return the result, or write into an output parameter with out[:] = ...")

    def _record_return(self, rec: Any, result: Any) -> None:
        if result is None:
            return
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        for o in outs:
            if not isinstance(o, Tensor) or not o.is_traced:
                raise _core.UserError(f"@{self.fn.__name__} returned {type(o).__name__}: return traced tensors")
            if rec.value_kind(o._id) == "temp":
                pass  # copied into a fresh output by the recorder
        rec.set_return([o._id for o in outs], user_loc())
        ann = self._resolve(self.sig.return_annotation)
        if ann is inspect.Signature.empty:
            return
        anns = list(ann) if isinstance(ann, (tuple, list)) else [ann]
        if len(anns) != len(outs):
            raise _core.UserError(f"@{self.fn.__name__} returns {len(outs)} tensors but its annotation declares "
                                  f"{len(anns)}")
        for i, (a, o) in enumerate(zip(anns, outs)):
            if not isinstance(a, Tensor):
                continue
            if a.dtype != o.dtype:
                raise _core.UserError(f"@{self.fn.__name__}: result {i} has dtype {o.dtype}, annotated {a.dtype}")
            if len(a.shape) != len(o.shape):
                raise _core.UserError(f"@{self.fn.__name__}: result {i} has shape {o.shape}, annotated {a.shape}")
            for da, do in zip(a.shape, o.shape):
                if isinstance(da, int) and isinstance(do, int) and da != do:
                    raise _core.UserError(f"@{self.fn.__name__}: result {i} has shape {o.shape}, annotated "
                                          f"{a.shape}")

    # --- calls ---------------------------------------------------------------------------------
    def _as_array(self, a: Any, name: str, shapes_ok: bool = False) -> np.ndarray:
        ann = dict(self.params)[name]
        framework, torch_dtype = "numpy array", ""
        if _is_torch(a):
            import torch
            t = a.detach().cpu()
            framework, torch_dtype = "torch tensor", str(t.dtype)
            if t.dtype == torch.bfloat16:
                # numpy has no bf16: its bit patterns go in as uint16, which only a bf16
                # parameter takes (int16 stays int16: no bits are reinterpreted).
                if ann.dtype != DT_BF16:
                    raise self._dtype_error(name, ann, "a torch tensor of dtype torch.bfloat16", tuple(t.shape))
                return t.view(torch.int16).numpy().view(np.uint16)
            a = t.numpy()
        if isinstance(a, np.ndarray):
            if ann.dtype == DT_BF16 and a.dtype == np.uint16:
                return a
            try:
                got = as_dtype(a.dtype)
            except TypeError:
                got = None
            if got is None or got != ann.dtype:
                what = ("bf16 bit patterns (numpy uint16)" if a.dtype == np.uint16
                        else f"a {framework} of dtype {torch_dtype or a.dtype}"
                        + (f" ({_core.dtype_name(got)})" if got is not None else ""))
                raise self._dtype_error(name, ann, what, a.shape)
            return a
        if shapes_ok and isinstance(a, (list, tuple)) and all(isinstance(x, int) for x in a):
            ann = dict(self.params)[name]
            return np.empty(a, dtype=to_numpy_dtype(ann.dtype))  # a shape, for compile()
        raise _core.UserError(f"@{self.fn.__name__}: argument '{name}' must be a numpy array or a torch tensor, got "
                              f"{type(a).__name__}")

    def _guard_outputs(self, compiled: CompiledFunction, arrays: List[np.ndarray]) -> List[np.ndarray]:
        """A parameter the program writes must be writable, and must not partly overlap another
        argument: an input that overlaps an output (but is not the very same array) is copied
        first, as numpy's ufuncs do; two overlapping outputs are refused."""
        names = [n for n, _ in self.params]
        for i, a in enumerate(arrays):
            if compiled.writes[i] and not a.flags.writeable:
                raise _core.UserError(f"@{self.fn.__name__}: parameter '{names[i]}' is written by the function (an "
                                      f"in-place output) but the array passed is read-only" + _format_loc(user_loc())
                                      + "\nhint: pass a writable array, e.g. numpy.array(x) (a copy)")
        out = list(arrays)
        for i, o in enumerate(arrays):
            if not compiled.writes[i]:
                continue
            for j, a in enumerate(arrays):
                if j == i or not np.may_share_memory(o, a):
                    continue
                same = (o.__array_interface__["data"][0] == a.__array_interface__["data"][0]
                        and o.shape == a.shape and o.strides == a.strides and o.dtype == a.dtype)
                if same:
                    continue  # x and out the very same array: an in-place update, which works
                if compiled.writes[j]:
                    raise _core.UserError(f"@{self.fn.__name__}: the outputs '{names[i]}' and '{names[j]}' overlap in "
                                          "memory" + _format_loc(user_loc()) + "\nhint: pass separate arrays")
                out[j] = np.array(a)  # read before any write: a copy, as numpy does
        return out

    def _dtype_error(self, name: str, ann: Any, what: str, shape: Any) -> Exception:
        want = _core.dtype_name(ann.dtype)
        if ann.dtype == DT_BF16:
            hint = "pass a torch.bfloat16 tensor, or bf16 bit patterns as numpy uint16: pypto.to_bf16(x)"
        else:
            hint = f"convert it, e.g. x.astype(numpy.{np.dtype(to_numpy_dtype(ann.dtype)).name})"
        return _core.UserError(f"@{self.fn.__name__}: parameter '{name}' expects dtype {want}, got {what} of shape "
                               f"{tuple(shape)}" + _format_loc(user_loc()) + f"\nhint: {hint}")

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.params):
            raise _core.UserError(f"@{self.fn.__name__} takes {len(self.params)} tensor arguments, got {len(args)}"
                                  + _format_loc(user_loc()))
        torch_in = False
        arrays = []
        for (name, _), a, want in zip(self.params, args, self._want):
            if type(a) is not np.ndarray or a.dtype != want:
                torch_in = torch_in or _is_torch(a)
                a = self._as_array(a, name)
            arrays.append(a)
        compiled = self._cache.get(self._key(arrays) if self._has_static else ())
        if compiled is None:
            compiled = self.compile(*arrays)
        self.last = compiled
        if compiled.writes and any(compiled.writes):
            arrays = self._guard_outputs(compiled, arrays)
        version, rt = self._rt_cache
        if version != options.version():
            rt = options.merged("runtime", self.runtime_options)
            self._rt_cache = (options.version(), rt)
        version, dbg = self._dbg_cache
        if version != options.version():
            dbg = options.merged("debug", self.debug_options)
            self._dbg_cache = (options.version(), dbg)
        trace = bool(dbg["swimlane"]) and bool(compiled.dump_dir)
        before = [a.copy() for a in arrays] if dbg["verify_passes"] else None
        try:
            outs, stats = compiled.program.run(arrays, rt["workers"], rt["sched_mode"], trace, rt["run_mode"],
                                               float(rt["timeout"]))
        except _core.UserError as e:  # name the caller's line too
            raise _core.UserError(str(e) + _format_loc(user_loc())) from None
        self.last_stats = stats
        if before is not None:
            from .tools import verify
            stats["verify"] = verify.verify(compiled.program, before, outs, arrays, rt["run_mode"])
        if compiled.dump_dir and (trace or (dbg["graph"] and not compiled.graph_written)):
            self._write_debug_outputs(compiled, stats, dbg, rt)
        if torch_in:
            import torch
            # uint16 results are bf16 bit patterns (no other pypto dtype maps to uint16).
            outs = [torch.from_numpy(o.view(np.int16)).view(torch.bfloat16) if o.dtype == np.uint16
                    else torch.from_numpy(o) for o in outs]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _write_debug_outputs(self, compiled: CompiledFunction, stats: Dict[str, Any], dbg: Dict[str, Any],
                             rt: Dict[str, Any]) -> None:
        """swimlane.json / swimlane.txt of this call and graph.html (once per compiled function)."""
        import json

        from .tools import swimlane
        if dbg["swimlane"] and "events" in stats:
            exec_json = json.loads(compiled.program.to_json("exec_graph"))
            swimlane.write(compiled.dump_dir, stats["events"], stats, exec_json, self.fn.__name__,
                           workers=int(rt["workers"]))
        if dbg["graph"] and not compiled.graph_written:
            from .tools import graph_html
            graph_html.write_program(compiled.program, compiled.dump_dir)
            compiled.graph_written = True



def jit(fn: Optional[Callable[..., Any]] = None, *, debug_options: Optional[Dict[str, Any]] = None,
        pass_options: Optional[Dict[str, Any]] = None, runtime_options: Optional[Dict[str, Any]] = None) -> Any:
    """Compile a tensor-level function: ``@pypto.jit`` or ``@pypto.jit(pass_options=...)``."""
    def wrap(f: Callable[..., Any]) -> JitFunction:
        return JitFunction(f, debug_options, pass_options, runtime_options)
    return wrap(fn) if fn is not None else wrap
