"""`@pypto.jit` / `@pypto.frontend.jit()`: trace a Python function into the tensor graph,
compile it once per static signature, and run it on numpy arrays or torch tensors."""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core
from ..core import config, control, memory, ops
from ..core._tracing import NO_LOC, Tracing, _format_loc, function_scope, user_loc
from ..core._dtypes import _TORCH_DTYPES, DT_BF16, STORAGE_DTYPES, PackedDType, to_numpy_dtype
from ..core.tensor import DYNAMIC, STATIC, Tensor
from ..dist import context as rank_context
from ..dist import launcher
from .jit_arguments import CompiledFunction, JitArguments, _is_torch, _Param, _value_key  # noqa: F401
from ..whitebox.sim_report import SimReport
from ..whitebox import debug_output, graph_html, pass_verify, swimlane

_TORCH_NAME = {dt: name[len("torch."):] for name, dt in _TORCH_DTYPES.items()}  # pypto dtype -> torch's name

_log = logging.getLogger("pypto")
# pypto.sim.simulate: the NPU model the calls of this thread are simulated on (None: run as asked).
_sim_request = threading.local()
# pypto.tune (target "cpu"): write the swimlane of this thread's next call to this path.
_swimlane_request = threading.local()
# How many sim / swimlane requests are set in any thread: while none is, a warm call need not
# look at the thread-locals (two thread-local lookups cost more than the rest of its checks).
_requests_set = [0]
_requests_lock = threading.Lock()


def request_set(delta: int) -> None:
    """A sim or swimlane request was set (+1) or cleared (-1) in some thread."""
    with _requests_lock:
        _requests_set[0] += delta


@contextlib.contextmanager
def swimlane_to(path: str) -> Iterator[None]:
    """Within: every jit call of this thread writes its swimlane (Chrome trace JSON) to `path`."""
    before = getattr(_swimlane_request, "path", None)
    _swimlane_request.path = path
    request_set(1)
    try:
        yield
    finally:
        _swimlane_request.path = before
        request_set(-1)


launcher.swimlane_to = swimlane_to  # a rank records its calls' swimlanes this way (pypto.dist)
_said: set = set()


_compile_seconds = [0.0]  # tracing and compiling in this process (pypto_impl's compile monitor)


def compile_seconds() -> float:
    return _compile_seconds[0]


def _say_once(key: str, msg: str) -> None:
    """Logs `msg` once per process on the "pypto" logger (INFO; shown with logging configured)."""
    if key not in _said:
        _said.add(key)
        _log.info(msg)


def _defining_scope() -> Dict[str, Any]:
    """Locals of the scope the decorated function is defined in (string annotations may use
    them, and with ``from __future__ import annotations`` they are not in the closure)."""
    import sys

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package root
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f = f.f_back
    return dict(f.f_locals) if f is not None and f.f_locals is not f.f_globals else {}


_dynamo_state = threading.local()  # inside a dynamo-disabled launch (see JitFunction.__call__)


# Lists the @pypto.jit calls are appended to while a torch.npu.graph capture is open
# (pypto.npu_compat.NPUGraph replays them).
call_recorders: List[List[Any]] = []


def _reshapes_in_place(a: np.ndarray, targets: Sequence[Any]) -> bool:
    """Whether every reshape the function makes of the strided array `a` is a view of its memory
    (static shapes, numpy's rule, which the runtime's is: src/runtime/reshape_strides.h), so the
    call runs on `a` itself: a 4 GiB cache with its last dim cut is then not copied twice."""
    if not targets:
        return False
    for shape in targets:
        if not all(isinstance(d, int) for d in shape):
            return False
        v = a.view()
        try:
            v.shape = tuple(shape)
        except (AttributeError, ValueError):
            return False
    return True


class _FastCall(NamedTuple):
    """A warm call's run, and what must still hold for the next call to go straight to it."""
    version: int  # config.version()
    groups: List[Dict[str, Any]]  # the function's option dicts then
    tiles: Any  # ops._default_tiles() then
    compiled: CompiledFunction
    run_args: Tuple[Any, ...]  # workers, sched_mode, trace, run_mode, timeout
    unsigned64: bool  # a result is uint64 (comes back as numpy's 'Q')
    reshaped: Tuple[int, ...]  # parameters the program reshapes: a strided array takes the full path


class JitFunction(JitArguments):
    # Whether a warm call may skip to the run (_fast_call); front doors whose calls carry more
    # than the options (a RunConfig) say no.
    _fast_path_ok = True

    def __init__(self, fn: Callable[..., Any], debug_options: Optional[Dict[str, Any]] = None,
                 pass_options: Optional[Dict[str, Any]] = None,
                 runtime_options: Optional[Dict[str, Any]] = None,
                 host_options: Optional[Dict[str, Any]] = None, codegen_options: Optional[Dict[str, Any]] = None,
                 verify_options: Optional[Dict[str, Any]] = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._traced_fn: Optional[Callable[..., Any]] = None  # fn with runtime branches, made at the first trace
        # (a subclass may preset the scope: a function made long after it was defined)
        self._def_locals = {**_defining_scope(), **getattr(self, "_preset_locals", {})}
        # The caller's dicts, read at each call: PyPTO's examples fill runtime_options after the
        # decorator ran (the run mode chosen in main()).
        self.group_options: Dict[str, Dict[str, Any]] = {
            "debug": debug_options if debug_options is not None else {},
            "pass": pass_options if pass_options is not None else {},
            "runtime": runtime_options if runtime_options is not None else {},
            "host": host_options if host_options is not None else {},
            "codegen": codegen_options if codegen_options is not None else {},
            "verify": verify_options if verify_options is not None else {},
        }
        for group, opts in self.group_options.items():  # a typo fails at the decorator
            if not isinstance(opts, dict):
                raise _core.UserError(f"@pypto.jit {fn.__name__}: {group}_options must be a dict, got "
                                      f"{type(opts).__name__}")
            config.merged(group, opts)
        self.sig = inspect.signature(fn)
        self.params: List[_Param] = []
        for name, p in self.sig.parameters.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise _core.UserError(f"@pypto.jit {fn.__name__}: *{name} / **{name} parameters are not supported"
                                      "\nhint: name each parameter")
            ann = self._resolve(p.annotation)
            if isinstance(ann, Tensor) and not ann.is_traced:
                self._check_annotation(name, ann)
                kind = "tensor"
            elif ann is inspect.Parameter.empty:
                kind = "auto"
            else:
                kind = "value"
            self.params.append(_Param(name, kind, ann if kind == "tensor" else None, p.default))
        self._cache: Dict[Tuple[Any, ...], CompiledFunction] = {}
        self.tuned_tiles: Optional[Tuple[Any, Any]] = None  # (vec, cube) set by pypto.tune(apply=True)
        self._opt_cache: Tuple[int, Dict[str, Dict[str, Any]], Dict[str, Dict[str, Any]]] = (-1, {}, {})
        # The common call, checked cheaply: every parameter a tensor of fixed shape and dtype (no
        # STATIC or inferred dims), passed positionally as numpy arrays of that dtype.
        self._simple = all(p.kind == "tensor" and p.ann is not None and isinstance(p.ann.dtype, _core.DataType)
                           and p.ann.shape is not None and all(d is DYNAMIC or isinstance(d, int) for d in p.ann.shape)
                           for p in self.params)
        self._want = [np.dtype(np.uint16) if p.ann.dtype == DT_BF16 else np.dtype(to_numpy_dtype(p.ann.dtype))
                      for p in self.params] if self._simple else []
        self._simple_key: Optional[Tuple[Any, ...]] = None
        self._fast: Optional[_FastCall] = None  # what the next call may skip to (see _fast_call)
        self.last: Optional[CompiledFunction] = None
        self.last_stats: Dict[str, Any] = {}
        # A string return annotation (``from __future__ import annotations``) evaluated here, not
        # while tracing: there `pypto.Tensor(shape, dtype)` records a created tensor that nothing
        # uses and every call allocates and zeroes (a 64 MiB result cost 64 MiB more). One that
        # names what is not defined yet is evaluated at the trace, as before.
        self._return_ann: Any = self.sig.return_annotation
        if isinstance(self._return_ann, str):
            try:
                self._return_ann = self._resolve(self._return_ann)
            except _core.UserError:
                pass

    def _resolve(self, ann: Any) -> Any:
        """Evaluates a string annotation (``from __future__ import annotations``) in the
        function's globals and closure."""
        if not isinstance(ann, str):
            return ann
        scope = function_scope(self.fn, self._def_locals)
        try:
            return eval(ann, scope)  # noqa: S307 - the user's own annotation
        except Exception as e:  # noqa: BLE001
            raise _core.UserError(f"@pypto.jit {self.fn.__name__}: cannot evaluate the annotation {ann!r}: {e}") \
                from None

    # --- arguments -------------------------------------------------------------------------------
    def _compile_options(self, machine: Optional[str] = None,
                         groups: Optional[Dict[str, Dict[str, Any]]] = None) -> Tuple[Any, ...]:
        """The options a compiled program depends on (part of the cache key)."""
        pas = (groups or self._options())["pass"]
        # (a rank's program is specialised to its rank: ranks that are threads of one process share
        # this function's cache)
        return (machine or pas["machine"], bool(pas["reciprocal_division"]), rank_context.current())

    # --- compilation ---------------------------------------------------------------------------
    def compile(self, *args: Any, **kwargs: Any) -> CompiledFunction:
        """Trace and compile for these arguments (arrays, or shapes for tensor parameters);
        cached by STATIC dims, inferred shapes and dtypes, and compile-time arguments."""
        values = self._bind(args, kwargs)
        tparams, arrays, dtypes, call = self._split(values, shapes_ok=True)
        key = self._key(tparams, arrays, dtypes, values)
        if key not in self._cache:
            self._cache[key] = self._stamped(self._compile(tparams, arrays, dtypes, call), key, tparams, arrays,
                                             dtypes, values)
        return self._cache[key]

    def _stamped(self, compiled: CompiledFunction, key: Tuple[Any, ...], tparams: List[_Param],
                 arrays: List[np.ndarray], dtypes: List[Any], values: List[Any]) -> CompiledFunction:
        """`compiled` with its owner and argument signature (what run_compiled checks a call against)."""
        compiled.function = self
        compiled.signature = key[:-2]  # without the options: the program is fixed, only its arguments vary
        compiled.signature_text = self._describe(tparams, arrays, dtypes, values)
        return compiled

    def _describe(self, tparams: List[_Param], arrays: List[np.ndarray], dtypes: List[Any],
                  values: List[Any]) -> str:
        """The arguments as a message shows them: `a: FP32[128, 128], n=4`."""
        shapes = {p.name: f"{p.name}: {_core.dtype_name(dt) if isinstance(dt, _core.DataType) else dt}{list(a.shape)}"
                  for p, a, dt in zip(tparams, arrays, dtypes)}
        return ", ".join(shapes.get(p.name, f"{p.name}={v!r}") for p, v in zip(self.params, values))

    def run_compiled(self, compiled: CompiledFunction, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        """Runs `compiled` (a program this function compiled) on these arguments as a call runs it,
        writing the outputs passed in place, with no trace and no cache lookup (pypto.runtime's
        ChipWorker handles). Arguments another program would be compiled for are a UserError."""
        if compiled.function is not self or compiled.signature is None:
            raise _core.UserError(f"@{self.fn.__name__}: this compiled program is not one of its own")
        return self._call(args, kwargs, None, pinned=compiled)

    def _compile(self, tparams: List[_Param], arrays: List[np.ndarray], dtypes: List[Any],
                 call: List[Any], machine: Optional[str] = None) -> CompiledFunction:
        rec = _core.Recorder(self.fn.__name__)
        traced: Dict[str, Tensor] = {}
        for p, a, dt in zip(tparams, arrays, dtypes):
            dims = self._dims(p, a)
            if len(dims) != a.ndim:
                raise _core.UserError(f"@{self.fn.__name__}: parameter '{p.name}' is annotated with rank {len(dims)} "
                                      f"({p.ann!r}), got an array of shape {a.shape}" + _format_loc(user_loc()))
            shape: List[Any] = []
            for i, d in enumerate(dims):
                if d is DYNAMIC:
                    shape.append(rec.add_dynamic_var(f"{p.name}_dim{i}"))
                elif d is STATIC:
                    shape.append(int(a.shape[i]))
                else:
                    shape.append(d)
            if isinstance(dt, PackedDType):
                if dims and isinstance(dims[-1], int):  # the annotation gives the logical last dim
                    shape[-1] = self._packed_dim(p, dims[-1])
                vid = rec.add_param(p.name, shape, dt.storage, False, NO_LOC)
            else:
                vid = rec.add_param(p.name, shape, dt, False, NO_LOC)
            traced[p.name] = Tensor(_rec=rec, _id=vid)
        args = [traced.get(p.name, v) for p, v in zip(self.params, call)]
        tracing = Tracing(rec)
        with tracing:
            for p, dt in zip(tparams, dtypes):
                if isinstance(dt, PackedDType):  # the program sees the values, in logical units
                    args[self.params.index(p)] = ops.mx_codec.logical_values(traced[p.name], p.name, dt)
            args = self._entry_args(args)
            ops._apply_default_tiles()
            if self._traced_fn is None:  # `if` on symbolic values: runtime branches (pypto.control)
                self._traced_fn = control.with_runtime_branches(self.fn)
            with control.helpers_with_runtime_branches(self.fn):
                result = self._traced_fn(*args)
            plan, result_ids = self._record_return(rec, result, [t._id for t in traced.values()])
        if result is None and all(rec.value_kind(t._id) != "output" for t in traced.values()):
            raise _core.UserError(self._no_output_message())
        groups = self._options()
        dbg, pas = groups["debug"], groups["pass"]
        dump_dir = os.path.join(dbg["dump_dir"], self.fn.__name__) if dbg["dump_dir"] else ""
        dump = dbg["dump_passes"]
        only = list(dump) if isinstance(dump, (list, tuple)) else []
        program = rec.compile(machine or pas["machine"], dump_dir, bool(dump), only, bool(pas["reciprocal_division"]),
                              config.verify_passes(dbg, groups["verify"]))
        if dump_dir:
            import json
            os.makedirs(dump_dir, exist_ok=True)
            with open(os.path.join(dump_dir, "options.json"), "w") as f:
                json.dump(config.recorded(groups), f, indent=1, default=str)
        compiled = CompiledFunction(program, dump_dir, [rec.value_kind(t._id) == "output" for t in traced.values()])
        compiled.returns = plan
        compiled.returns_params = any(kind == "param" for kind, _ in plan)
        compiled.result_dtypes = [rec.value_dtype(v) for v in result_ids]
        compiled.reshaped = [t._reshaped for t in traced.values()]
        compiled.reshape_targets = [t._reshape_targets for t in traced.values()]
        compiled.probes = tracing.probes
        compiled.bound = list(tracing.bound)  # parameters the program added: their arrays per call
        return compiled

    def _options(self) -> Dict[str, Dict[str, Any]]:
        """Every option group, global values overridden by the function's own (cached until an
        option changes, globally or in the function's dicts)."""
        version, seen, merged = self._opt_cache
        if version != config.version() or any(seen[g] != o for g, o in self.group_options.items()):
            seen = copy.deepcopy(self.group_options)
            merged = {g: config.merged(g, o) for g, o in self.group_options.items()}
            self._opt_cache = (config.version(), seen, merged)
        return merged

    def _no_output_message(self) -> str:
        """The function returns nothing and writes no parameter: most often `out = expr` (which
        only rebinds a Python name) where `out[:] = expr` was meant. Point at that line."""
        import dis

        names = {p.name for p in self.params}
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

    def _record_return(self, rec: Any, result: Any,
                       param_ids: List[int]) -> Tuple[List[Tuple[str, int]], List[int]]:
        """Records the returned tensors; returns the plan of what a call returns (see
        CompiledFunction.returns) and the values of the program's results. A parameter the
        function writes and returns is returned as the caller's own argument, written in place."""
        if result is None:
            return [], []
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        plan: List[Tuple[str, int]] = []
        results: List[int] = []
        for o in outs:
            if not isinstance(o, Tensor) or not o.is_traced:
                raise _core.UserError(f"@{self.fn.__name__} returned {type(o).__name__}: return traced tensors")
            if o._id in param_ids and rec.value_kind(o._id) == "output":
                plan.append(("param", param_ids.index(o._id)))
            else:  # a computed value, a created tensor or an unwritten input: a fresh result
                plan.append(("result", len(results)))
                results.append(o._id)
        if results:
            rec.set_return(results, user_loc())
        ann = self._resolve(self._return_ann)
        if ann is inspect.Signature.empty:
            return plan, results
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
                raise _core.UserError(f"@{self.fn.__name__}: result {i} has shape {tuple(o.shape)}, "
                                      f"annotated {a.shape}")
            for da, do in zip(a.shape, o.shape):
                if isinstance(da, int) and isinstance(do, int) and da != do:
                    raise _core.UserError(f"@{self.fn.__name__}: result {i} has shape {tuple(o.shape)}, annotated "
                                          f"{a.shape}")
        return plan, results

    # --- calls ---------------------------------------------------------------------------------
    def _entry_args(self, args: List[Any]) -> List[Any]:
        """The arguments the traced function receives (its traced parameters, the rest as given);
        a front door that hands a parameter over in another form overrides it."""
        return args

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dynamo = sys.modules.get("torch._dynamo")
        if dynamo is not None and not getattr(_dynamo_state, "off", False):
            # Called from a torch.compile'd function (a kernel launch in its graph): dynamo must
            # not trace the launch itself (it would break the graph inside our argument handling).
            _dynamo_state.off = True
            try:
                launch = self.__dict__.get("_undynamo")
                if launch is None:
                    launch = self.__dict__["_undynamo"] = dynamo.disable(self._launch, recursive=True)
                return launch(*args, **kwargs)
            finally:
                _dynamo_state.off = False
        return self._launch(*args, **kwargs)

    def _launch(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast
        if (fast is not None and not kwargs and not call_recorders and len(args) == len(self._want)
                and rank_context._thread.ctx is None  # (not a rank thread: see in_thread_rank)
                and fast.version == config.version() and fast.groups == list(self.group_options.values())
                and ops._default_tiles() == fast.tiles
                and (not _requests_set[0] or (getattr(_sim_request, "machine", None) is None
                                              and getattr(_swimlane_request, "path", None) is None))
                and all(type(a) is np.ndarray and a.dtype == w for a, w in zip(args, self._want))
                and all(args[i].flags.c_contiguous for i in fast.reshaped)):
            return self._fast_call(fast, list(args))
        for calls in call_recorders:  # torch.npu.graph capture (pypto.npu_compat.NPUGraph)
            calls.append((self, args, kwargs))
        if self.tuned_tiles and ops._default_tiles() == (None, None):
            # Tile shapes pypto.tune(..., apply=True) chose: the defaults of a function that sets
            # none (an enclosing pypto.options scope still wins).
            saved = ops._default_tiles()
            ops._set_default_tiles(*self.tuned_tiles)
            try:
                return self._call(args, kwargs, getattr(_sim_request, "machine", None))
            finally:
                ops._restore_default_tiles(saved)
        return self._call(args, kwargs, getattr(_sim_request, "machine", None))

    def _fast_call(self, fast: "_FastCall", arrays: List[Any]) -> Any:
        """A call the last one showed needs nothing but the run: numpy arrays of the dtypes of the
        simple path's program, no debug output, verification, simulation, recording or staging,
        options unchanged since (the checks are in _launch). The C++ call is all that remains."""
        try:
            outs, stats = fast.compiled.program.run(arrays, *fast.run_args)
        except _core.UserError as e:  # name the caller's line too
            raise _core.UserError(str(e) + _format_loc(user_loc())) from None
        self.last, self.last_stats = fast.compiled, stats
        if fast.unsigned64:
            outs = [o.view(np.uint64) if o.dtype.char == "Q" else o for o in outs]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _call(self, args: Sequence[Any], kwargs: Dict[str, Any], sim_machine: Optional[str],
              pinned: Optional[CompiledFunction] = None) -> Any:
        """One call. With `sim_machine` (pypto.sim.simulate) or run_mode "sim", the program is
        compiled for that NPU model, run on the CPU for its outputs, and its schedule predicted
        (self.last_sim). With `pinned`, that program runs (see run_compiled)."""
        groups = self._options()
        rt, dbg = groups["runtime"], groups["debug"]
        if sim_machine is None and rt["run_mode"] == "sim" and pinned is None:
            sim_machine = groups["pass"]["machine"] if groups["pass"]["machine"] != "cpu" else "a2a3"
            _say_once("sim", "run_mode SIM: the outputs are computed on this CPU, the schedule is predicted by the "
                      f"NPU machine model ({sim_machine}); see docs/sim.md")
        tiles = ops._default_tiles()
        copts = self._compile_options(sim_machine, groups)
        compiled = None
        simple = False
        if pinned is not None:
            tparams, arrays, torch_in = self._pinned_arguments(pinned, args, kwargs)
            compiled = pinned
        elif (self._simple and not kwargs and len(args) == len(self._want) and self._simple_key is not None
                and all(type(a) is np.ndarray and a.dtype == w for a, w in zip(args, self._want))):
            torch_in, arrays, tparams = False, list(args), self.params
            compiled = self._cache.get(self._simple_key + (copts, tiles))
            simple = compiled is not None
        if compiled is None:
            values = self._bind(args, kwargs)
            tparams, arrays, dtypes, call = self._split(values)
            torch_in = any(_is_torch(v) for v in values)
            key = self._key(tparams, arrays, dtypes, values)[:-2] + (copts, tiles)
            compiled = self._cache.get(key)
            if compiled is None:
                t0 = time.perf_counter()
                compiled = self._cache[key] = self._stamped(self._compile(tparams, arrays, dtypes, call, sim_machine),
                                                            key, tparams, arrays, dtypes, values)
                _compile_seconds[0] += time.perf_counter() - t0
            if self._simple:
                self._simple_key = key[:-2]  # the same for every call: no STATIC dims, no values
        self.last = compiled
        shared = None
        if compiled.writes and any(compiled.writes):
            arrays, shared = self._guard_outputs(compiled, arrays, [p.name for p in tparams])
        staged: List[Tuple[int, np.ndarray]] = []  # (param, the caller's array) run on a dense copy
        counted: List[memory._Counted] = []
        for i, reshaped in enumerate(compiled.reshaped):
            if reshaped and not arrays[i].flags.c_contiguous and \
                    not _reshapes_in_place(arrays[i], compiled.reshape_targets[i]):
                # The function reshapes this parameter (a reshape is the same memory in another
                # shape): a strided array (a slice of a cache, ...) whose reshapes are no views of
                # it runs on a dense copy, copied back when the function writes it.
                staged.append((i, arrays[i]))
                arrays = list(arrays)
                arrays[i] = np.ascontiguousarray(arrays[i])
                counted.append(memory._Counted(arrays[i].nbytes))  # pypto's memory while the call runs
        swimlane_to = getattr(_swimlane_request, "path", None)
        cann_debug = bool(dbg["compile_debug_mode"]) or dbg["runtime_debug_mode"] == 1  # PyPTO's output/ folder
        trace = (bool(dbg["swimlane"]) and bool(compiled.dump_dir)) or sim_machine is not None or bool(swimlane_to) \
            or cann_debug
        run_mode = "cpu" if sim_machine is not None or (pinned is not None and rt["run_mode"] == "sim") \
            else rt["run_mode"]
        before = [a.copy() for a in arrays] if config.verify_passes(dbg, groups["verify"]) else None
        bound = [array() for array in compiled.bound]
        try:
            outs, stats = compiled.program.run(list(arrays) + bound if bound else arrays, rt["workers"],
                                               rt["sched_mode"], trace, run_mode, float(rt["timeout"]))
        except BaseException as e:
            for c in counted:
                c.release()
            if isinstance(e, _core.UserError):  # name the caller's line too
                raise _core.UserError(str(e) + _format_loc(user_loc())) from None
            raise
        self.last_stats = stats
        # 64-bit unsigned results come back as numpy's 'Q' (unsigned long long), which torch
        # refuses; np.uint64 is the same bytes.
        outs = [o.view(np.uint64) if o.dtype.char == "Q" else o for o in outs]
        for i, original in staged:
            if compiled.writes[i]:
                original[...] = arrays[i]
        for c in counted:
            c.release()
        if shared is not None and shared.private:
            shared.merge(self.fn.__name__, [p.name for p in tparams])
        if swimlane_to:
            import json

            exec_json = json.loads(compiled.program.to_json("exec_graph"))
            with open(swimlane_to, "w") as fh:
                json.dump(swimlane.build_trace(stats.get("events", []), stats, exec_json, self.fn.__name__,
                                               workers=int(rt["workers"])), fh)
        if cann_debug:
            debug_output.write(compiled.program, stats, self.fn.__name__, int(rt["workers"]))
        if sim_machine is not None:
            self.last_sim = SimReport.from_run(self.fn.__name__, compiled, stats, sim_machine, outs, torch_in)
            if rt["run_mode"] == "sim":
                where = self.last_sim.output_path = self.last_sim.write_outputs(compiled.dump_dir)
                _say_once("sim-output", f"run_mode SIM: the predicted swimlane of {self.fn.__name__} is {where} "
                          "(each call writes its own output/<function>_<pid>_<time>/ folder; fn.last_sim holds it)")
        if before is not None:
            pass_verify.verify_call(self.fn.__name__, compiled, before, outs, arrays, rt["run_mode"], dbg,
                                    groups["verify"], stats)
        if compiled.dump_dir and (trace or (dbg["graph"] and not compiled.graph_written)):
            self._write_debug_outputs(compiled, stats, dbg, rt)
        if torch_in:
            import torch
            # bf16 results come back as their uint16 bit patterns (numpy has no bf16), the MX
            # formats as bytes.
            outs = [torch.from_numpy(o.view(np.int16)).view(torch.bfloat16) if dt == DT_BF16
                    else torch.from_numpy(o).view(getattr(torch, _TORCH_NAME.get(dt, "uint8"))) if dt in STORAGE_DTYPES
                    else torch.from_numpy(o) for o, dt in zip(outs, compiled.result_dtypes)]
        if compiled.returns_params:
            tensor_args = [v for p, v in zip(self.params, self._bind(args, kwargs))
                           if p.kind == "tensor" or (p.kind == "auto" and self._is_array(v))]
            outs = [tensor_args[k] if kind == "param" else outs[k] for kind, k in compiled.returns]
        if (self._fast_path_ok and simple and sim_machine is None and not trace and before is None and not staged and shared is None
                and not bound and not compiled.returns_params and not compiled.dump_dir
                and not (compiled.writes and any(compiled.writes)) and not self.tuned_tiles):
            self._fast = None if rank_context.in_thread_rank() else _FastCall(
                config.version(), copy.deepcopy(list(self.group_options.values())), tiles, compiled,
                (rt["workers"], rt["sched_mode"], False, run_mode, float(rt["timeout"])),
                any(o.dtype == np.uint64 for o in outs), tuple(i for i, r in enumerate(compiled.reshaped) if r))
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _pinned_arguments(self, pinned: CompiledFunction, args: Sequence[Any],
                          kwargs: Dict[str, Any]) -> Tuple[List[_Param], List[np.ndarray], bool]:
        """(tensor params, their arrays, torch given) of a call of `pinned`, or a UserError naming the
        function, the arguments it was compiled for and those given."""
        given = ", ".join(f"{str(a.dtype).replace('torch.', '')}{list(a.shape)}" if self._is_array(a) else repr(a)
                          for a in list(args) + list(kwargs.values()))
        takes = (f"\n(the compiled program takes {pinned.signature_text}; called with {len(args) + len(kwargs)} "
                 f"argument{'' if len(args) + len(kwargs) == 1 else 's'}: {given})")
        try:
            values = self._bind(args, kwargs)
            tparams, arrays, dtypes, _ = self._split(values)
            key = self._key(tparams, arrays, dtypes, values)[:-2]
        except _core.UserError as e:
            raise _core.UserError(str(e) + takes) from None
        if key != pinned.signature:
            raise _core.UserError(
                f"@{self.fn.__name__}: the compiled program takes ({pinned.signature_text}), called with "
                f"({self._describe(tparams, arrays, dtypes, values)}): a compiled program runs the shapes, dtypes "
                "and compile-time values it was compiled for" + _format_loc(user_loc())
                + "\nhint: compile it for these arguments (fn.compile(...)) and run that program")
        return tparams, arrays, any(_is_torch(v) for v in values)

    def _write_debug_outputs(self, compiled: CompiledFunction, stats: Dict[str, Any], dbg: Dict[str, Any],
                             rt: Dict[str, Any]) -> None:
        """swimlane.json / swimlane.txt of this call and graph.html (once per compiled function)."""
        import json

        if dbg["swimlane"] and "events" in stats:
            exec_json = json.loads(compiled.program.to_json("exec_graph"))
            swimlane.write(compiled.dump_dir, stats["events"], stats, exec_json, self.fn.__name__,
                           workers=int(rt["workers"]))
        if dbg["graph"] and not compiled.graph_written:
            graph_html.write_program(compiled.program, compiled.dump_dir)
            compiled.graph_written = True



# Kinds of functions @pypto.jit compiles besides tensor-level ones, each (test, make): the tile
# level registers itself here (frontends/tile.py builds on this module).
_FUNCTION_KINDS: List[Tuple[Callable[[Any], bool], Callable[..., Any]]] = []


def register_function_kind(is_kind: Callable[[Any], bool], make: Callable[..., Any]) -> None:
    """`make(fn, tile_shape, jit_options)` compiles the functions `is_kind(fn)` accepts."""
    _FUNCTION_KINDS.append((is_kind, make))


def jit(fn: Optional[Callable[..., Any]] = None, *, debug_options: Optional[Dict[str, Any]] = None,
        pass_options: Optional[Dict[str, Any]] = None, runtime_options: Optional[Dict[str, Any]] = None,
        host_options: Optional[Dict[str, Any]] = None, codegen_options: Optional[Dict[str, Any]] = None,
        verify_options: Optional[Dict[str, Any]] = None, new_ir: bool = True,
        create_new_logical_tensor: bool = False, tile_shape: Optional[Sequence[int]] = None) -> Any:
    """Compile a tensor-level function: ``@pypto.jit`` or ``@pypto.jit(runtime_options=...)``;
    a function with ``pypto.Tile`` parameters is a tile function (pypto.tile), mapped over row
    tiles of ``tile_shape`` (rows, or rows and cols) or of a size chosen from the buffer.

    Takes PyPTO's option groups (see pypto.config); ``new_ir`` and ``create_new_logical_tensor``
    are accepted for compatibility (there is one IR here)."""
    def wrap(f: Callable[..., Any]) -> Any:
        for is_kind, make in _FUNCTION_KINDS:
            if is_kind(f):
                return make(f, tile_shape, {
                    "debug_options": debug_options, "pass_options": pass_options, "runtime_options": runtime_options,
                    "host_options": host_options, "codegen_options": codegen_options, "verify_options": verify_options})
        if tile_shape is not None:
            raise _core.UserError(f"@pypto.jit(tile_shape=...) on {f.__name__}: tile_shape is for tile functions "
                                  "(a parameter annotated pypto.Tile); use pypto.set_vec_tile_shapes in a "
                                  "tensor-level function")
        return JitFunction(f, debug_options, pass_options, runtime_options, host_options, codegen_options,
                           verify_options)
    return wrap(fn) if fn is not None else wrap
