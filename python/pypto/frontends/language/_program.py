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

import ast
import builtins
import functools
import inspect
import linecache
import textwrap
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import pypto._core as _core
from ...core import config, control
from ...core.error import PartialCodegenError
from ...core._tracing import SourceLoc, _format_loc, maybe_recorder, user_frame, user_loc
from ..jit import CompiledFunction, JitFunction
from ...core.ops import loops as _ops_loops
from ...core.ops.core import assemble as _ops_assemble
from ...core.ops.core import view as _ops_view
from ...core.tensor import Tensor
from ...dist import context as _rank
from . import _host
from ._lowered import Program
from ._types import INCORE_LEVELS, Direction, FunctionType, Level, Role, SplitMode, _Directed, declared_directions

__all__ = ["jit", "function", "at", "range", "parallel", "yield_", "RunConfig", "split", "cross_core_slot",
           "Optimization", "get_block_idx", "get_block_num", "program_id", "spmd", "cluster", "pipeline", "unroll",
           "const", "static_print", "static_assert", "func_attr"]

_state = threading.local()

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


# --- the per-trace state -----------------------------------------------------------------------


class _Scope:
    def __init__(self, level: Level, name: str, slots: int) -> None:
        self.level, self.name, self.slots = level, name, slots


class _Trace:
    """Placement scopes and cross-core FIFOs of one pl.jit trace."""

    def __init__(self, fn_name: str, machine: str) -> None:
        self.fn_name = fn_name
        self.machine = machine
        self.scopes: List[_Scope] = []
        # (direction, pipe id) -> pushed (tile, loc) not yet popped
        self.fifos: Dict[Tuple[str, int], List[Tuple[Any, SourceLoc]]] = {}
        self.popped: Dict[int, Tuple[Any, str, SourceLoc]] = {}  # id(tile) -> (tile, free op, loc)
        self.loop_values: List[List[Any]] = []  # pl.range(init_values=...) state, innermost last
        self.blocks: List[Tuple[Any, Any]] = []  # (index, trip count) of the enclosing pl.parallel loops
        self.spmd: List[Any] = []  # block counts of the enclosing `with pl.spmd(n):` (dispatch form)
        # id() of the entry's parameter tensors -> name, and the names passed (or a view of them) to
        # a callee's pl.Out / pl.InOut parameter: written as declared there (upstream's
        # DeriveCallDirections promotes the caller's parameter the same way).
        self.entry_params: Dict[int, str] = {}
        self.written_via_callee: set = set()
        # id(this rank's copy of a window) -> (every rank's copy, this rank): pld's ops find a
        # peer's copy from the tensor the function was handed (pld.DistributedTensor).
        self.windows: Dict[int, Window] = {}

    def note_callee_writes(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any]) -> None:
        if not self.entry_params:
            return
        try:
            bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
        except TypeError:
            return
        directions = declared_directions(fn)
        for name, arg in bound.items():
            if directions.get(name) not in (Direction.Out, Direction.InOut):
                continue
            t = arg
            while isinstance(t, Tensor):
                if id(t) in self.entry_params:
                    self.written_via_callee.add(self.entry_params[id(t)])
                    break
                src = getattr(t, "_view_of", None)
                t = src[0] if src else getattr(t, "_reshape_of", None)

    def incore(self) -> Optional[_Scope]:
        for s in reversed(self.scopes):
            if s.level in INCORE_LEVELS:
                return s
        return None

    def finish(self) -> None:
        for (direction, pid), pending in self.fifos.items():
            if pending:
                _, loc = pending[0]
                pop = "tpop_from_aic" if direction == "aic->aiv" else "tpop_from_aiv"
                raise _core.UserError(f"pl.{_push_name(direction)}: a pushed tile (pipe {pid}) is never popped: no "
                                      f"pl.{pop} takes it" + _format_loc(loc)
                                      + "\nhint: every push needs a matching pop in the peer function")
        for _tile, free, loc in self.popped.values():
            raise _core.UserError(f"the tile popped here is never released with pl.{free}: on the chip its ring slot "
                                  "stays taken and the producer stalls once the ring fills" + _format_loc(loc)
                                  + f"\nhint: call pl.{free}(tile) once the tile has been used")


def _push_name(direction: str) -> str:
    return "tpush_to_aiv" if direction == "aic->aiv" else "tpush_to_aic"


def current_trace(op: str) -> _Trace:
    t = getattr(_state, "trace", None)
    if t is None or maybe_recorder() is None:
        raise _core.UserError(f"pl.{op} can only be used in a @pl.jit function while it is traced"
                              + _format_loc(user_loc()))
    return t


class _Scoped:
    """Pushes a placement scope for the duration of a `with` block."""

    def __init__(self, level: Level, name: str, slots: int = 2) -> None:
        self.scope = _Scope(level, name, slots)

    def __enter__(self) -> "_Scoped":
        current_trace("at").scopes.append(self.scope)
        return self

    def __exit__(self, *exc: object) -> None:
        current_trace("at").scopes.pop()


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


# --- loops ---------------------------------------------------------------------------------------


def _bounds(name: str, args: Tuple[Any, ...]) -> Tuple[Any, Any, Any]:
    if len(args) == 1:
        return 0, args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    if len(args) == 3:
        return args[0], args[1], args[2]
    raise _core.UserError(f"pl.{name}() takes 1 to 3 positional arguments, got {len(args)}" + _format_loc(user_loc()))


def _static(*xs: Any) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) for x in xs)


def range(*args: Any, init_values: Optional[Sequence[Any]] = None) -> Iterator[Any]:  # noqa: A001 - pl.range
    """``for i in pl.range(stop)`` / ``(start, stop[, step])``: a loop of the program.

    A body that carries no traced value from one iteration to the next is a runtime loop (traced
    once, ``i`` symbolic, bounds may be dynamic); a body that does (``t = pl.add(t, a)``, or
    ``init_values`` with ``pl.yield_``) is unrolled at trace time, which needs static bounds, as
    the hw-native-sys language unrolls its compile-time loops."""
    if _host.active() is not None and maybe_recorder() is None:  # a host orchestrator's loop: plain Python
        return iter(builtins.range(*_bounds("range", args)))
    loc = user_loc()
    start, stop, step = _bounds("range", args)
    if init_values is not None:
        if not _static(start, stop, step):
            return _memory_carried_loop(start, stop, step, list(init_values), loc)
        return _carried_loop(start, stop, step, list(init_values))
    carried = _ops_loops.CarriedValues(loc).before
    if carried and _static(start, stop, step):
        return iter(builtins.range(start, stop, step))
    # A scalar of the program carried by the body (`m = pl.max(m, n_b)`) lives in memory.
    return _ops_loops.loop(start, stop, step, name="pl_range", carry_scalars=True)


def pipeline(*args: Any, stage: int, init_values: Optional[Sequence[Any]] = None) -> Iterator[Any]:
    """``for i in pl.pipeline(n, stage=4)``: a loop the chip's compiler software-pipelines
    (`stage` copies of the body in flight, ping-pong buffers). Here the runtime overlaps the
    iterations' tasks by their data, so it is ``pl.range`` (same arguments)."""
    if isinstance(stage, bool) or not isinstance(stage, int) or stage <= 0:
        raise _core.UserError(f"pl.pipeline: stage must be a positive int, got {stage!r}" + _format_loc(user_loc()))
    return range(*args, init_values=init_values)


def unroll(*args: Any) -> Iterator[int]:
    """``for i in pl.unroll(4)``: a loop unrolled when the program is compiled (int bounds)."""
    start, stop, step = _bounds("unroll", args)
    if not _static(start, stop, step):
        raise _core.UserError(f"pl.unroll is unrolled at compile time and needs int bounds, got "
                              f"({start!r}, {stop!r}, {step!r})" + _format_loc(user_loc())
                              + "\nhint: pl.range runs a loop of run-time bounds")
    return iter(builtins.range(start, stop, step))


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


def parallel(*args: Any, init_values: Optional[Sequence[Any]] = None) -> Iterator[Any]:
    """``for i in pl.parallel(n)``: a runtime loop whose iterations are independent tasks (the
    runtime runs them in parallel as far as the data they touch allows)."""
    if init_values is not None:
        raise _core.UserError("pl.parallel: iterations are independent, so they carry no values (init_values)"
                              + _format_loc(user_loc()) + "\nhint: use pl.range(..., init_values=...)")
    start, stop, step = _bounds("parallel", args)
    return _parallel_loop(start, stop, step)


def _parallel_loop(start: Any, stop: Any, step: Any) -> Iterator[Any]:
    trace = current_trace("parallel")
    for i in _ops_loops.loop(start, stop, step, name="pl_parallel", parallel=True):
        trace.blocks.append((i, (stop - start + step - 1) // step))
        try:
            yield i
        finally:
            trace.blocks.pop()


def get_block_idx() -> Any:
    """The index of this task among the iterations of the innermost ``pl.parallel`` loop (its
    loop index); ``pl.program_id()`` is the same."""
    trace = current_trace("get_block_idx")
    if not trace.blocks:
        raise _core.UserError("pl.get_block_idx: not inside a pl.parallel loop" + _format_loc(user_loc())
                              + "\nhint: the tasks of a program are the iterations of pl.parallel(n)")
    return trace.blocks[-1][0]


def get_block_num() -> Any:
    """The number of iterations (tasks) of the innermost ``pl.parallel`` loop."""
    trace = current_trace("get_block_num")
    if not trace.blocks:
        raise _core.UserError("pl.get_block_num: not inside a pl.parallel loop" + _format_loc(user_loc()))
    return trace.blocks[-1][1]


program_id = get_block_idx


class _Spmd:
    """``pl.spmd(n)``: ``with pl.spmd(n): kernel(...)`` runs the in-core function it calls as `n`
    blocks (``pl.tile.get_block_idx()`` in [0, n) inside it); ``for i in pl.spmd(n):`` is a
    parallel loop whose body is in-core code with `i` its block index. Blocks are tasks of one
    launch here, run in parallel as far as the data they touch allows."""

    def __init__(self, core_num: Any, sync_start: bool, name_hint: str) -> None:
        self.core_num, self.sync_start, self.name_hint = core_num, sync_start, name_hint

    def __enter__(self) -> "_Spmd":
        current_trace("spmd").spmd.append(self.core_num)
        return self

    def __exit__(self, *exc: object) -> None:
        trace = current_trace("spmd")
        pending = trace.spmd.pop()
        if pending is not None and exc[0] is None:
            raise _core.UserError(f"`with pl.spmd({self.core_num!r}):` calls no in-core function: every block would "
                                  "run the same statements" + _format_loc(user_loc())
                                  + "\nhint: call a pl.function(type=pl.FunctionType.InCore) in it, or write "
                                  "`for i in pl.spmd(n):` with the block's work in the loop body")

    def __iter__(self) -> Iterator[Any]:
        for i in _parallel_loop(0, self.core_num, 1):
            with _Scoped(Level.CORE_GROUP, self.name_hint or "spmd"):
                yield i


def spmd(core_num: Any, *, sync_start: bool = False, name_hint: str = "", optimizations: Any = None,
         deps: Any = None, allow_early_resolve: bool = False, predicate: Any = None) -> _Spmd:
    """``pl.spmd(n)`` (see _Spmd). ``sync_start`` (all blocks start together on the chip) and the
    scheduling hints are accepted; ``deps`` / ``predicate`` are refused (no task ids here)."""
    if deps is not None or predicate is not None:
        raise _core.UserError("pl.spmd: deps= and predicate= are not supported here (the runtime orders blocks by "
                              "the data they touch)" + _format_loc(user_loc()))
    if isinstance(core_num, bool) or not isinstance(core_num, (int, _core.SymbolicScalar)) or (
            isinstance(core_num, int) and core_num <= 0):
        raise _core.UserError(f"pl.spmd: core_num must be a positive int (or a run-time count), got {core_num!r}"
                              + _format_loc(user_loc()))
    return _Spmd(core_num, sync_start, name_hint)


class _Cluster:
    def __enter__(self) -> "_Cluster":
        current_trace("cluster")
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def cluster(*, name_hint: str = "") -> _Cluster:
    """``with pl.cluster():`` groups the cube and vector kernels of a core group (the chip
    co-schedules them); here the runtime overlaps them by their data, so it only marks a region."""
    return _Cluster()


def _carried_loop(start: int, stop: int, step: int, values: List[Any]) -> Iterator[Any]:
    trace = current_trace("range")
    trace.loop_values.append(values)
    try:
        for i in builtins.range(start, stop, step):
            yield i, tuple(trace.loop_values[-1])
    finally:
        trace.loop_values.pop()


def _carry_slot(value: Any, loc: SourceLoc) -> Any:
    """Where a runtime loop keeps a carried value: a global tensor is its own slot (the loop
    writes it in place, as the chip's in-place iteration arguments); a tile goes into a tensor of
    its shape, which then stands for the tile (reads of it see the latest write, by the data
    dependencies the runtime keeps)."""
    from . import _ops

    if not isinstance(value, Tensor) or not value.is_traced:
        raise _core.UserError(f"pl.range(..., init_values=...) over run-time bounds carries tensors and tiles "
                              f"through memory; {value!r} is neither" + _format_loc(loc)
                              + "\nhint: give the loop int bounds (it is then unrolled at trace time)")
    shape = _ops._tile_shape(value)
    if not shape and value._rec.value_kind(value._id) != "temp":
        return value  # a tensor in memory: written in place
    if not shape:
        if not all(isinstance(d, int) for d in value.shape):
            raise _core.UserError("pl.range(..., init_values=...) over run-time bounds keeps a carried value in "
                                  f"memory of its shape; {value!r} has a shape known only at run time"
                                  + _format_loc(loc))
        shape = list(value.shape)
    slot = Tensor(_rec=value._rec, _id=value._rec.create_tensor(list(value.shape), value.dtype, "carry", loc))
    _ops._one_tile(lambda: _ops_assemble(value, [0] * len(shape), slot), [value])
    return _ops._mark(slot, shape, getattr(value, "_pl_mem", None) or _ops.MemorySpace.Vec)


def _memory_carried_loop(start: Any, stop: Any, step: Any, values: List[Any], loc: SourceLoc) -> Iterator[Any]:
    """``pl.range(n, init_values=...)`` with bounds known at run time: a runtime loop whose carried
    values live in memory (_carry_slot); each ``pl.yield_`` writes the next iteration's values
    into them, and after the loop they hold the last iteration's."""
    from . import _ops

    trace = current_trace("range")
    slots = [_carry_slot(v, loc) for v in values]
    for i in _ops_loops.loop(start, stop, step, name="pl_range"):
        trace.loop_values.append(list(slots))
        try:
            yield i, tuple(slots)
            for slot, new in zip(slots, trace.loop_values[-1]):
                if new is slot:
                    continue
                if not isinstance(new, Tensor) or not new.is_traced or new.dtype != slot.dtype or \
                        list(_ops._tile_shape(new) or new.shape) != list(_ops._tile_shape(slot) or slot.shape):
                    raise _core.UserError(
                        f"pl.yield_ gives {new!r} for a carried value of shape {list(slot.shape)} {slot.dtype}: a "
                        "loop over run-time bounds carries each value in memory of its initial shape and dtype"
                        + _format_loc(loc))
                _ops._one_tile(lambda: _ops_assemble(new, [0] * len(slot.shape), slot), [new])
        finally:
            trace.loop_values.pop()


def yield_(*values: Any) -> Any:
    """``acc = pl.yield_(new_acc)``: the values the next iteration of the enclosing
    ``pl.range(..., init_values=...)`` starts from (and the loop's results after it)."""
    trace = current_trace("yield_")
    if not trace.loop_values or _yield_of_if():
        # In an `if` / `else` body (`x = pl.yield_(1)` in each branch): the branch's value of x,
        # which the runtime branch hands on like any value assigned in both branches.
        if not values:
            raise _core.UserError("pl.yield_() gives no value" + _format_loc(user_loc()))
        return _yielded(values)
    state = trace.loop_values[-1]
    if len(values) != len(state):
        raise _core.UserError(f"pl.yield_ gives {len(values)} values for a loop with {len(state)} init_values"
                              + _format_loc(user_loc()))
    state[:] = list(values)
    return _yielded(values)


_YIELD_OF_IF: Dict[Tuple[str, int, int], bool] = {}


def _yield_of_if() -> bool:
    """Whether the pl.yield_ being called gives an `if`'s value rather than a loop's: its
    innermost enclosing `if` / `for` / `while` in the source is an `if` (upstream's parser decides
    the same way, from the statement's place)."""
    frame = user_frame()
    if frame is None:
        return False
    code, line = frame.f_code, frame.f_lineno
    key = (code.co_filename, code.co_firstlineno, line)
    if key not in _YIELD_OF_IF:
        found = False
        try:
            lines, start = inspect.getsourcelines(code)
            tree = ast.parse(textwrap.dedent("".join(lines)))
            ast.increment_lineno(tree, start - 1)
            best: Any = None
            for node in ast.walk(tree):
                if isinstance(node, (ast.For, ast.While, ast.If)) and node.lineno < line <= (node.end_lineno or 0):
                    if best is None or node.lineno > best.lineno:
                        best = node
            found = isinstance(best, ast.If)
        except (OSError, TypeError, SyntaxError):
            pass
        _YIELD_OF_IF[key] = found
    return _YIELD_OF_IF[key]


def _yielded(values: Tuple[Any, ...]) -> Any:
    """What ``pl.yield_`` returns: one value for ``x = pl.yield_(v)``, a tuple for several or
    for a tuple target (``(x,) = pl.yield_(v)``: upstream's parser reads the statement's form)."""
    if len(values) != 1:
        return tuple(values)
    loc = user_loc()
    text = linecache.getline(loc[0], loc[1]).strip() if loc[0] else ""
    try:
        stmt = ast.parse(text).body[0] if text else None
    except SyntaxError:  # a statement over several lines: the plain form
        stmt = None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List)):
        return tuple(values)
    return values[0]


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
            from ._program_class import _body_is_ellipsis
            made = _host.HostCallback(f, _body_is_ellipsis(f))
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
