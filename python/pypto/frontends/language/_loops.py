"""The language's loops and blocks: ``pl.range`` / ``pl.pipeline`` / ``pl.unroll`` /
``pl.parallel``, values a loop carries (``init_values`` with ``pl.yield_``: unrolled over int
bounds, through memory over bounds known at run time), ``pl.yield_`` of an ``if``, and the blocks
of ``pl.parallel`` / ``pl.spmd`` (``pl.get_block_idx``)."""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import textwrap
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pypto._core as _core
from ...core._tracing import SourceLoc, _format_loc, maybe_recorder, user_frame, user_loc
from ...core.ops import loops as _ops_loops
from ...core.ops.core import assemble as _ops_assemble
from ...core.tensor import Tensor
from . import _host, _ops
from ._trace import _Scoped, current_trace
from ._types import Level

__all__ = ["range", "pipeline", "unroll", "parallel", "get_block_idx", "get_block_num", "program_id", "spmd",
           "cluster", "yield_"]


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
