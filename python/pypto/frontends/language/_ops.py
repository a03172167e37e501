"""The operators of ``pypto.language``: data movement (load, store, assemble, create_tile), tile
and tensor arithmetic, row/column reductions and broadcasts, matmul (the cross-core pipe,
tpush / tpop / tfree: ``_pipe``).

Every operator is the tensor-level op of the same meaning recorded into the one IR, so the
compiler fuses and schedules tile programs as it does tensor programs. A *tile* is the value
``pl.load`` returns (a window of a global tensor, with its memory space and declared shape); an
op on tiles is recorded with the vec tile shape set to the tile, so each op is one tile of work.
"""

from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Sequence, Union

import pypto._core as _core
from ...core import ops as _ops
from .. import tile as _tile
from ...core._dtypes import DT_FP32, DT_INT8, DT_INT32, DT_UINT8, is_int_dtype
from ...core._tracing import _format_loc, current_recorder, user_loc
from ...core.control import bytes_of, sym_min
from ...core.tensor import Tensor
from ...core.tensor_factory import tensor as new_tensor
from ._trace import current_trace
from ._types import AtomicType, Level, MemorySpace, PadValue

Number = Union[int, float]

_CAPACITY = {MemorySpace.Vec: ("ub_bytes", "Vec (UB)"), MemorySpace.Mat: ("l1_bytes", "Mat (L1)"),
             MemorySpace.Left: ("l0a_bytes", "Left (L0A)"), MemorySpace.Right: ("l0b_bytes", "Right (L0B)"),
             MemorySpace.Acc: ("l0c_bytes", "Acc (L0C)")}


def _loc() -> str:
    return _format_loc(user_loc())


def _require(op: str, kind: str) -> Level:
    """The in-core level the op is recorded in; a UserError when it is misplaced. `kind`:
    "vector" (AIV or core group), "cube" (AIC or core group), "move" (any in-core level)."""
    trace = current_trace(op)
    scope = trace.incore()
    if scope is None:
        where = f"the orchestration body of {trace.scopes[-1].name}" if trace.scopes else \
            f"the @pl.jit entry {trace.fn_name}, which is orchestration (the control plane)"
        raise _core.UserError(
            f"misplaced op pl.{op} in {where}: operators run on chip" + _loc()
            + "\nhint: put it inside `with pl.at(level=pl.Level.CORE_GROUP):` or in a @pl.jit.incore function")
    if kind == "cube" and scope.level is Level.AIV:
        raise _core.UserError(f"pl.{op} is a cube instruction, in the AIV function or scope '{scope.name}'" + _loc()
                              + "\nhint: run it in an AIC (or CORE_GROUP) function and hand the tile over with "
                              "pl.tpush_to_aiv / pl.tpop_from_aic")
    if kind == "vector" and scope.level is Level.AIC:
        raise _core.UserError(f"pl.{op} is a vector instruction, in the AIC function or scope '{scope.name}'" + _loc()
                              + "\nhint: run it in an AIV (or CORE_GROUP) function; pass the tile with "
                              "pl.tpush_to_aiv / pl.tpop_from_aic")
    return scope.level


def _tile_shape(x: Any) -> List[int]:
    """The declared shape of tile `x` (what pl.load gave it), or [] for a tensor."""
    return list(getattr(x, "_pl_shape", None) or []) if isinstance(x, Tensor) else []


def _is_tile(x: Any) -> bool:
    return bool(_tile_shape(x))


def _mark(t: Tensor, shape: Sequence[int], mem: MemorySpace) -> Tensor:
    t._pl_shape = [int(d) for d in shape]  # type: ignore[attr-defined]
    t._pl_mem = mem  # type: ignore[attr-defined]
    return t


def _static_dims(shape: Sequence[Any], op: str, what: str) -> List[int]:
    dims: List[int] = []
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise _core.UserError(f"pl.{op}: the {what} {list(shape)!r} must be positive ints (a tile's shape is "
                                  "fixed when the kernel is compiled)" + _loc()
                                  + "\nhint: give the tile's full shape and the dynamic part as valid_shape=")
        dims.append(d)
    return dims


def _check_fits(op: str, shape: Sequence[int], dtype: Any, mem: MemorySpace) -> None:
    if mem is MemorySpace.DDR:
        return
    machine = current_trace(op).machine
    key, name = _CAPACITY[mem]
    cap = int(_core.machine_info(machine)[key])
    nbytes = math.prod(shape) * bytes_of(dtype)
    if nbytes > cap:
        raise _core.UserError(f"pl.{op}: a {list(shape)} {_core.dtype_name(dtype)} tile is {nbytes} bytes, more "
                              f"than the {name} buffer of {cap} bytes on {machine}" + _loc()
                              + "\nhint: load a smaller tile and loop over the tensor (pl.range)")


def _one_tile(fn: Callable[[], Any], operands: Sequence[Any], mem: MemorySpace = MemorySpace.Vec) -> Any:
    """Records `fn()` with the vec tile shape set to the tiles among `operands` (one tile of
    work); the result is a tile of that shape when an operand is one."""
    tiles = [x for x in operands if _is_tile(x)]
    if not tiles:
        return fn()
    rank = max(len(_tile_shape(t)) for t in tiles)
    shape = [max(_tile_shape(t)[d] for t in tiles if len(_tile_shape(t)) == rank) for d in range(rank)]
    rec = current_recorder("tile op")
    saved = list(rec.vec_tile_shapes())
    rec.set_vec_tile_shapes(shape, user_loc())
    try:
        out = fn()
    finally:
        if saved:
            rec.set_vec_tile_shapes(saved, user_loc())
        else:
            rec.clear_vec_tile_shapes()
    if isinstance(out, Tensor) and out.is_traced:  # a valid extent's tile dim is the tile's
        _mark(out, [d if isinstance(d, int) else shape[i] if i < len(shape) else 1 for i, d in enumerate(out.shape)],
              mem)
    return out


# --- data movement ---------------------------------------------------------------------------------


def _window_check(op: str, tensor: Tensor, offsets: Sequence[Any], extent: Sequence[Any], what: str) -> None:
    if len(offsets) != len(tensor.shape) or len(extent) != len(tensor.shape):
        raise _core.UserError(f"pl.{op}: the tensor is {len(tensor.shape)}-D {list(tensor.shape)}, the offsets "
                              f"{list(offsets)} and {what} {list(extent)} must have one entry per dim" + _loc())
    for d, (o, e, n) in enumerate(zip(offsets, extent, tensor.shape)):
        if isinstance(o, int) and isinstance(e, int) and isinstance(n, int) and (o < 0 or o + e > n):
            raise _core.UserError(f"pl.{op}: the window at offsets {list(offsets)} with {what} {list(extent)} is out "
                                  f"of bounds of the tensor {list(tensor.shape)} in dim {d} ({o} + {e} > {n})"
                                  + _loc() + "\nhint: give the part that exists as valid_shape= (or clamp=True)")


def load(tensor: Tensor, offsets: Sequence[Any], shapes: Sequence[Any], valid_shape: Optional[Sequence[Any]] = None,
         target_memory: MemorySpace = MemorySpace.Vec, clamp: bool = False) -> Tensor:
    """``pl.load(t, offsets, shapes[, valid_shape][, target_memory])``: the window of global
    tensor `t` at `offsets` as a tile of shape `shapes` in `target_memory`. `valid_shape` (or
    `clamp=True`: the part inside `t`) is the region that holds data; ops on the tile compute
    that region."""
    level = _require("load", "move")
    if not isinstance(tensor, Tensor) or not tensor.is_traced:
        raise _core.UserError(f"pl.load: the source must be a tensor of the function, got {type(tensor).__name__}"
                              + _loc())
    if not isinstance(target_memory, MemorySpace):
        raise _core.UserError(f"pl.load: target_memory must be a pl.MemorySpace, got {target_memory!r}" + _loc())
    if level is Level.AIV and target_memory in (MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right,
                                                MemorySpace.Acc):
        raise _core.UserError(f"pl.load into {target_memory.name} (a cube buffer) in an AIV function" + _loc())
    if level is Level.AIC and target_memory is MemorySpace.Vec:
        raise _core.UserError("pl.load into Vec (the vector unit's buffer) in an AIC function" + _loc())
    shape = _static_dims(shapes, "load", "tile shape")
    offsets = list(offsets)
    if clamp:
        valid_shape = [sym_min(s, n - o) if not (isinstance(n, int) and isinstance(o, int)) else max(0, min(s, n - o))
                       for s, n, o in zip(shape, tensor.shape, offsets)]
    valid = list(valid_shape) if valid_shape is not None else list(shape)
    _window_check("load", tensor, offsets, valid, "valid shape" if valid_shape is not None else "shape")
    _check_fits("load", shape, tensor.dtype, target_memory)
    # The tile has its declared shape (a window that may run past the tensor is the call's error,
    # checked when it runs); only valid_shape / clamp=True make part of it hold no data.
    t = _ops.view(tensor, shape, offsets, valid_shape=valid)
    return _mark(t, shape, target_memory)


def store(tile: Tensor, offsets: Sequence[Any], output_tensor: Tensor, shapes: Optional[Sequence[Any]] = None, *,
          atomic: AtomicType = AtomicType.None_) -> Tensor:
    """``pl.store(tile, offsets, out)``: writes the tile's valid region into global tensor `out`
    at `offsets`; ``atomic=pl.AtomicType.Add`` adds it to what is there. Returns `out`."""
    _require("store", "move")
    return _write("store", tile, offsets, output_tensor, atomic)


def assemble(target: Tensor, source: Tensor, offset: Sequence[Any], *, atomic: AtomicType = AtomicType.None_) -> Tensor:
    """``pl.assemble(target, source, offset)``: `source` written into `target` at `offset`
    (``target[r0:r0+R, c0:c0+C] = source``). Returns `target`."""
    return _write("assemble", source, offset, target, atomic)


def _write(op: str, tile: Tensor, offsets: Sequence[Any], out: Tensor, atomic: AtomicType) -> Tensor:
    if not isinstance(out, Tensor) or not out.is_traced:
        raise _core.UserError(f"pl.{op}: the destination must be a tensor of the function, got {type(out).__name__}"
                              + _loc())
    if not isinstance(tile, Tensor) or not tile.is_traced:
        raise _core.UserError(f"pl.{op}: the source must be a tile or tensor, got {type(tile).__name__}" + _loc())
    offsets = list(offsets)
    _window_check(op, out, offsets, list(tile.shape), "tile of shape")
    if atomic is AtomicType.Add:
        current = _ops.view(out, list(tile.shape), offsets)
        tile = _one_tile(lambda: _ops.add(current, tile), [tile])
    elif atomic is not AtomicType.None_:
        raise _core.UserError(f"pl.{op}: atomic must be a pl.AtomicType, got {atomic!r}" + _loc())
    # With the tile's shape in force, so the write fuses into the kernel that computes the tile.
    _one_tile(lambda: _ops.assemble(tile, offsets, out), [tile])
    return out


def create_tile(shape: Sequence[Any], dtype: Any = DT_FP32, target_memory: MemorySpace = MemorySpace.Vec,
                **kwargs: Any) -> Tensor:
    """``pl.create_tile(shape, dtype=, target_memory=)``: a tile of zeros (the scratch tiles the
    language's reductions take are accepted and not needed here)."""
    _require("create_tile", "move")
    dims = _static_dims(shape, "create_tile", "shape")
    _check_fits("create_tile", dims, dtype, target_memory)
    return _mark(_ops.creation.full_value(dims, 0, dtype), dims, target_memory)


create = create_tile


def create_tensor(shape: Sequence[Any], dtype: Any = DT_FP32, layout: Any = None, manual_dep: bool = False,
                  init_value: Optional[Number] = None) -> Tensor:
    """``pl.create_tensor(shape, dtype=)``: a global tensor of the program (scratch or state that
    several tasks read and write), written before it is read; with ``init_value`` it starts
    filled with it. ``manual_dep`` is accepted: the runtime here orders tasks by the data they
    touch. ``layout`` other than ND is refused."""
    current_trace("create_tensor")
    if layout is not None and getattr(layout, "name", layout) not in ("ND", "nd"):
        raise _core.UserError(f"pl.create_tensor: layout {layout!r} is not supported here (tensors are ND)" + _loc())
    if init_value is not None and init_value != 0:
        return _ops.creation.full_value(list(shape), init_value, dtype)
    t = new_tensor(list(shape), dtype, "pl_tensor")
    # Created tensors start zero-filled here, so an unwritten one reads as zeros (upstream's
    # buffer holds whatever was there: reading it before a write is the program's choice).
    current_recorder("create_tensor").mark_zero_filled(t._id)
    return t


def full(shape: Sequence[Any], dtype: Any, value: Number) -> Tensor:
    """``pl.full(shape, dtype=, value=)``: a tensor (or tile) holding `value`."""
    _require("full", "move")
    t = _ops.creation.full_value(list(shape), value, dtype)
    return _mark(t, list(shape), MemorySpace.Vec) if all(isinstance(d, int) for d in shape) else t


def fillpad(tile: Tensor, pad_value: Union[PadValue, Number] = PadValue.zero) -> Tensor:
    """``pl.fillpad(tile, pad_value)``. The ops here compute a tile's valid region only, so the
    padding never takes part in a reduction: the tile is returned as it is (the answer is the one
    a correctly padded tile gives on the chip)."""
    _require("fillpad", "vector")
    return tile


# --- arithmetic -------------------------------------------------------------------------------------


def _unary(name: str, fn: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    def op(tile: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        _require(name, "vector")
        return _one_tile(lambda: fn(tile), [tile])
    op.__name__ = name
    op.__doc__ = f"``pl.{name}(x)``: elementwise, on a tile or a tensor."
    return op


def _binary(name: str, fn: Callable[[Any, Any], Tensor]) -> Callable[..., Tensor]:
    def op(lhs: Tensor, rhs: Any) -> Tensor:
        _require(name, "vector")
        if getattr(rhs, "_pl_scalar", False) and isinstance(lhs, Tensor) and len(rhs.shape) != len(lhs.shape):
            rhs = _ops.reshape(rhs, [1] * len(lhs.shape))  # a float read: broadcast as a scalar
        return _one_tile(lambda: fn(lhs, rhs), [lhs, rhs])
    op.__name__ = name
    op.__doc__ = f"``pl.{name}(lhs, rhs)``: elementwise; `rhs` a tile / tensor of the same shape, or a scalar."
    return op


add = _binary("add", _ops.add)
sub = _binary("sub", _ops.sub)
mul = _binary("mul", _ops.mul)
div = _binary("div", _ops.div)
adds = _binary("adds", _ops.add)
subs = _binary("subs", _ops.sub)
muls = _binary("muls", _ops.mul)
divs = _binary("divs", _ops.div)
maximum = _binary("maximum", _ops.maximum)
minimum = _binary("minimum", _ops.minimum)
maximums = _binary("maximums", _ops.maximum)
minimums = _binary("minimums", _ops.minimum)
fmod = _binary("fmod", _ops.fmod)
neg = _unary("neg", _ops.neg)
exp = _unary("exp", _ops.exp)
log = _unary("log", _ops.log)
sqrt = _unary("sqrt", _ops.sqrt)
rsqrt = _unary("rsqrt", _ops.rsqrt)
recip = _unary("recip", _ops.reciprocal)
abs = _unary("abs", _ops.abs)  # noqa: A001 - the language's name
relu = _unary("relu", _ops.relu)
sin = _unary("sin", _ops.sin)
cos = _unary("cos", _ops.cos)
tanh = _unary("tanh", _ops.tanh)
sigmoid = _unary("sigmoid", _ops.sigmoid)


_CAST_MODES = {"none": "CAST_NONE", "rint": "CAST_RINT", "round": "CAST_ROUND", "floor": "CAST_FLOOR",
               "ceil": "CAST_CEIL", "trunc": "CAST_TRUNC", "odd": "CAST_ODD"}


def cast(tile: Tensor, target_type: Any, mode: str = "round") -> Tensor:
    """``pl.cast(x, target_type, mode=)``: conversion rounding by `mode` ("round": to nearest,
    ties away from zero; "rint": ties to even; "floor", "ceil", "trunc"; "none": the
    conversion's default, pypto.CastMode's). A scalar (an int, or one read with pl.read) cast to
    an integer type such as pl.INDEX stays that scalar."""
    if isinstance(tile, (int, float)) and not isinstance(tile, bool) and not is_int_dtype(target_type):
        return float(tile)  # a compile-time number to a float type (a rank cast to pl.FP32)
    if isinstance(tile, (int, _core.SymbolicScalar)) and not isinstance(tile, bool):
        if not is_int_dtype(target_type):
            raise _core.UserError(f"pl.cast: a scalar converts to an integer type (pl.INDEX, pl.INT32, ...) here, "
                                  f"got {target_type}" + _loc())
        return tile
    _require("cast", "vector")
    if mode not in _CAST_MODES:
        raise _core.UserError(f"pl.cast: mode {mode!r} is not one of {sorted(_CAST_MODES)}" + _format_loc(user_loc()))
    cm = getattr(_ops.CastMode, _CAST_MODES[mode])
    return _one_tile(lambda: _ops.cast(tile, target_type, cm), [tile])


# --- reductions and broadcasts ------------------------------------------------------------------------


def _row(name: str, fn: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    def op(tile: Tensor, tmp_tile: Optional[Tensor] = None) -> Tensor:
        _require(name, "vector")
        return _one_tile(lambda: fn(tile), [tile])
    op.__name__ = name
    op.__doc__ = (f"``pl.{name}(tile[, tmp_tile])``: [R, C] -> [R, 1] or [1, C] over the valid region (the "
                  "language's scratch tile is accepted; none is needed here).")
    return op


# Any rank: a row reduction is over the last dim, a column reduction over the one before it.
row_max = _row("row_max", lambda t: _ops.amax(t, -1, keepdim=True))
row_min = _row("row_min", lambda t: _ops.amin(t, -1, keepdim=True))
row_sum = _row("row_sum", lambda t: _ops.sum(t, -1, keepdim=True))
col_max = _row("col_max", lambda t: _ops.amax(t, -2, keepdim=True))
col_min = _row("col_min", lambda t: _ops.amin(t, -2, keepdim=True))
col_sum = _row("col_sum", lambda t: _ops.sum(t, -2, keepdim=True))


def _expand(name: str, fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    def op(tile: Tensor, vec: Tensor, tmp: Optional[Tensor] = None) -> Tensor:
        _require(name, "vector")
        return _one_tile(lambda: fn(tile, vec), [tile, vec])
    op.__name__ = name
    op.__doc__ = f"``pl.{name}(tile, vec)``: the row (or column) vector broadcast over the tile."
    return op


row_expand = _expand("row_expand", _tile.row_expand)
row_expand_add = _expand("row_expand_add", _tile.row_expand_add)
row_expand_sub = _expand("row_expand_sub", _tile.row_expand_sub)
row_expand_mul = _expand("row_expand_mul", _tile.row_expand_mul)
row_expand_div = _expand("row_expand_div", _tile.row_expand_div)
row_expand_max = _expand("row_expand_max", _tile.row_expand_max)
row_expand_min = _expand("row_expand_min", _tile.row_expand_min)
row_expand_expdif = _expand("row_expand_expdif", lambda t, v: _ops.exp(_tile.row_expand_sub(t, v)))
col_expand = _expand("col_expand", _tile.col_expand)
col_expand_add = _expand("col_expand_add", _tile.col_expand_add)
col_expand_sub = _expand("col_expand_sub", _tile.col_expand_sub)
col_expand_mul = _expand("col_expand_mul", _tile.col_expand_mul)
col_expand_div = _expand("col_expand_div", _tile.col_expand_div)
col_expand_max = _expand("col_expand_max", _tile.col_expand_max)
col_expand_min = _expand("col_expand_min", _tile.col_expand_min)
col_expand_expdif = _expand("col_expand_expdif", lambda t, v: _ops.exp(_tile.col_expand_sub(t, v)))


# --- the cube -------------------------------------------------------------------------------------------


def matmul(lhs: Tensor, rhs: Tensor, out_dtype: Any = None, *, a_trans: bool = False, b_trans: bool = False) -> Tensor:
    """``pl.matmul(a, b, out_dtype=)``: a @ b on the cube. Tiles (pl.load into Left / Right, or
    Mat) accumulate in fp32 (int32 for int8), the Acc dtype, unless `out_dtype` says otherwise;
    tensors default to their own dtype, as the tensor-level matmul."""
    _require("matmul", "cube")
    if out_dtype is None and _is_tile(lhs) and _is_tile(rhs):
        out_dtype = DT_INT32 if lhs.dtype in (DT_INT8, DT_UINT8) else DT_FP32
    # A transpose_view operand is the matmul's transposed operand (the cube's own path; the
    # transposed copy recorded for other readers is then dead and dropped).
    a_src, b_src = getattr(lhs, "_pl_transposed_of", None), getattr(rhs, "_pl_transposed_of", None)
    if a_src is not None:
        lhs, a_trans = a_src, not a_trans
    if b_src is not None:
        rhs, b_trans = b_src, not b_trans
    out = _ops.matmul(lhs, rhs, out_dtype, a_trans=a_trans, b_trans=b_trans)
    if _is_tile(lhs) and _is_tile(rhs):
        m, n = _tile_shape(lhs)[-2], _tile_shape(rhs)[-1]
        _mark(out, [d if isinstance(d, int) else m if i == len(out.shape) - 2 else n for i, d in enumerate(out.shape)],
              MemorySpace.Acc)
    return out


def matmul_acc(acc: Tensor, lhs: Tensor, rhs: Tensor, init_cond: Any = None) -> Tensor:
    """``pl.matmul_acc(acc, a, b)``: acc + a @ b, accumulated in acc's dtype."""
    _require("matmul_acc", "cube")
    prod = _ops.matmul(lhs, rhs, acc.dtype)
    out = _one_tile(lambda: _ops.add(acc, prod), [acc])
    if _is_tile(acc):
        out._pl_mem = MemorySpace.Acc  # type: ignore[attr-defined]
    return out


def matmul_bias(lhs: Tensor, rhs: Tensor, bias: Tensor) -> Tensor:
    """``pl.matmul_bias(a, b, bias)``: a @ b + bias ([1, N]) in fp32."""
    _require("matmul_bias", "cube")
    return _ops.matmul(lhs, rhs, DT_FP32, extend_params={"bias_tensor": bias})


# --- moves between on-chip memories, and shape ---------------------------------------------------------


# The on-chip paths a tile can move along (Ascend's MTE1 / fixpipe / UB copies): the cube reads
# Left (L0A) and Right (L0B) only from Mat (L1); only a matmul writes Acc (L0C).
_MOVES = {
    MemorySpace.Mat: {MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Vec},
    MemorySpace.Vec: {MemorySpace.Vec, MemorySpace.Mat},
    MemorySpace.Acc: {MemorySpace.Vec, MemorySpace.Mat},
    MemorySpace.Left: set(), MemorySpace.Right: set(),
}


def move(tile: Tensor, target_memory: MemorySpace, blayout: Any = None, slayout: Any = None) -> Tensor:
    """``pl.move(tile, target_memory=pl.MemorySpace.Left)``: the tile in another on-chip memory
    (Mat -> Left / Right before a matmul, Acc -> Vec for a vector epilogue, ...). On the CPU the
    values stay where they are; the move is checked as the chip's data paths allow it and the
    result is a tile of the target memory (sized against it). `blayout` / `slayout` (the
    destination's layouts) are accepted: tiles here are row-major."""
    _require("move", "move")
    if not isinstance(target_memory, MemorySpace):
        raise _core.UserError(f"pl.move: target_memory must be a pl.MemorySpace, got {target_memory!r}" + _loc())
    if not isinstance(tile, Tensor) or not _is_tile(tile):
        raise _core.UserError(f"pl.move moves an on-chip tile (from pl.load, an op or a matmul), got "
                              f"{tile!r}" + _loc() + "\nhint: pl.load a tensor into the memory you want")
    src = getattr(tile, "_pl_mem", MemorySpace.Vec)
    if target_memory not in _MOVES.get(src, set()):
        paths = ", ".join(sorted(m.name for m in _MOVES.get(src, set()))) or "none: it only feeds the cube"
        hint = {MemorySpace.Acc: "only a matmul writes Acc (L0C); use pl.matmul / pl.matmul_acc",
                MemorySpace.DDR: "pl.store writes a tile to a global tensor"}.get(
            target_memory, "the cube reads Left / Right from Mat: move the tile to Mat first")
        raise _core.UserError(f"pl.move: no on-chip path from {src.name} to {target_memory.name} (from {src.name}: "
                              f"{paths})" + _loc() + "\nhint: " + hint)
    shape = _tile_shape(tile)
    _check_fits("move", shape, tile.dtype, target_memory)
    out = Tensor(_rec=current_recorder("move"), _id=tile._id)
    if getattr(tile, "_pl_transposed_of", None) is not None:  # still a transposed view after the move
        out._pl_transposed_of = tile._pl_transposed_of  # type: ignore[attr-defined]
    return _mark(out, shape, target_memory)


def transpose_view(tile: Tensor) -> Tensor:
    """``pl.tile.transpose_view(t)``: the tile with its last two dims swapped, the chip's zero-copy
    reinterpretation of an L1 tile. A matmul that takes it (after ``pl.move``) reads the source
    as its transposed operand; any other op reads a transposed copy."""
    _require("tile.transpose_view", "move")
    if not isinstance(tile, Tensor) or not _is_tile(tile) or len(_tile_shape(tile)) < 2:
        raise _core.UserError(f"pl.tile.transpose_view takes an on-chip tile of 2 or more dims, got {tile!r}"
                              + _loc())
    shape = _tile_shape(tile)
    rank = len(shape)
    out = _one_tile(lambda: _ops.transpose(tile, rank - 2, rank - 1), [tile])
    out._pl_transposed_of = tile  # type: ignore[attr-defined]
    return _mark(out, shape[:-2] + [shape[-1], shape[-2]], getattr(tile, "_pl_mem", MemorySpace.Vec))


def concat(src0: Tensor, src1: Tensor) -> Tensor:
    """``pl.concat(a, b)``: the two tiles side by side along the columns (same rows and dtype)."""
    _require("concat", "vector")
    for name, t in (("src0", src0), ("src1", src1)):
        if not isinstance(t, Tensor) or not t.is_traced:
            raise _core.UserError(f"pl.concat: {name} must be a tile, got {t!r}" + _loc())
    a, b = _tile_shape(src0) or list(src0.shape), _tile_shape(src1) or list(src1.shape)
    if len(a) != len(b) or a[:-1] != b[:-1] or src0.dtype != src1.dtype:
        raise _core.UserError(f"pl.concat: tiles {a} {src0.dtype} and {b} {src1.dtype} must have the same rows and "
                              "dtype (they are joined along the last dim)" + _loc())
    shape = a[:-1] + [a[-1] + b[-1]]
    _check_fits("concat", shape, src0.dtype, getattr(src0, "_pl_mem", MemorySpace.Vec))
    out = _ops.concat([src0, src1], -1)
    return _mark(out, shape, getattr(src0, "_pl_mem", MemorySpace.Vec))


def reshape(tile: Tensor, shape: Sequence[int]) -> Tensor:
    """``pl.reshape(tile, [rows, cols])``: the tile's elements in another shape (as many, row-major)."""
    _require("reshape", "move")
    if not isinstance(tile, Tensor) or not tile.is_traced:
        raise _core.UserError(f"pl.reshape reshapes a tile, got {tile!r}" + _loc())
    dims = _static_dims(shape, "reshape", "shape")
    old = _tile_shape(tile) or [d for d in tile.shape]
    if all(isinstance(d, int) for d in old) and math.prod(old) != math.prod(dims):
        raise _core.UserError(f"pl.reshape: a {old} tile has {math.prod(old)} elements, the shape {dims} "
                              f"{math.prod(dims)}" + _loc())
    out = _one_tile(lambda: _ops.reshape(tile, dims), [tile])
    return _mark(out, dims, getattr(tile, "_pl_mem", MemorySpace.Vec))


def slice(tile: Tensor, shape: Sequence[Any], offset: Sequence[Any], valid_shape: Optional[Sequence[Any]] = None,  # noqa: A001
          drop_dims: Optional[Sequence[int]] = None, pad_value: Any = None, clamp: bool = False) -> Tensor:
    """``pl.slice(x, shape, offset)``: the window of an on-chip tile (static `shape` at `offset`,
    in the tile's memory), optionally only `valid_shape` of it valid; of a global tensor, a view
    (``pl.tensor.slice``: its shape may be dynamic). `drop_dims` and `pad_value` are refused here
    (the window keeps its rank; invalid parts are not read)."""
    if not isinstance(tile, Tensor) or not tile.is_traced:
        raise _core.UserError(f"pl.slice slices a tile or a tensor, got {tile!r}" + _loc())
    if not _is_tile(tile):
        return tensor_slice(tile, shape, offset, valid_shape, drop_dims, pad_value, clamp)
    _require("slice", "move")
    if drop_dims:
        raise _core.UserError("pl.slice: drop_dims is not supported here; slice with the unit dim and "
                              "pl.reshape the result" + _loc())
    if pad_value is not None:
        raise _core.UserError("pl.slice: pad_value is not supported here; pl.fillpad the result" + _loc())
    dims = _static_dims(shape, "slice", "shape")
    src = _tile_shape(tile) or list(tile.shape)
    _window_check("slice", tile, list(offset), dims, "shape")
    out = _ops.view(tile, dims, list(offset), valid_shape=list(valid_shape) if valid_shape is not None else None)
    return _mark(out, dims, getattr(tile, "_pl_mem", MemorySpace.Vec)) if src else out


def tensor_slice(tensor: Tensor, shape: Sequence[Any], offset: Sequence[Any],  # noqa: PLR0913
                 valid_shape: Optional[Sequence[Any]] = None, drop_dims: Optional[Sequence[int]] = None,
                 pad_value: Any = None, clamp: bool = False) -> Tensor:
    """``pl.tensor.slice(t, shape, offset[, valid_shape])``: a view of global tensor `t` (no data
    moves; the shape may hold scalars known when the program runs). With ``clamp=True`` the
    window may run off the end of `t`: its valid part is what exists."""
    current_trace("tensor.slice")
    if not isinstance(tensor, Tensor) or not tensor.is_traced:
        raise _core.UserError(f"pl.tensor.slice slices a tensor of the function, got {tensor!r}" + _loc())
    if drop_dims:
        raise _core.UserError("pl.slice: drop_dims is not supported here; slice with the unit dim and "
                              "pl.reshape the result" + _loc())
    if pad_value is not None:
        raise _core.UserError("pl.slice: pad_value is not supported on tensors here; load the view and "
                              "pl.fillpad the tile" + _loc())
    shape, offset = list(shape), list(offset)
    if clamp:
        valid_shape = [sym_min(s, n - o) for s, n, o in zip(shape, tensor.shape, offset)]
    _window_check("slice", tensor, offset, list(valid_shape) if valid_shape is not None else shape,
                  "valid shape" if valid_shape is not None else "shape")
    if valid_shape is None:
        return _ops.view(tensor, shape, offset)
    return _ops.view(tensor, shape, offset, valid_shape=list(valid_shape))


def dim(tensor: Tensor, axis: int) -> Any:
    """``pl.tensor.dim(t, axis)``: the extent of `t` along `axis` (negative counts from the end),
    an int or a scalar known when the program runs."""
    if not isinstance(tensor, Tensor) or not tensor.is_traced:
        raise _core.UserError(f"pl.tensor.dim takes a tensor of the function, got {tensor!r}" + _loc())
    rank = len(tensor.shape)
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise _core.UserError(f"pl.tensor.dim: axis {axis!r} is out of range for the {rank}-D tensor "
                              f"{list(tensor.shape)}" + _loc())
    return tensor.shape[axis]


def _element(op: str, tensor: Any, indices: Any) -> List[Any]:
    """The indices of one element of a traced tensor (pl.read / pl.write), or a UserError. A bare
    index addresses a 1-D tensor (upstream's form)."""
    if not isinstance(tensor, Tensor) or not tensor.is_traced:
        raise _core.UserError(f"pl.{op} addresses an element of a tensor, got {tensor!r}" + _loc())
    idx = list(indices) if isinstance(indices, (list, tuple)) else [indices]
    if len(idx) != len(tensor.shape):
        raise _core.UserError(f"pl.{op}: {len(idx)} indices for the {len(tensor.shape)}-D tensor "
                              f"{list(tensor.shape)}" + _loc())
    return idx


def read(tensor: Tensor, indices: Any) -> Any:
    """``pl.read(t, [i, ...])``: one element of an integer tensor as a scalar known when the
    kernel runs (loop bounds, valid lengths, branch conditions)."""
    idx = _element("read", tensor, indices)
    trace = current_trace("read")
    if not is_int_dtype(tensor.dtype):
        # A float element (`scale = pl.tensor.read(scale_t, [0])`): scalars known at run time are
        # integers here, so it is the one-element view, which the tile ops broadcast as a scalar.
        one = _ops.view(tensor, [1] * len(idx), idx)
        one._pl_scalar = True  # type: ignore[attr-defined]
        return one
    if id(tensor) in trace.windows:
        # A window (a signal row other ranks write): read when the program gets there, after the
        # waits before it, as a one-element tile (the control program cannot read it early).
        return load(tensor, idx, [1] * len(idx))
    return tensor[tuple(idx)]


def write(tensor: Tensor, indices: Any, value: Any) -> None:
    """``pl.write(t, [i, ...], v)``: writes one element of global tensor `t`: `v` is a value
    ``pl.read`` returned, a one-element tile, or a number."""
    _require("write", "move")
    idx = _element("write", tensor, indices)
    one = [1] * len(idx)
    if isinstance(value, Tensor) and value.is_traced:
        if any(not (isinstance(d, int) and d == 1) for d in value.shape):
            raise _core.UserError(f"pl.write writes one element; got a value of shape {list(value.shape)}" + _loc()
                                  + "\nhint: pl.store writes a tile")
        tile = value if len(value.shape) == len(idx) else _ops.reshape(value, one)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        tile = _mark(_ops.creation.full_value(one, value, tensor.dtype), one, MemorySpace.Vec)
    else:
        raise _core.UserError(f"pl.write: the value must be what pl.read returned, a one-element tile or a number, "
                              f"got {value!r}" + _loc())
    if tile.dtype != tensor.dtype:
        tile = _ops.cast(tile, tensor.dtype)
    store(tile, idx, tensor)
