"""Functions, scopes and loops of ``pypto.language``: ``@pl.jit`` (and ``.incore`` / ``.inline``),
``@pl.function``, ``pl.at``, ``pl.range`` / ``pl.parallel`` / ``pl.yield_``, ``RunConfig``.

A ``@pl.jit`` entry is traced by the same tracer as ``@pypto.jit`` (it *is* a JitFunction), so
the program enters the one IR and pipeline. What this module adds is the language's placement
discipline, kept in a per-trace state: the entry body is the control plane (orchestration), and
operators run only inside an in-core scope (``with pl.at(level=pl.Level.CORE_GROUP)`` or a
``@pl.jit.incore`` function); an AIC scope runs cube and data-movement ops, an AIV scope vector
and data-movement ops. The state also holds the cross-core tile FIFOs (tpush / tpop).
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pypto._core as _core
from ...core import config, control
from ...core.error import PartialCodegenError
from ...core._tracing import _format_loc, maybe_recorder, user_frame, user_loc
from ..jit import CompiledFunction, JitFunction
from ...core.ops.core import view as _ops_view
from ...core.tensor import Tensor
from ...dist import context as _rank
from . import _host
from ._lowered import Program
from ._loops import (_parallel_loop, cluster, get_block_idx, get_block_num, parallel, pipeline,  # noqa: F401
                     program_id, range, spmd, unroll, yield_)
from ._trace import _Scope, _Scoped, _state, _Trace, current_trace
from ._types import INCORE_LEVELS, Direction, FunctionType, Level, Role, SplitMode, _Directed

__all__ = ["jit", "function", "at", "range", "parallel", "yield_", "RunConfig", "split", "cross_core_slot",
           "Optimization", "get_block_idx", "get_block_num", "program_id", "spmd", "cluster", "pipeline", "unroll",
           "const", "static_print", "static_assert", "func_attr"]

# The chip whose buffer sizes a RunConfig platform names (the checks of pl.load and the pipes).
_PLATFORM_MACHINES = {"a2a3": "a2a3", "a2a3sim": "a2a3", "a5": "a5", "a5sim": "a5"}


class RunConfig:
    """``pypto.runtime.RunConfig(platform=...)`` of the hw-native-sys runtime. Here every program
    runs on this CPU; ``platform`` ("a2a3sim", "a2a3", "a5sim", "a5") names the chip whose buffer
    capacities the tile checks use (pl.load, create_tile, the cross-core ring). Other fields are
    accepted and kept."""

    def __init__(self, platform: str = "", **fields: Any) -> None:
        self.platform = platform
        self.fields = dict(fields)
        for k, v in fields.items():
            setattr(self, k, v)

    @property
    def machine(self) -> Optional[str]:
        return _PLATFORM_MACHINES.get(self.platform)

    def __repr__(self) -> str:
        return f"RunConfig(platform={self.platform!r})"


class Optimization:
    """An entry of ``pl.at(..., optimizations=[...])``."""

    def __init__(self, kind: str, **args: Any) -> None:
        self.kind = kind
        self.args = args

    def __repr__(self) -> str:
        return f"pl.{self.kind}({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


def split(mode: SplitMode = SplitMode.UP_DOWN) -> Optimization:
    """``pl.split(mode)``: a mixed cube + vector scope whose vector half is split over the two
    AIV lanes. On the CPU the runtime already overlaps the cube and vector kernels of a scope
    by their data; the mode is recorded."""
    return Optimization("split", mode=mode)


def cross_core_slot(slot_num: int = 2) -> Optimization:
    """``pl.cross_core_slot(slot_num=N)``: the depth of the cross-core ring (checked against the
    consumer's buffer)."""
    if not isinstance(slot_num, int) or slot_num <= 0:
        raise _core.UserError(f"pl.cross_core_slot: slot_num must be a positive int, got {slot_num!r}"
                              + _format_loc(user_loc()))
    return Optimization("cross_core_slot", slot_num=slot_num)




def at(level: Level, role: Optional[Role] = None, *, optimizations: Optional[Sequence[Optimization]] = None,
       name_hint: str = "", **kwargs: Any) -> _Scoped:
    """``with pl.at(level=pl.Level.CORE_GROUP):`` marks the statements that run on chip. The
    other keywords of the hw-native-sys language (``deps``, ``no_dep_args``, ``dumps``,
    ``allow_early_resolve``, ``windowize``) are accepted: the runtime here derives dependencies
    from the data each task touches."""
    if not isinstance(level, Level):
        raise _core.UserError(f"pl.at: level must be a pl.Level, got {level!r}" + _format_loc(user_loc()))
    if role is not None and not isinstance(role, Role):
        raise _core.UserError(f"pl.at: role must be a pl.Role, got {role!r}" + _format_loc(user_loc()))
    slots = 2
    for o in optimizations or []:
        if not isinstance(o, Optimization):
            raise _core.UserError(f"pl.at: optimizations takes pl.split(...) and pl.cross_core_slot(...), got {o!r}"
                                  + _format_loc(user_loc()))
        if o.kind == "cross_core_slot":
            slots = o.args["slot_num"]
    return _Scoped(level, name_hint or level.value, slots)


# --- compile-time helpers --------------------------------------------------------------------


def const(value: Any, dtype: Any) -> Any:
    """``pl.const(3, pl.INT32)``: a constant of that dtype (the number itself here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _core.UserError(f"pl.const takes an int or float, got {value!r}" + _format_loc(user_loc()))
    return value


def static_print(*args: Any) -> None:
    """``pl.static_print(x, ...)``: prints what the values are while the program is traced."""
    print(*args)


def static_assert(condition: Any, msg: str = "") -> None:
    """``pl.static_assert(cond, "msg")``: a condition checked while the program is traced (a
    UserError naming the line when it is false or not known then)."""
    if isinstance(condition, _core.SymbolicScalar) and not condition.is_concrete():
        raise _core.UserError("pl.static_assert: the condition is known only when the program runs"
                              + _format_loc(user_loc()))
    if not condition:
        raise _core.UserError(f"pl.static_assert failed{': ' + msg if msg else ''}" + _format_loc(user_loc()))


def func_attr(attrs: Dict[str, Any]) -> None:
    """``pl.func_attr({...})``: function attributes for the chip's compiler; accepted (nothing here
    reads them)."""
    if not isinstance(attrs, dict):
        raise _core.UserError(f"pl.func_attr takes a dict, got {attrs!r}" + _format_loc(user_loc()))


# --- functions -----------------------------------------------------------------------------------


class LanguageFunction(JitFunction):
    """A ``@pl.jit`` entry: a JitFunction whose parameters take ``pl.Out`` / ``pl.InOut``
    directions, whose call takes ``config=RunConfig(...)``, and whose body is traced under the
    language's placement rules (the entry level: orchestration, or an in-core level for an
    in-core function called with arrays)."""

    def __init__(self, fn: Callable[..., Any], level: Optional[Level] = None,
                 def_locals: Optional[Dict[str, Any]] = None) -> None:
        self._preset_locals = dict(def_locals or {})  # read by JitFunction.__init__
        self.entry_level = level
        self.directions: Dict[str, Direction] = {}
        super().__init__(fn)
        for name, p in self.sig.parameters.items():
            raw = p.annotation
            if isinstance(raw, str):
                raw = super()._resolve(raw)
            if isinstance(raw, _Directed):
                self.directions[name] = raw.direction
        self._config = threading.local()

    def _resolve(self, ann: Any) -> Any:
        ann = super()._resolve(ann)
        ann = ann.inner if isinstance(ann, _Directed) else ann
        # The bare `a: pl.Tensor` (the language's usual form): shape and dtype from the argument,
        # one compiled program per shape and dtype passed, as pypto.Tensor() annotates it. The bare
        # `w: pld.DistributedTensor` likewise: a window whose shape and dtype the argument gives.
        if isinstance(ann, type) and getattr(ann, "_pld_window_class", False):
            window = Tensor()
            window._pld_window = []  # type: ignore[attr-defined]
            return window
        return Tensor() if ann is Tensor else ann

    def lower(self, *args: Any, config: Optional[RunConfig] = None, **kwargs: Any) -> Any:
        """``fn.lower(args...)``: traced and compiled for these arguments (arrays, torch tensors,
        or shapes), nothing run; a ``pypto.ir.Program`` (its ``functions``, ``as_python()``)."""
        self._config.value = config
        try:
            compiled = self.compile(*args, **kwargs)
        finally:
            self._config.value = None
        return Program(self.fn.__name__, compiled)

    def _machine(self) -> str:
        cfg = getattr(self._config, "value", None)
        return (cfg.machine if cfg is not None and cfg.machine else None) or self._options()["pass"]["machine"]

    # A call's RunConfig (platform, distributed config) picks the program: no fast path past it.
    _fast_path_ok = False

    def _compile_options(self, machine: Optional[str] = None,
                         groups: Optional[Dict[str, Dict[str, Any]]] = None) -> Tuple[Any, ...]:
        return super()._compile_options(machine, groups) + (self._machine(),)

    def _entry_args(self, args: List[Any]) -> List[Any]:
        # A pld.DistributedTensor parameter is every rank's copy of a window ([nranks, *shape]);
        # the function is handed this rank's.
        for i, p in enumerate(self.params):
            if p.ann is not None and getattr(p.ann, "_pld_window", None) is not None and isinstance(args[i], Tensor):
                args[i] = bind_window(args[i])
        trace = getattr(_state, "trace", None)
        if trace is not None:
            trace.entry_params = {id(a): p.name for p, a in zip(self.params, args) if isinstance(a, Tensor)}
        return args

    def __call__(self, *args: Any, config: Optional[RunConfig] = None, **kwargs: Any) -> Any:
        if "device" in kwargs or (_host.active() is not None and maybe_recorder() is None):
            return _host.dispatch(self, args, kwargs, kwargs.pop("device", None))
        if config is not None and not isinstance(config, RunConfig):
            raise _core.UserError(f"{self.fn.__name__}: config must be a pl RunConfig "
                                  f"(pypto.runtime.RunConfig), got {config!r}" + _format_loc(user_loc()))
        self._config.value = config
        try:
            return super().__call__(*args, **kwargs)
        finally:
            self._config.value = None

    def compile(self, *args: Any, config: Optional[RunConfig] = None, **kwargs: Any) -> CompiledFunction:
        self._config.value = config
        try:
            return super().compile(*args, **kwargs)
        finally:
            self._config.value = None

    def _compile(self, tparams: List[Any], arrays: List[Any], dtypes: List[Any], call: List[Any],
                 machine: Optional[str] = None) -> CompiledFunction:
        prev = getattr(_state, "trace", None)
        trace = _state.trace = _Trace(self.fn.__name__, self._machine())
        if self.entry_level is not None:
            trace.scopes.append(_Scope(self.entry_level, self.fn.__name__, 2))
        try:
            compiled = super()._compile(tparams, arrays, dtypes, call, machine)
            trace.finish()
        finally:
            _state.trace = prev
        self._check_directions(tparams, compiled, trace.written_via_callee)
        return compiled

    def _check_directions(self, tparams: List[Any], compiled: CompiledFunction, via_callee: set) -> None:
        where = f'\n  File "{self.fn.__code__.co_filename}", line {self.fn.__code__.co_firstlineno}'
        for p, written in zip(tparams, compiled.writes):
            if getattr(p.ann, "_pld_window", None) is not None:
                continue  # a window: the ranks read and write it
            if p.name not in self.directions and p.name in via_callee:
                continue  # no direction of its own; a callee's pl.Out / pl.InOut writes it
            d = self.directions.get(p.name, Direction.In)
            if d is Direction.Out and not written:
                raise PartialCodegenError(
                    f"@pl.jit {self.fn.__name__}: the pl.Out parameter '{p.name}' is never written, so the call would "
                    f"hand back whatever the buffer held" + where
                    + f"\nhint: write it with {p.name}[:] = ..., pl.store(tile, offsets, {p.name}) or pl.assemble "
                    f"(`{p.name} = ...` only rebinds the Python name)")
            if d is Direction.In and written:
                raise _core.UserError(
                    f"@pl.jit {self.fn.__name__}: parameter '{p.name}' is written but its direction is In (the "
                    "default)" + where + "\nhint: annotate it pl.Out[...] (written only) or pl.InOut[...] (read "
                    "and written)")


class Window:
    """A window parameter as a rank's function holds it: every rank's copy as one tensor of
    [nranks * rows, ...] (the [nranks, rows, ...] argument merged along its first two dims, the
    same dense memory), so rank r's copy is the view at row r * rows, a tensor in memory that
    loads, stores and the signals address like any other."""

    def __init__(self, merged: Tensor, shape: List[Any], rank: int, nranks: int) -> None:
        self.merged, self.shape, self.rank, self.nranks = merged, shape, rank, nranks

    def copy(self, rank: Any) -> Tensor:
        """`rank`'s copy of the window (an int or a symbolic rank)."""
        return _ops_view(self.merged, list(self.shape), [rank * self.shape[0]] + [0] * (len(self.shape) - 1))

    def cell(self, rank: Any, offsets: List[Any]) -> Tensor:
        """The element at `offsets` of `rank`'s copy, as a one-element tensor."""
        return _ops_view(self.merged, [1] * len(self.shape), [rank * self.shape[0] + offsets[0]] + list(offsets[1:]))


def bind_window(root: Tensor) -> Tensor:
    """This rank's copy of a window parameter (the [nranks, *shape] tensor), registered on the
    trace so the pld ops find every rank's copy from it."""
    ctx = _rank.require("a pld.DistributedTensor parameter")
    shape = list(root.shape[1:])
    if not shape or not isinstance(root.shape[0], int) or root.shape[0] != ctx.nranks:
        raise _core.UserError(f"a pld.DistributedTensor parameter holds every rank's copy, [{ctx.nranks}, ...]; got "
                              f"an array of shape {list(root.shape)}" + _format_loc(user_loc()))
    rec = root._traced_rec("pld.DistributedTensor")
    merged = Tensor(_rec=rec, _id=rec.reshape(root._id, [ctx.nranks * shape[0]] + shape[1:], user_loc(), True))
    w = Window(merged, shape, ctx.rank, ctx.nranks)
    own = w.copy(ctx.rank)
    current_trace("pld.DistributedTensor").windows[id(own)] = w
    return own


def _incore_level(type_: Optional[FunctionType], level: Optional[Level], role: Optional[Role]) -> Optional[Level]:
    """The in-core level of a function declared with these, or None for an orchestration."""
    if type_ in (FunctionType.AIC, FunctionType.AIV):
        return Level.AIC if type_ is FunctionType.AIC else Level.AIV
    if type_ is FunctionType.InCore:
        return level if level in INCORE_LEVELS else Level.CORE_GROUP
    if type_ is FunctionType.Orchestration or role is Role.Orchestrator:
        return None
    if level in INCORE_LEVELS or role is Role.SubWorker:
        return level if level in INCORE_LEVELS else Level.CORE_GROUP
    return None


def _config_machine() -> str:
    return str(config.merged("pass", {})["machine"])


class KernelFunction:
    """A function of the program: called while a @pl.jit entry is traced it runs in its own
    placement scope (an in-core level, or orchestration); called with arrays it is an entry."""

    def __init__(self, fn: Callable[..., Any], level: Optional[Level], inline: bool = False) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.level = level
        self.inline = inline
        self._traced: Optional[Callable[..., Any]] = None
        self._entry: Optional[LanguageFunction] = None
        # As declared with pl.function (a @pl.program lists them); None for @pl.jit.incore.
        self.func_type: Optional[FunctionType] = None
        self.declared_level: Optional[Level] = level
        self.role: Optional[Role] = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if "attrs" in kwargs and "attrs" not in inspect.signature(self.fn).parameters:
            # Upstream's printed calls carry the call's derived directions
            # (`self.kernel(x, attrs={"arg_directions": [...]})`): the runtime here derives them
            # from the data, so they are checked for form and dropped.
            attrs = kwargs.pop("attrs")
            if not isinstance(attrs, dict):
                raise _core.UserError(f"{self.fn.__name__}(..., attrs=...) takes a dict, got {attrs!r}"
                                      + _format_loc(user_loc()))
        if "device" in kwargs or (_host.active() is not None and maybe_recorder() is None):
            return _host.dispatch(self, args, kwargs, kwargs.pop("device", None))
        if maybe_recorder() is not None and getattr(_state, "trace", None) is None:
            # Called from a tensor-level @pypto.jit function (on its tensors or views): the
            # levels mix in one program. The call is its own placement scope and pipe state.
            if self.inline or self.level is None:
                raise _core.UserError(f"{self.fn.__name__}: a tensor-level function can call an in-core pl "
                                      "function (@pl.jit.incore, pl.function(type=InCore/AIC/AIV))"
                                      + _format_loc(user_loc()))
            machine = _config_machine()
            _state.trace = _Trace(self.fn.__name__, machine)
            try:
                result = self(*args, **kwargs)
                _state.trace.finish()
                return result
            finally:
                _state.trace = None
        if maybe_recorder() is not None and getattr(_state, "trace", None) is not None:
            if self._traced is None:  # runtime `if`s, as in the entry
                self._traced = control.with_runtime_branches(self.fn)
            if self.inline:
                _state.trace.note_callee_writes(self.fn, args, kwargs)
                return self._traced(*args, **kwargs)
            trace = _state.trace
            trace.note_callee_writes(self.fn, args, kwargs)
            outer = trace.incore()  # a pl.at(optimizations=...) around the call sets the ring depth
            if trace.spmd and self.level is not None and trace.spmd[-1] is not None:
                # `with pl.spmd(n): kernel(...)`: n blocks of the kernel, each with its block index.
                n, trace.spmd[-1] = trace.spmd[-1], None  # one dispatch per scope, as upstream lowers it
                result = None
                for _ in _parallel_loop(0, n, 1):
                    with _Scoped(self.level, self.fn.__name__, outer.slots if outer is not None else 2):
                        result = self._traced(*args, **kwargs)
                return result
            with _Scoped(self.level or Level.HOST, self.fn.__name__, outer.slots if outer is not None else 2):
                return self._traced(*args, **kwargs)
        if self.inline:
            raise _core.UserError(f"{self.fn.__name__} is a @pl.jit.inline helper: call it from a @pl.jit function"
                                  + _format_loc(user_loc()))
        if self._entry is None:
            self._entry = entry_of(self.fn, self.level, self)
        return self._entry(*args, **kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> CompiledFunction:
        if self._entry is None:
            self._entry = entry_of(self.fn, self.level, self)
        return self._entry.compile(*args, **kwargs)


class _Jit:
    """``@pl.jit`` (an entry: orchestration), ``@pl.jit.incore`` (``level=`` one of AIV, AIC,
    CORE_GROUP; default CORE_GROUP), ``@pl.jit.inline`` (spliced into the caller's scope),
    ``@pl.jit.host`` and ``@pl.jit.opaque`` (orchestrations)."""

    def __call__(self, fn: Optional[Callable[..., Any]] = None, **kwargs: Any) -> Any:
        def wrap(f: Callable[..., Any]) -> LanguageFunction:
            return LanguageFunction(f)
        return wrap(fn) if fn is not None else wrap

    def incore(self, fn: Optional[Callable[..., Any]] = None, *, level: Level = Level.CORE_GROUP) -> Any:
        if level not in INCORE_LEVELS:
            raise _core.UserError(f"@pl.jit.incore: level must be AIV, AIC or CORE_GROUP, got {level!r}"
                                  + _format_loc(user_loc()))

        def wrap(f: Callable[..., Any]) -> KernelFunction:
            return KernelFunction(f, level)
        return wrap(fn) if fn is not None else wrap

    def inline(self, fn: Callable[..., Any]) -> KernelFunction:
        return KernelFunction(fn, None, inline=True)

    def host(self, fn: Optional[Callable[..., Any]] = None, **kwargs: Any) -> Any:
        """``@pl.jit.host``: a host orchestrator (pypto.language._host): its calls with
        ``device=r`` run on rank r's process."""
        def wrap(f: Callable[..., Any]) -> _host.HostFunction:
            return _host.HostFunction(f)
        return wrap(fn) if fn is not None else wrap

    def opaque(self, fn: Optional[Callable[..., Any]] = None, **kwargs: Any) -> Any:
        return self(fn, **kwargs)


jit = _Jit()


def function(fn: Optional[Callable[..., Any]] = None, *, type: Optional[FunctionType] = None,  # noqa: A002
             level: Optional[Level] = None, role: Optional[Role] = None, **kwargs: Any) -> Any:
    """``@pl.function(type=pl.FunctionType.InCore)`` (or ``AIC`` / ``AIV`` / ``Orchestration``
    / ``Inline``), or ``@pl.function(level=..., role=...)``: a function of the program, called
    from an entry (or called with arrays, as an entry itself)."""
    def wrap(f: Callable[..., Any]) -> Any:
        made: Any
        if type is FunctionType.Inline:
            made = KernelFunction(f, None, inline=True)
        elif level in _HOST_LEVELS and role is Role.SubWorker:
            # Python the host runs for its orchestrator (a body of `...`: bound at prepare()).
            made = _host.HostCallback(f, _host.body_is_ellipsis(f))
        elif level in _HOST_LEVELS and role is Role.Orchestrator:
            # What @pl.jit.host specialises into: a host orchestrator (its calls with device=r run
            # on rank r). Above the host (POD, CLUSTER_*, GLOBAL) its ranks are processes of this
            # host too, for now (docs/distributed.md).
            made = _host.HostFunction(f)
        else:
            made = KernelFunction(f, _incore_level(type, level, role))
        # The scope it is defined in: with `from __future__ import annotations`, names only its
        # annotations use (a builder's `big_m`) are in neither its globals nor its closure.
        made._def_locals = _defining_locals()
        # As declared, for a @pl.program's `functions` (ProgramFunction).
        made.func_type = type if type is not None else (
            FunctionType.InCore if _incore_level(None, level, role) is not None
            else FunctionType.Orchestration if role is Role.Orchestrator else FunctionType.Opaque)
        made.declared_level, made.role = level, role
        return made
    return wrap(fn) if fn is not None else wrap


_HOST_LEVELS = (Level.HOST, Level.CLUSTER_0, Level.CLUSTER_1, Level.CLUSTER_2, Level.GLOBAL)


def _defining_locals() -> Dict[str, Any]:
    """Locals of the user's scope a function is defined in; for a method of a class body, the
    enclosing function's locals too (the class body's win)."""
    f = user_frame()
    if f is None or f.f_locals is f.f_globals:
        return {}
    scope = dict(f.f_locals)
    if "__qualname__" in scope and "__module__" in scope and f.f_back is not None \
            and f.f_back.f_locals is not f.f_back.f_globals:
        scope = {**f.f_back.f_locals, **scope}  # a class body inside a function
    return scope


def entry_of(fn: Callable[..., Any], level: Optional[Level], made_from: Any) -> "LanguageFunction":
    """The entry of a function made with pl.function (at its first call or compile), resolving
    its annotations in the scope `made_from` was defined in."""
    return LanguageFunction(fn, level, getattr(made_from, "_def_locals", None))
