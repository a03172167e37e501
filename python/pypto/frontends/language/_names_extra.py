"""The rest of hw-native-sys pypto's ``pypto.language.__all__``: manual task dependencies
(``pl.manual_scope``, ``pl.submit``, task ids, ``pl.array``), ``pl.while_`` / ``pl.cond``,
``pl.split_aiv`` and the lane ops, the gather / scatter-update ops, and upstream's type and enum
names.

The runtime here orders tasks by the data they touch (docs/ARCHITECTURE.md), so upstream's
manual-dependency tools run the same work with data-derived order: ``pl.submit(kernel, *args,
deps=[...])`` calls the in-core function exactly as a direct call does and returns its outputs
and a task id; ``deps`` are checked (task ids, arrays of them, ``None``) and the order they name
is implied by the data the tasks touch. A program whose manual deps are complete gives the same
result as upstream's; one that leaves a data race undeclared gives the sequential program's
result here (upstream's would depend on the schedule).

Names this system cannot honour are UserErrors at the user's line, saying what and why (a
chip-only memory reference, a chip instruction's bit format, a loop whose trip count only the
run decides).
"""

from __future__ import annotations

import ast
import builtins
import enum
import inspect
import linecache
import textwrap
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union
from typing import Tuple as _PyTuple

import pypto._core as _core

from ...core import ops as _core_ops
from ...core._tracing import _format_loc, user_frame, user_loc
from ...core.tensor import DYNAMIC, Tensor
from . import _ops as _pl
from ._program import KernelFunction, LanguageFunction, _Scoped, current_trace, jit
from ._types import Level, MemorySpace, SplitMode, TensorLayout, dynamic

from ._tasks import (TASK_ID, Array, ScopeMode, TaskId, TaskIdValue, _err, dump_tag,  # noqa: F401 - re-exported
                     manual_scope, no_dep, scope, spmd_submit, submit)

__all__ = [
    "AUTO",
    "MX_A_ZZ",
    "MX_B_NN",
    "RUNTIME",
    "TASK_ID",
    "Array",
    "AsyncEvent",
    "AsyncSession",
    "DynVar",
    "ForKind",
    "InlineFunction",
    "IntLike",
    "JITFunction",
    "Mem",
    "MemRef",
    "MemRefType",
    "PipeType",
    "PrefetchAsyncContext",
    "Ptr",
    "PtrType",
    "ScopeMode",
    "TaskId",
    "TaskIdValue",
    "TileView",
    "Tuple",
    "aic_gather",
    "aiv_shard",
    "cond",
    "create_l1",
    "dim",
    "dump_tag",
    "gather_row",
    "gatherb",
    "get_subblock_idx",
    "import_peer_buffer",
    "inline",
    "manual_scope",
    "matmul_mx",
    "matmul_mx_acc",
    "matmul_mx_bias",
    "mgather",
    "mscatter",
    "no_dep",
    "paged_gather",
    "random",
    "reserve_buffer",
    "scatter_update",
    "scope",
    "split_aiv",
    "spmd_submit",
    "submit",
    "while_",
]

_local = threading.local()  # the open while loops and AIV lane regions of this thread


# --- functions -------------------------------------------------------------------------------------

JITFunction = LanguageFunction  # what @pl.jit returns
InlineFunction = KernelFunction  # what @pl.inline / @pl.function(type=Inline) return
inline = jit.inline  # @pl.inline: spliced into the caller's scope


# --- types -------------------------------------------------------------------------------------------

IntLike = Union[int, Any]  # an int, or a scalar known when the program runs


class _TupleSpec:
    def __init__(self, types: _PyTuple[Any, ...]) -> None:
        self._types = types

    def __repr__(self) -> str:
        return f"pl.Tuple[{', '.join(repr(t) for t in self._types)}]"


class Tuple:
    """``pl.Tuple[T1, T2, ...]``: the annotation of a function returning several values
    (documentation only, as upstream's)."""

    def __new__(cls, *args: Any) -> Any:  # upstream's legacy pl.Tuple([T1, T2]) form
        types = tuple(args[0]) if len(args) == 1 and isinstance(args[0], list) else args
        return _TupleSpec(tuple(types))

    def __class_getitem__(cls, item: Any) -> _TupleSpec:
        return _TupleSpec(item if isinstance(item, tuple) else (item,))


class _DynVarMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return obj is DYNAMIC


class DynVar(metaclass=_DynVarMeta):
    """``pl.DynVar("M")``: a dim of run-time size in annotations, the same as
    ``pl.dynamic("M")`` (each parameter's dim is bound from its own argument)."""

    def __new__(cls, name: str) -> Any:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"DynVar name must be a valid identifier, got {name!r}")
        return dynamic(name)


class _RuntimeMarker:
    """``pl.RUNTIME``: upstream's marker for a scalar parameter left unspecialized at compile().
    Scalar parameters are compile-time values here (one compiled program per value), so the
    marker has no value to stand for: any use of it is a UserError."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise _err("pl.RUNTIME leaves a scalar parameter unspecialized in upstream's compile(); here scalar "
                   "parameters are compile-time values (one compiled program per value), so it has no value "
                   "to take part in an expression",
                   "pass the scalar's value (each value compiles once and is cached)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __floordiv__ = __rfloordiv__ = _refuse
    __truediv__ = __rtruediv__ = __mod__ = __rmod__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __neg__ = __index__ = __int__ = __float__ = __bool__ = _refuse

    def __eq__(self, other: Any) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return "pl.RUNTIME"


RUNTIME = _RuntimeMarker()


# --- while loops ---------------------------------------------------------------------------------------------


_MAX_WHILE_UNROLL = 100000


def _while_parts(frame: Any) -> _PyTuple[Any, ast.expr, str]:
    """The `for` statement at the frame's line: its target and the argument of the pl.cond that
    must open its body."""
    code, line = frame.f_code, frame.f_lineno
    loc = user_loc()
    try:
        lines, start = inspect.getsourcelines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, start - 1 if code.co_name != "<module>" else 0)
    except (OSError, TypeError, SyntaxError):
        raise _core.UserError("pl.while_: the loop's source is not available, so its pl.cond cannot be read"
                              + _format_loc(loc)) from None
    node = None
    for n in ast.walk(tree):
        if isinstance(n, ast.For) and n.lineno <= line <= n.iter.end_lineno:  # type: ignore[operator]
            if node is None or n.lineno > node.lineno:
                node = n
    if node is None:
        raise _core.UserError("pl.while_ is a loop: write `for (x, ...) in pl.while_(init_values=(...)):`"
                              + _format_loc(loc))
    first = node.body[0]
    call = first.value if isinstance(first, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, (ast.Attribute, ast.Name))
            and (call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id) == "cond"
            and len(call.args) == 1):
        raise _core.UserError("pl.while_: the first statement of the loop body must be pl.cond(condition)"
                              + _format_loc(loc))
    text = linecache.getline(code.co_filename, node.lineno).strip()
    return node.target, call.args[0], text.rstrip(":") or "pl.while_"


def _bind(target: ast.expr, value: Any, into: Dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        into[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        for t, v in zip(target.elts, value):
            _bind(t, v, into)


class _While:
    def __init__(self, values: List[Any], frame: Any, loc: Any) -> None:
        self.values, self.frame, self.loc = values, frame, loc
        self.target, self.cond_expr, self.text = _while_parts(frame)
        self.code = compile(ast.Expression(body=self.cond_expr), self.loc[0] or "<pl.while_>", "eval")

    def _condition(self, values: List[Any]) -> bool:
        scope_ = dict(self.frame.f_locals)
        _bind(self.target, tuple(values), scope_)
        c = eval(self.code, self.frame.f_globals, scope_)  # the loop's own pl.cond expression
        if isinstance(c, _core.SymbolicScalar):
            if not c.is_concrete():
                raise _core.UserError(
                    f"pl.while_: the condition of the loop `{self.text.strip()}` is known only when the program "
                    "runs; a run-time while loop is not supported here (a loop whose condition is known while "
                    "the program is traced is unrolled)" + _format_loc(self.loc)
                    + "\nhint: bound it: `for i in pl.range(max_trips):` with `if cond:` around the body")
            c = bool(int(c))
        if isinstance(c, Tensor):
            raise _core.UserError(f"pl.while_: the condition of the loop `{self.text.strip()}` is a tensor; a "
                                  "run-time while loop is not supported here" + _format_loc(self.loc))
        return bool(c)

    def __iter__(self) -> Iterator[Any]:
        trace = current_trace("while_")
        trace.loop_values.append(list(self.values))
        _while_stack().append(self)
        try:
            for _ in builtins.range(_MAX_WHILE_UNROLL):
                values = list(trace.loop_values[-1])
                if not self._condition(values):
                    return
                yield tuple(values)
            raise _core.UserError(f"pl.while_: the loop `{self.text.strip()}` ran {_MAX_WHILE_UNROLL} iterations "
                                  "while it was unrolled at trace time" + _format_loc(self.loc))
        finally:
            _while_stack().pop()
            trace.loop_values.pop()


def _while_stack() -> List[_While]:
    if not hasattr(_local, "whiles"):
        _local.whiles = []
    return _local.whiles


def while_(*, init_values: Optional[Sequence[Any]] = None) -> _While:
    """``for (x,) in pl.while_(init_values=(0,)): pl.cond(x < 10); x_out = pl.yield_(x + 1)``: a
    loop that runs while its condition (``pl.cond``, the first statement of the body) holds.
    When the condition is known while the program is traced (ints, compile-time values) the loop
    is unrolled; a condition known only when the program runs is a UserError naming the loop."""
    loc = user_loc()
    if init_values is None:
        raise _core.UserError("while_() requires init_values to be specified" + _format_loc(loc)
                              + "\nhint: add init_values=(...), even if it is a single counter")
    frame = user_frame()
    if frame is None:
        raise _core.UserError("pl.while_ is used in a @pl.jit / @pl.function body" + _format_loc(loc))
    return _While(list(init_values), frame, loc)


def cond(condition: Any) -> None:
    """``pl.cond(c)``: the condition of the enclosing ``pl.while_`` loop (its first statement). It
    was evaluated before the iteration started; a condition known only at run time is refused."""
    stack = _while_stack()
    if not stack:
        raise _err("pl.cond is the first statement of a pl.while_ loop body")
    if isinstance(condition, _core.SymbolicScalar) and not condition.is_concrete():
        raise _err(f"pl.cond: the condition of `{stack[-1].text.strip()}` is known only when the program runs; a "
                   "run-time while loop is not supported here")


# --- AIV lanes ------------------------------------------------------------------------------------------------


def _lanes() -> List[_PyTuple[int, SplitMode]]:
    if not hasattr(_local, "lanes"):
        _local.lanes = []
    return _local.lanes


class _SplitAiv:
    def __init__(self, n: int, mode: SplitMode) -> None:
        self.n, self.mode = n, mode

    def __iter__(self) -> Iterator[int]:
        trace = current_trace("split_aiv")
        outer = trace.incore()
        if outer is not None and outer.level is Level.AIC:
            raise _err("pl.split_aiv opens a region of the AIV lanes; it is in the AIC scope or function "
                       f"'{outer.name}'")
        if self.mode is not SplitMode.NONE:
            raise _err(f"pl.split_aiv(2, mode=pl.SplitMode.{self.mode.name}): the data-parallel modes give each AIV "
                       "lane half of every tile, a halving the chip's compiler derives from the region's dataflow; "
                       "it is not supported here",
                       "write the region with mode=pl.SplitMode.NONE and offsets derived from aiv_id, or use "
                       "pl.at(..., optimizations=[pl.split(mode)]) (the automatic split)")
        for lane in builtins.range(self.n):  # both lanes run the full body (task-parallel)
            _lanes().append((lane, self.mode))
            try:
                with _Scoped(Level.AIV, f"split_aiv lane {lane}", outer.slots if outer is not None else 2):
                    yield lane
            finally:
                _lanes().pop()


def split_aiv(n: int, *, mode: SplitMode) -> _SplitAiv:
    """``for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):`` both AIV lanes of the core run
    the full body, ``aiv_id`` (= ``pl.get_subblock_idx()``) their lane (0, 1): the body is
    unrolled once per lane, as vector work. The data-parallel modes (``UP_DOWN`` /
    ``LEFT_RIGHT``) are a UserError (see _SplitAiv)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"pl.split_aiv(n): n must be the integer 2, got {n!r}")
    if n != 2:
        raise ValueError(f"pl.split_aiv(n): n must be the integer 2 (the two AIV lanes), got {n}")
    if not isinstance(mode, SplitMode):
        raise ValueError(f"pl.split_aiv(mode=...): mode must be a pl.SplitMode, got {mode!r}")
    return _SplitAiv(n, mode)


def get_subblock_idx() -> int:
    """``pl.get_subblock_idx()``: the AIV lane (0 or 1) of the vector sub-block running the code,
    inside a ``pl.split_aiv`` region. Elsewhere the vector work of a core group is one task here
    (there is no second lane to tell apart), so it is a UserError."""
    lanes = _lanes()
    if not lanes:
        raise _err("pl.get_subblock_idx: the vector work of a core group runs as one task here (no AIV lane to "
                   "number) outside a pl.split_aiv region",
                   "write `for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):` and use aiv_id")
    return lanes[-1][0]


def _lane_crossing(op: str, x: Any) -> Any:
    if not _lanes():
        raise _err(f"pl.{op} names a tile crossing between the cube and the AIV lanes; it must appear inside a "
                   "`for aiv_id in pl.split_aiv(...)` region")
    if not isinstance(x, Tensor) or not x.is_traced:
        raise _err(f"pl.{op} takes a tile or tensor, got {x!r}")
    return x  # mode=NONE: the value crosses unchanged (no split axis)


def aiv_shard(x: Any) -> Any:
    """``pl.aiv_shard(x)``: a cube-produced value read on the vector lane of a ``pl.split_aiv``
    region; in a ``mode=NONE`` region the value crosses unchanged (upstream: the shape is kept)."""
    return _lane_crossing("aiv_shard", x)


def aic_gather(x: Any) -> Any:
    """``pl.aic_gather(x)``: a value of a ``pl.split_aiv`` region read on the cube lane after it;
    in a ``mode=NONE`` region it crosses unchanged (lane-uniform values, as upstream requires)."""
    return _lane_crossing("aic_gather", x)


# --- cross-core buffers -----------------------------------------------------------------------------------

AUTO = -1  # reserve_buffer(base=AUTO): the compiler picks the address


def reserve_buffer(*, name: str, size: int, base: int = AUTO) -> Any:
    """``pl.reserve_buffer(name=, size=, base=)``: refused: it reserves an address range of the
    core's local SRAM for a hand-written cross-core ring, a chip memory address that has no
    meaning here (the ring of pl.tpush / pl.tpop is the runtime's)."""
    raise _err(f"pl.reserve_buffer({name!r}): reserving an address range of the core's local SRAM for a hand-made "
               "cross-core buffer is chip-only (on-chip addresses do not exist here)",
               "let pl.aic_initialize_pipe / pl.aiv_initialize_pipe and pl.tpush_* / pl.tpop_* manage the ring")


def import_peer_buffer(*, name: str, peer_func: str) -> Any:
    """``pl.import_peer_buffer(name=, peer_func=)``: refused, as reserve_buffer (the peer's
    reserved SRAM address)."""
    raise _err(f"pl.import_peer_buffer({name!r}, peer_func={peer_func!r}): the address of a peer core's reserved "
               "SRAM buffer is chip-only (on-chip addresses do not exist here)",
               "let pl.aic_initialize_pipe / pl.aiv_initialize_pipe and pl.tpush_* / pl.tpop_* manage the ring")


# --- ops ---------------------------------------------------------------------------------------------------

dim = _pl.dim


def create_l1(shape: Sequence[Any], dtype: Any, transpose: bool = False) -> Tensor:
    """``pl.create_l1(shape, dtype, transpose=False)``: an on-chip (L1, ``Mat``) accumulator for
    ``pl.gather_row`` (a ``pl.create_tile(shape, dtype, target_memory=Mat)``). ``transpose`` names
    the chip's ZN layout of a transposed fill; the values are what the fills write."""
    return _pl.create_tile(list(shape), dtype, target_memory=MemorySpace.Mat)


def gather_row(acc: Tensor, src: Tensor, dst_offset: Sequence[Any], src_offset: Sequence[Any],
               shapes: Sequence[Any], transpose: bool = False, *,
               valid_shape: Optional[Sequence[Any]] = None) -> Tensor:
    """``acc = pl.gather_row(acc, src, dst_offset, src_offset, shapes, transpose=False)``: the window
    `shapes` of the global tensor `src` at `src_offset` (a run-time offset works) written into the
    tile `acc` at `dst_offset` (``transpose=True``: the window's transpose, so a row [1, c] lands
    as a column [c, 1]). Returns the updated accumulator (upstream: aliasing `acc`).
    ``valid_shape`` (how much of the window is transferred) must be static here."""
    if not isinstance(acc, Tensor) or not acc.is_traced or not _pl._is_tile(acc):
        raise _err(f"pl.gather_row: acc must be an on-chip tile (pl.create_l1 / pl.full / pl.create_tile), got {acc!r}")
    if not isinstance(src, Tensor) or not src.is_traced or _pl._is_tile(src):
        raise _err(f"pl.gather_row: src must be a global tensor, got {src!r}")
    window = list(shapes)
    if valid_shape is not None:
        if transpose:
            raise _err("pl.gather_row: valid_shape= is not supported together with transpose=True (as upstream)")
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in valid_shape):
            raise _err(f"pl.gather_row: valid_shape {list(valid_shape)!r} is known only when the program runs; here "
                       "the transferred part must be static")
        window = list(valid_shape)
    mem = getattr(acc, "_pl_mem", MemorySpace.Vec)
    row = _pl.load(src, list(src_offset), window, target_memory=mem if mem in (MemorySpace.Vec, MemorySpace.Mat)
                   else MemorySpace.Vec)
    if transpose:
        row = _pl.transpose_view(row)
    from . import tile as _tile
    return _tile.assemble(acc, row, list(dst_offset))


def paged_gather(src: Tensor, indices: Tensor, block_table: Tensor, block_size: int, size: int, max_indices: int, *,
                 space: MemorySpace = MemorySpace.Mat, col_off: int = 0, is_trans: bool = False,
                 is_b_matrix: bool = False) -> Tensor:
    """``pl.paged_gather(src, indices, block_table, block_size, size, max_indices)``: rows of the
    paged pool `src` picked by `indices` through `block_table` (row ``block_table[i // block_size]
    * block_size + i % block_size`` for each logical index i), ``[max_indices, size]`` (or its
    transpose with ``is_trans``) in `space`: one ``pl.gather_row`` per index."""
    if space not in (MemorySpace.Mat, MemorySpace.Vec):
        raise _err(f"pl.paged_gather: space must be pl.MemorySpace.Mat or Vec, got {space!r}")
    if is_trans and space is not MemorySpace.Mat:
        raise _err("pl.paged_gather: is_trans=True requires space=pl.MemorySpace.Mat (as upstream)")
    for name, v in (("block_size", block_size), ("size", size), ("max_indices", max_indices)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise _err(f"pl.paged_gather: {name} must be a positive int, got {v!r}")
    ishape = list(getattr(indices, "shape", []) or [])
    if not (len(ishape) == 1 or (len(ishape) == 2 and ishape[0] == 1)) or not isinstance(ishape[-1], int):
        raise _err(f"pl.paged_gather: indices must be a tensor of static shape [n] or [1, n], got {indices!r}")
    n = ishape[-1]
    if n > max_indices:
        raise _err(f"pl.paged_gather: {n} indices for max_indices={max_indices}")
    acc_shape = [size, max_indices] if is_trans else [max_indices, size]
    acc = _pl.full(acc_shape, src.dtype, 0) if space is MemorySpace.Vec else create_l1(acc_shape, src.dtype)
    for r in builtins.range(n):
        at = [r] if len(ishape) == 1 else [0, r]
        idx = _pl.read(indices, at)
        if len(block_table.shape) != 1:
            raise _err(f"pl.paged_gather: block_table must be 1-D here, got {list(block_table.shape)}")
        phys = _pl.read(block_table, [idx // block_size])
        row = phys * block_size + idx % block_size
        acc = gather_row(acc, src, [0, r] if is_trans else [r, 0], [row, col_off], [1, size], transpose=is_trans)
    return acc


def _scatter_update_args(args: Sequence[Any], kwargs: Dict[str, Any]) -> _PyTuple[Any, Any, Any]:
    dim_ = kwargs.pop("dim", None)
    index = kwargs.pop("index", None)
    src = kwargs.pop("src", None)
    if kwargs:
        raise _err(f"pl.scatter_update: unexpected keyword arguments {sorted(kwargs)}")
    rest = list(args)
    if rest and isinstance(rest[0], int) and not isinstance(rest[0], bool):
        if dim_ is not None:
            raise _err("pl.scatter_update: dim given twice")
        dim_ = rest.pop(0)
    if rest and index is None:
        index = rest.pop(0)
    if rest and src is None:
        src = rest.pop(0)
    if rest:
        raise _err("pl.scatter_update takes (input, dim, index, src) or (input, index, src, dim=-2)")
    if index is None or src is None:
        raise _err("pl.scatter_update: index and src are required")
    return (-2 if dim_ is None else dim_), index, src


def scatter_update(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``pl.scatter_update(input, dim, index, src)`` (or ``(input, index, src, dim=-2)``): a paged
    KV-cache row write, 2-D ``input [rows, d]``, ``src [b*s, d]``, ``index [b, s]``: row
    ``input[index[i, j]]`` receives row ``src[i*s + j]``; 4-D ``[blocks, block_size, 1, d]`` with
    ``src [b, s, 1, d]``: the rows of the flattened blocks. A global input is written in place
    and returned; a tile input gives an updated tile. An index outside the cache fails the run."""
    _pl._require("scatter_update", "vector")
    dim_, index, src = _scatter_update_args(args, dict(kwargs))
    for name, t in (("input", input), ("index", index), ("src", src)):
        if not isinstance(t, Tensor) or not t.is_traced:
            raise _err(f"pl.scatter_update: {name} must be a tile or tensor, got {t!r}")
    return _core_ops.scatter_update(input, dim_, index, src)


def random(key0: Any, key1: Any, counter0: Any, counter1: Any, counter2: Any, counter3: Any, shape: Sequence[Any],
           dtype: Any = None, rounds: int = 10) -> Any:
    """``pl.random(key0, key1, counter0..3, shape, dtype=pl.UINT32, rounds=10)``: refused: its
    values are the bit pattern of the chip's counter-based generator (``pto.trandom``), which is
    not reproduced here, and a program that depended on them would silently get other numbers."""
    raise _err("pl.random: the values are those of the chip's counter-based generator (pto.trandom, keyed by "
               "(key0, key1) and a 128-bit counter), whose bit pattern is not reproduced here",
               "generate the numbers on the host (numpy / torch) and pass them in as a tensor")


def _chip_only_op(name: str, what: str, hint: str = "") -> Any:
    def op(*args: Any, **kwargs: Any) -> Any:
        raise _err(f"pl.{name}: {what}", hint)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``pl.{name}``: refused here: {what}"
    return op


gatherb = _chip_only_op("gatherb", "gathers 32-byte blocks of a tile by byte offsets, the chip's byte layout of a "
                        "tile, which tiles here do not have (a tile is its values)",
                        "use pl.gather(x, dim, index) with element indices")
mgather = _chip_only_op("mgather", "a gather-load of a global tensor at indices held in a tile is not supported here "
                        "yet", "use pl.gather(x, dim, index) on a loaded tile, or pl.gather_row per row")
mscatter = _chip_only_op("mscatter", "a scatter-store of a tile into a global tensor at indices held in a tile is "
                         "not supported here yet", "use pl.scatter_update for row writes or pl.scatter on a tile")
_MX_WHAT = ("the MX block-scaled matmul (FP8E4M3FN data with FP8E8M0 block scales in the a5 cube's MX layouts) is "
            "not supported here yet")
matmul_mx = _chip_only_op("matmul_mx", _MX_WHAT, "dequantize with pl.cast and the scales, then pl.matmul")
matmul_mx_acc = _chip_only_op("matmul_mx_acc", _MX_WHAT, "dequantize with pl.cast and the scales, then pl.matmul_acc")
matmul_mx_bias = _chip_only_op("matmul_mx_bias", _MX_WHAT, "dequantize with pl.cast and the scales, then "
                               "pl.matmul_bias")


# --- enums and IR names ------------------------------------------------------------------------------------


class ForKind(enum.Enum):
    """Upstream's loop kinds: ``pl.range`` (Sequential), ``pl.parallel`` (Parallel),
    ``pl.unroll`` (Unroll), ``pl.pipeline`` (Pipeline)."""

    Sequential = 0
    Parallel = 1
    Unroll = 2
    Pipeline = 3


class PipeType(enum.IntEnum):
    """The chip's pipelines (upstream ``pl.PipeType``): names for sync ops; here the runtime orders
    tasks by their data."""

    MTE1 = 0
    MTE2 = 1
    MTE3 = 2
    M = 3
    V = 4
    S = 5
    FIX = 6
    ALL = 7


Mem = MemorySpace  # pl.Mem.Vec


class MemRefType:
    """Upstream's sentinel annotation of a bare MemRef variable in printed IR (names only)."""


class PtrType:
    """Upstream's type of an allocation identity token (``pl.tile.alloc`` results); named here,
    on-chip allocations are the compiler's."""

    _instance: Optional["PtrType"] = None

    @staticmethod
    def get() -> "PtrType":
        if PtrType._instance is None:
            PtrType._instance = PtrType()
        return PtrType._instance

    def __repr__(self) -> str:
        return "pl.PtrType"


Ptr = PtrType  # pl.Ptr, the annotation of an allocation token (as upstream's alias)


class MemRef:
    """``scratch = pl.MemRef()`` / ``pl.MemRef("name")`` / ``pl.MemRef(slots=2)[i]``: an on-chip
    allocation the program declares for its tiles (``pl.Tile[[64, 64], pl.FP32, scratch,
    pl.Mem.Vec]``). It only places tiles (upstream rejects two live tiles on one slot), so here,
    where the compiler places every tile, a declared allocation changes nothing and is accepted.
    The resolved form ``pl.MemRef(base, byte_offset, size)`` (an address of the chip's memory,
    printed IR) is refused."""

    def __init__(self, *args: Any, slots: int = 1, span: Any = None, **kwargs: Any) -> None:
        if len(args) > 1 or kwargs or (args and not isinstance(args[0], str)):
            raise _err("pl.MemRef(base, byte_offset, size): an address in the chip's on-chip memory is chip-only "
                       "(tiles here are placed by the compiler)",
                       "declare the allocation as pl.MemRef() / pl.MemRef(slots=N), or drop it")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots <= 0:
            raise _err(f"pl.MemRef: slots must be a positive int, got {slots!r}")
        self.name = args[0] if args else None
        self.slots = slots
        self.slot: Any = None

    def __getitem__(self, slot: Any) -> "MemRef":
        if isinstance(slot, int) and not isinstance(slot, bool) and not 0 <= slot < self.slots:
            raise _err(f"pl.MemRef: slot {slot} is out of range for {self.slots} slots")
        m = MemRef.__new__(MemRef)
        m.name, m.slots, m.slot = self.name, self.slots, slot
        return m

    def __repr__(self) -> str:
        return f"pl.MemRef({self.name!r}, slots={self.slots})" + (f"[{self.slot!r}]" if self.slot is not None else "")


class TileView:
    """``pl.TileView(...)``: the view fields of a tile annotation (valid shape, layouts, pad) in
    upstream's printed IR; accepted and kept (a tile here is its valid values)."""

    def __init__(self, valid_shape: Any = None, stride: Any = None, start_offset: Any = None,
                 blayout: Any = None, slayout: Any = None, fractal: Any = None, pad: Any = None,
                 **kwargs: Any) -> None:
        self.valid_shape, self.stride, self.start_offset = valid_shape, stride, start_offset
        self.blayout, self.slayout, self.fractal, self.pad = blayout, slayout, fractal, pad
        self.fields = kwargs

    def __repr__(self) -> str:
        return f"pl.TileView(valid_shape={self.valid_shape!r})"


class _ChipLayout:
    """A layout of the chip's MX matmul operands (``pl.MX_A_ZZ`` / ``pl.MX_B_NN``): named; a tensor
    in it is refused (``pl.TensorView(layout=...)`` takes ND / DN / NZ here)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"pl.{self.name}"


MX_A_ZZ = getattr(TensorLayout, "MX_A_ZZ", None) or _ChipLayout("MX_A_ZZ")
MX_B_NN = getattr(TensorLayout, "MX_B_NN", None) or _ChipLayout("MX_B_NN")


class _Handle:
    def __init__(self, expr: Any = None) -> None:
        self._expr = expr

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PrefetchAsyncContext(_Handle):
    """Handle of an asynchronous GM->L2 prefetch context (``pl.prefetch.make_context()``)."""


class AsyncEvent(_Handle):
    """Handle of an in-flight prefetch (``pl.prefetch.async_prefetch``)."""


class AsyncSession(_Handle):
    """Handle of a prefetch context's session (``pl.prefetch.session``)."""
