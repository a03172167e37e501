"""Tensor-level operations. Each is a thin call into the C++ recorder, which checks shapes
and dtypes and records the op with the caller's source line."""

from __future__ import annotations


from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import pypto._core as _core
from .._enums import PyptoEnum
from ..._core import DataType
from .._dtypes import (DT_BF16, DT_FP16, DT_FP32, is_float_dtype, is_int_dtype)
from .._dtypes import exact_int64 as _exact
from .._tracing import _format_loc, current_recorder, note_write, user_loc
from .._unavailable import Unavailable
from ..tensor import Tensor, clipped_extents

__all__ = [
    "CastMode",
    "SaturationMode",
    "exp",
    "log",
    "abs",
    "neg",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "relu",
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "minimum",
    "amax",
    "amin",
    "sum",
    "ReLuType",
    "TransMode",
    "PrecisionType",
    "set_semantic_label",
    "view",
    "assemble",
    "atomic_add",
    "mean",
    "sigmoid",
    "silu",
    "softmax",
    "rms_norm",
    "layer_norm",
]

Scalar = Union[int, float]


def _t(x: Any, op: str) -> Tensor:
    if isinstance(x, Tensor) and x.is_traced:
        return x
    if isinstance(x, Unavailable):
        x.fail()
    raise _core.UserError(f"pypto.{op}: expected a traced pypto.Tensor, got {type(x).__name__}"
                          + _suffix())


def _suffix() -> str:
    return _format_loc(user_loc())


def _same_tile(out: Tensor, x: Tensor) -> Tensor:
    """``out`` computed element by element from ``x`` alone: in PyPTO it is a tile of x's shape and
    valid shape, so it keeps x's padded shape (a later reshape or fillpad of it sees the padding)."""
    padded = getattr(x, "_padded_shape", None)
    if padded is not None:
        out._padded_shape = padded
    return out


def _unary(op: str, x: Any) -> Tensor:
    rec = current_recorder(op)
    x = _t(x, op)
    return _same_tile(Tensor(_rec=rec, _id=rec.unary(op, x._id, user_loc())), x)


def _scalar(v: Union[int, float], op: str) -> float:
    """A Python scalar as the recorder takes it (a double; the recorder checks integer scalars
    against the tensor's dtype)."""
    try:
        return float(v)
    except OverflowError:
        raise _core.UserError(f"pypto.{op}: the scalar {v} is out of the range of every dtype" + _suffix()) from None


def _known(v: Any) -> Any:
    """A symbolic scalar whose value is known at trace time (a constant expression) as its int."""
    if isinstance(v, _core.SymbolicScalar) and v.is_concrete():
        return int(v)
    return v


def _run_time_scalar(s: Any, scalar_first: bool = False) -> Dict[str, Any]:
    """The attributes of an op taking the symbolic scalar `s` (a loop index, a dim, a value read
    from a tensor), evaluated when the tile runs: an integer, converted to the tensor's dtype
    (numpy's int64 scalar against an array of that dtype)."""
    attrs: Dict[str, Any] = {"scalar": 0.0, "scalar_expr": [s]}
    if scalar_first:
        attrs["scalar_first"] = 1
    return attrs


def _binary(op: str, x: Any, y: Any) -> Tensor:
    rec = current_recorder(op)
    import numpy as np
    x, y = (v.item() if isinstance(v, np.number) else v for v in (x, y))  # numpy scalars as Python's
    x, y = (_known(v) for v in (x, y))
    if isinstance(x, _core.SymbolicScalar) and isinstance(y, Tensor):  # a run-time scalar op y
        y = _t(y, op)
        attrs = _run_time_scalar(x, True)
        return _same_tile(Tensor(_rec=rec, _id=rec.op(op + "_scalar", [y._id], attrs, user_loc())), y)
    if isinstance(x, (int, float)) and not isinstance(x, bool) and isinstance(y, Tensor):
        y = _t(y, op)
        # scalar - y and scalar / y are instructions of their own (TSUBS / TDIVS in scalar/tile
        # form): 1e-39 / y is not reciprocal(y) * 1e-39, which overflows for tiny y.
        return _same_tile(Tensor(_rec=rec, _id=rec.binary_scalar(op, y._id, _scalar(x, op), user_loc(), True,
                                                                  _exact(x))), y)
    x = _t(x, op)
    if isinstance(y, bool):
        raise _core.UserError(f"pypto.{op}: a bool operand is not supported" + _suffix())
    if isinstance(y, (int, float)):
        return _same_tile(Tensor(_rec=rec, _id=rec.binary_scalar(op, x._id, _scalar(y, op), user_loc(), False,
                                                                  _exact(y))), x)
    if isinstance(y, _core.SymbolicScalar):
        return _same_tile(Tensor(_rec=rec, _id=rec.op(op + "_scalar", [x._id], _run_time_scalar(y), user_loc())), x)
    y = _t(y, op)
    x, y = _fit_valid(x, y)
    return Tensor(_rec=rec, _id=rec.binary(op, x._id, y._id, user_loc()))


def _is_dynamic(d: Any) -> bool:
    return isinstance(d, _core.SymbolicScalar) and not d.is_concrete()


def _fit_valid(x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
    """PyPTO's valid shapes in elementwise ops: a dim that is a run-time extent on one operand
    (the valid part of a view, `valid_shape=[min(n - i, 128), ...]`) against a static size on
    the other takes the valid part of the static operand (its first elements along that dim;
    the view checks at run time that they exist). Equal dims and size-1 broadcasts are as
    before."""
    x, y = fit_valid([x, y])
    return x, y


def same_extent(a: Any, b: Any, what: str) -> bool:
    """Whether two extents are the same for every call: the same expression, or one expression of
    two dynamic dims (min(8, max(x_dim0 - 8 * i, 0)) against the same of k_dim0, the tail tiles of
    two inputs), equal when the dims are, which the call then checks when it binds them."""
    sa, sb = _core.to_sym(a), _core.to_sym(b)
    if sa.same_as(sb):
        return True
    fa, fb = set(sa.free_vars()), set(sb.free_vars())
    if len(fa - fb) != 1 or len(fb - fa) != 1:
        return False
    na, nb = (fa - fb).pop(), (fb - fa).pop()
    # One expression of the two dims: equal wherever the dims are. The shared variables (loop
    # indices, whose tiles lie in the dims) take small values, the dims large ones.
    for seed in range(1, 8):
        env = {v: (seed * 7 + j * 3) % 4 for j, v in enumerate(sorted(fa & fb))}
        env[na] = env[nb] = 100 + (seed * 37) % 97
        if sa.eval(env) != sb.eval(env):
            return False
    try:
        current_recorder("shape").assume_equal(_core.SymbolicScalar.var(na), _core.SymbolicScalar.var(nb), what,
                                               user_loc())
    except _core.UserError:  # not two dims the call binds (a loop index, a value read)
        return False
    return True


def exact_view(t: Tensor, shape: List[Any], offsets: List[Any]) -> Tensor:
    """A window of t with exactly these extents (an op's own step: the extents are known to be
    inside, so no valid-shape clipping as pypto.view does for a user's window)."""
    rec = current_recorder("view")
    return Tensor(_rec=rec, _id=rec.view(t._id, list(offsets), list(shape), user_loc()))


def fit_valid(tensors: List[Tensor]) -> List[Tensor]:
    """_fit_valid over any number of elementwise operands (where's three): along each dim (from
    the right, as broadcasting aligns them) the first run-time extent is the one every static
    operand of size > 1 is cut to."""
    shapes = [list(t.shape) for t in tensors]
    fixed = [list(s) for s in shapes]
    changed = [False] * len(tensors)
    for k in range(1, max(len(s) for s in shapes) + 1):
        dyn = next((s[-k] for s in shapes if len(s) >= k and _is_dynamic(s[-k])), None)
        if dyn is None:
            continue
        for i, s in enumerate(shapes):
            if len(s) >= k and isinstance(s[-k], int) and s[-k] > 1:
                fixed[i][-k], changed[i] = dyn, True
            elif len(s) >= k and _is_dynamic(s[-k]) and s[-k] is not dyn and not _core.to_sym(s[-k]).same_as(
                    _core.to_sym(dyn)) and same_extent(dyn, s[-k], f"dim {-k} of the operands {tensors!r}"):
                fixed[i][-k], changed[i] = dyn, True  # the same extent of another input's dim
    return [exact_view(t, f, [0] * len(f)) if c else t for t, f, c in zip(tensors, fixed, changed)]


def exp(x: Tensor, precision_type: Optional["PrecisionType"] = None) -> Tensor:
    """e**x, elementwise."""
    if precision_type is not None:
        _check_precision("exp", precision_type)
    return _unary("exp", x)


def log(x: Tensor, precision_type: Optional["PrecisionType"] = None) -> Tensor:
    """Natural logarithm, elementwise."""
    if precision_type is not None:
        _check_precision("log", precision_type)
    return _unary("log", x)


def abs(x: Tensor) -> Tensor:  # noqa: A001 - the PyPTO name
    """|x|, elementwise."""
    return _unary("abs", x)


def neg(x: Tensor) -> Tensor:
    """-x, elementwise."""
    return _unary("neg", x)


def sqrt(x: Tensor, precision_type: Optional["PrecisionType"] = None) -> Tensor:
    """Square root, elementwise."""
    if precision_type is not None:
        _check_precision("sqrt", precision_type)
    return _unary("sqrt", x)


def rsqrt(x: Tensor, precision_type: Optional["PrecisionType"] = None) -> Tensor:
    """1 / sqrt(x), elementwise."""
    if precision_type is not None:
        _check_precision("rsqrt", precision_type)
    return _unary("rsqrt", x)


def reciprocal(x: Tensor, precision_type: Optional["PrecisionType"] = None) -> Tensor:
    """1 / x, elementwise."""
    if precision_type is not None:
        _check_precision("reciprocal", precision_type)
    return _unary("reciprocal", x)


def relu(x: Tensor) -> Tensor:
    """max(x, 0), elementwise."""
    return _unary("relu", x)


def add(x: Any, y: Any) -> Tensor:
    """x + y with broadcasting; either may be a Python scalar."""
    return _binary("add", x, y)


def sub(x: Any, y: Any) -> Tensor:
    """x - y with broadcasting; either may be a Python scalar."""
    return _binary("sub", x, y)


def mul(x: Any, y: Any) -> Tensor:
    """x * y with broadcasting; either may be a Python scalar."""
    return _binary("mul", x, y)


def div(x: Any, y: Any, precision_type: Optional["PrecisionType"] = None) -> Tensor:
    """x / y with broadcasting; either may be a Python scalar. ``precision_type`` (PyPTO's) is
    accepted: the division is correctly rounded either way (docs/numerics.md)."""
    if precision_type is not None:
        _check_precision("div", precision_type)
    return _binary("div", x, y)


def maximum(x: Any, y: Any) -> Tensor:
    """Elementwise maximum with broadcasting; either may be a Python scalar."""
    return _binary("maximum", x, y)


def minimum(x: Any, y: Any) -> Tensor:
    """Elementwise minimum with broadcasting; either may be a Python scalar."""
    return _binary("minimum", x, y)


def _reduce(op: str, x: Any, dim: int, keepdim: bool) -> Tensor:
    rec = current_recorder(op)
    x = _t(x, op)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise _core.UserError(f"pypto.{op}: dim must be an int, got {dim!r}" + _suffix())
    return Tensor(_rec=rec, _id=rec.reduce(op, x._id, dim, bool(keepdim), user_loc()))


def amax(x: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:
    """Maximum along `dim`."""
    return _reduce("amax", x, dim, keepdim)


def amin(x: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:
    """Minimum along `dim`."""
    return _reduce("amin", x, dim, keepdim)


def sum(x: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:  # noqa: A001 - the PyPTO name
    """Sum along `dim`."""
    return _reduce("sum", x, dim, keepdim)


class CastMode(PyptoEnum):
    """PyPTO's rounding of pypto.cast. CAST_NONE picks the default: CAST_TRUNC from a float to an
    integer (torch's .to(int)), CAST_RINT otherwise. Into a narrower float the others round in
    their direction (CAST_ROUND: to nearest, ties away from zero); from a float to the same
    dtype they round to an integer (PyPTO's floor / ceil by cast). CAST_ODD (round to odd, fp32
    -> fp16 on the chip) is not implemented here and takes the default, as PyPTO does for a mode
    the conversion does not support."""

    CAST_NONE = 0
    CAST_RINT = 1
    CAST_ROUND = 2
    CAST_FLOOR = 3
    CAST_CEIL = 4
    CAST_TRUNC = 5
    CAST_ODD = 6


class SaturationMode(PyptoEnum):
    """PyPTO's overflow handling of pypto.cast into an integer. Here a conversion into an integer
    always saturates (NaN gives 0), which is what ON asks; OFF is accepted and saturates too."""

    OFF = 0
    ON = 1


# pto::RoundMode of each CastMode (RINT ROUND FLOOR CEIL TRUNC).
_PTO_ROUND = {CastMode.CAST_RINT: 0, CastMode.CAST_ROUND: 1, CastMode.CAST_FLOOR: 2, CastMode.CAST_CEIL: 3,
              CastMode.CAST_TRUNC: 4}


def _convert(x: Tensor, dtype: DataType) -> Tensor:
    """The plain conversion of pypto.cast (CastMode.CAST_NONE) between the arithmetic dtypes: the
    ops below pypto.cast (ops/cast.py), which needs some of them, convert with it."""
    rec = current_recorder("cast")
    x = _t(x, "cast")
    src = x.dtype
    mode = CastMode.CAST_TRUNC if is_float_dtype(src) and is_int_dtype(dtype) else CastMode.CAST_RINT
    return _same_tile(Tensor(_rec=rec, _id=rec.cast(x._id, dtype, user_loc(), _PTO_ROUND[mode])), x)


class PrecisionType(PyptoEnum):
    """PyPTO's precision mode of div, exp, sqrt, rsqrt, reciprocal and log: INTRINSIC (the chip's
    fast instruction) or HIGH_PRECISION. Accepted everywhere; here every one of them follows
    docs/numerics.md (correctly rounded division, transcendental functions within 2 ulp)."""

    INTRINSIC = 0
    HIGH_PRECISION = 1


def _check_precision(op: str, p: Any) -> None:
    if not isinstance(p, PrecisionType):
        raise _core.UserError(f"pypto.{op}: precision_type must be a pypto.PrecisionType, got {p!r}" + _suffix())


def set_semantic_label(label: str) -> None:
    """PyPTO's semantic label: attached to the ops recorded after it, shown in the pass dumps
    (``label="..."``) so a kernel's ops can be traced back to the part of the model they implement."""
    if not isinstance(label, str):
        raise _core.UserError(f"pypto.set_semantic_label: the label must be a str, got {label!r}" + _suffix())
    current_recorder("set_semantic_label").set_label(label)


class ReLuType(PyptoEnum):
    """``extend_params={"relu_type": ...}`` of pypto.matmul."""

    NO_RELU = 0
    RELU = 1


class TransMode(PyptoEnum):
    """``extend_params={"trans_mode": ...}`` of pypto.matmul: fp32 operands as they are
    (CAST_NONE), or rounded to TF32 first (the 950's), ties to even (CAST_RINT) or away from
    zero (CAST_ROUND)."""

    CAST_NONE = 0
    CAST_RINT = 1
    CAST_ROUND = 2


def _reinterpret(rec: Any, x: Tensor, dtype: DataType) -> Tensor:
    """``pypto.view(x, dtype=...)``: x's bytes read as ``dtype``, the last dim holding as many bytes
    (int8 ``[n, 16]`` -> fp32 ``[n, 4]``), as PyPTO reads the tile. A slice is copied densely first.
    PyPTO's padded shape scales with it (a ``[2048, 32]`` int8 tile of 16 valid columns is a
    ``[2048, 8]`` fp32 one of 4)."""
    src = x  # a slice is copied densely first (as clone)
    if rec.value_kind(x._vid) == "view":
        src = Tensor(_rec=rec, _id=rec.op("expand", [x._id], {"shape": list(x.shape)}, user_loc()))
    out = Tensor(_rec=rec, _id=rec.bitcast(src._id, dtype, user_loc()))
    padded = getattr(x, "_padded_shape", None)
    if padded and isinstance(padded[-1], int):
        scaled = padded[-1] * _core.dtype_bytes(x.dtype)
        if scaled % _core.dtype_bytes(dtype) == 0:
            out._padded_shape = list(padded[:-1]) + [scaled // _core.dtype_bytes(dtype)]
    return out


def view(input: Tensor, shape: Optional[Sequence[Any]] = None, offsets: Optional[Sequence[Any]] = None, *,  # noqa: A002
         valid_shape: Optional[Sequence[Any]] = None, dtype: Optional[DataType] = None) -> Tensor:
    """A window of x: ``shape`` elements from ``offsets`` (default: zeros) per dim. With
    ``valid_shape`` (symbolic extents, e.g. ``[(n - i * 32).min(32), h]`` for the last block), the
    view is the valid part: on the CPU there is no padding to carry, so the result's shape is
    ``valid_shape`` (PyPTO keeps ``shape`` and reads the rest as padding). Assigned to a window
    of ``shape`` (``out[:] = view(...)``), it writes its valid part there, as in PyPTO, and leaves
    the rest of the window as it was."""
    x = input
    rec = current_recorder("view")
    x = _t(x, "view")
    rank = len(x.shape)
    if dtype is not None and dtype != x.dtype:
        if shape is not None or offsets is not None or valid_shape is not None:
            raise _core.UserError(f"pypto.view: dtype={dtype} together with shape, offsets or valid_shape is not "
                                  f"supported; take the window first, then view it with dtype= alone ({x!r})"
                                  + _suffix())
        return _reinterpret(rec, x, dtype)
    shape = list(x.shape) if shape is None else list(shape)
    offsets = [0] * rank if offsets is None else list(offsets)
    # A constant symbolic offset (the index of a one-iteration loop times a size) is its int.
    offsets = [int(o) if isinstance(o, _core.SymbolicScalar) and o.is_const() else o for o in offsets]
    extents = list(valid_shape) if valid_shape is not None else list(shape)
    for what, v in (("shape", shape), ("offsets", offsets), ("valid_shape", extents)):
        if len(v) != rank:
            raise _core.UserError(f"pypto.view: {what} {v} has {len(v)} entries for a tensor of rank {rank} "
                                  f"{x!r}" + _suffix())
    if valid_shape is not None:
        # A valid extent whose bound exceeds the view's shape (PyPTO's tests pass
        # min(n - i * 16, n) for a 16-wide view) is the smaller of the two. One without a bound
        # (a length read from a tensor) stays as given: the run time checks it against the tensor.
        for d, (n, v) in enumerate(zip(shape, extents)):
            if isinstance(n, int) and not isinstance(n, bool):
                if isinstance(v, int) and not isinstance(v, bool):
                    if v > n:  # a known extent past the view reads memory it does not hold (PyPTO refuses it too)
                        raise _core.UserError(f"pypto.view: valid_shape {list(valid_shape)} exceeds the view's shape "
                                              f"{shape} in dim {d} ({x!r})" + _suffix())
                elif isinstance(v, _core.SymbolicScalar) and v.upper_bound() is not None and v.upper_bound() > n:
                    extents[d] = v.min(n)
    if valid_shape is None:
        # PyPTO derives the valid shape of a view that may reach past the tensor (a tail tile):
        # min(max(dim - offset, 0), size), the part inside it.
        extents = clipped_extents(rec, x._id, offsets, shape)
    out = Tensor(_rec=rec, _id=rec.view(x._id, offsets, extents, user_loc()))
    out._view_of = (x, offsets)  # the paged gathers address the memory from the view's start on
    out._mx_values, out._read_only = x._mx_values, x._read_only
    if valid_shape is not None or any(a is not b for a, b in zip(extents, shape)):
        out._padded_shape = shape  # assigned to a window of this shape, it writes its valid part
    return out


def assemble(src: Any, offsets: Any, dst: Any = None, parallel: bool = False) -> None:
    """Write `src` into `dst` at `offsets` (one per dim). PyPTO's batched form,
    ``assemble([(a, offsets_a), (b, offsets_b)], dst)``, writes each in turn. ``parallel`` (PyPTO's
    promise that the regions do not overlap) is accepted: here the runtime orders the writes of
    one region by their data dependencies either way."""
    if not isinstance(parallel, bool):
        raise _core.UserError(f"pypto.assemble: parallel must be a bool, got {parallel!r}" + _suffix())
    if isinstance(src, (list, tuple)):
        if dst is not None:
            raise _core.UserError("pypto.assemble: the batched form is assemble([(src, offsets), ...], dst)"
                                  + _suffix())
        for item in src:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise _core.UserError("pypto.assemble: each entry of the batched form is a (tensor, offsets) pair, "
                                      f"got {item!r}" + _suffix())
            assemble(item[0], item[1], offsets)
        return
    if dst is None:
        raise _core.UserError("pypto.assemble(src, offsets, dst): dst is missing" + _suffix())
    rec = current_recorder("assemble")
    src = _t(src, "assemble")
    dst = _t(dst, "assemble")
    dst.check_writable("pypto.assemble")
    note_write()
    rec.assemble(src._id, list(offsets), dst._id, user_loc())


def atomic_add(src: Tensor, offsets: Sequence[Any], dst: Tensor) -> None:
    """PyPTO's atomic_add: ``dst[offsets : offsets + src.shape] += src``. Updates of one region
    from several tasks (the iterations of a loop) are ordered by the runtime, each reading what
    the one before wrote: the sum of every update, in program order (PyPTO leaves the order of
    concurrent atomic updates open)."""
    src = _t(src, "atomic_add")
    dst = _t(dst, "atomic_add")
    offsets = list(offsets)
    if len(offsets) != dst.ndim or src.ndim != dst.ndim:
        raise _core.UserError(f"pypto.atomic_add: src {src!r}, dst {dst!r} and offsets {offsets} must have the "
                              "same rank" + _suffix())
    if src.dtype != dst.dtype:
        raise _core.UserError(f"pypto.atomic_add: src {src!r} and dst {dst!r} differ in dtype" + _suffix()
                              + "\nhint: cast the source with pypto.cast(src, dst.dtype)")
    window = view(dst, list(src.shape), offsets)
    assemble(add(window, src), offsets, dst)


def _widen(x: Tensor) -> "tuple[Tensor, Union[DataType, None]]":
    """x in fp32, and the 16-bit dtype to round back to (None when x is not 16-bit)."""
    if x.dtype in (DT_FP16, DT_BF16):
        return _convert(x, DT_FP32), x.dtype
    return x, None


def _narrow(y: Tensor, dtype: "Union[DataType, None]") -> Tensor:
    return y if dtype is None else _convert(y, dtype)


def mean(x: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:
    """Mean along `dim`: the sum divided by the count, as numpy computes it (16-bit inputs
    accumulate in fp32). A dim of run-time size (a tail window, a DYNAMIC dim) divides by its
    size when the tile runs."""
    x = _t(x, "mean")
    if not isinstance(dim, int) or isinstance(dim, bool) or not -x.ndim <= dim < x.ndim:
        raise _core.UserError(f"pypto.mean: dim {dim!r} is out of range for {x!r} of rank {x.ndim}" + _suffix())
    n = x.shape[dim]
    x, dt = _widen(x)
    total = sum(x, dim, keepdim)
    return _on_reduced(lambda: _narrow(div(total, n), dt), x.ndim, [] if keepdim else [dim % x.ndim])


def _on_reduced(fn: Any, rank: int, removed: Sequence[int]) -> Any:
    """fn() recording ops on a reduction without keepdim: with the user's tile shape minus the
    `removed` dims in force (the user could not set one in between), then theirs again."""
    rec = current_recorder("reduce")
    tile = list(rec.vec_tile_shapes())
    if not removed or len(tile) != rank:
        return fn()
    rec.set_vec_tile_shapes([d for i, d in enumerate(tile) if i not in removed] or [1], user_loc())
    try:
        return fn()
    finally:
        rec.set_vec_tile_shapes(tile, user_loc())


def _sigmoid32(x: Tensor) -> Tensor:
    return reciprocal(add(exp(neg(x)), 1.0))


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + e**-x), elementwise."""
    x, dt = _widen(_t(x, "sigmoid"))
    return _narrow(_sigmoid32(x), dt)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x), elementwise."""
    x, dt = _widen(_t(x, "silu"))
    return _narrow(mul(x, _sigmoid32(x)), dt)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `dim`."""
    x, dt = _widen(_t(x, "softmax"))
    e = exp(sub(x, amax(x, dim, keepdim=True)))
    return _narrow(div(e, sum(e, dim, keepdim=True)), dt)


def rms_norm(x: Tensor, gamma: Tensor, epsilon: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x**2, -1) + epsilon) * gamma (gamma broadcasts along the last dim)."""
    # gamma first: its cast has its own (1 x C) tile grid, so recorded before x's cast it does
    # not split x's cast from the kernel that uses it.
    gamma, _ = _widen(_t(gamma, "rms_norm"))
    x, dt = _widen(_t(x, "rms_norm"))
    return _narrow(mul(mul(x, rsqrt(add(mean(mul(x, x), -1, keepdim=True), epsilon))), gamma), dt)


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, epsilon: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last dim."""
    gamma, _ = _widen(_t(gamma, "layer_norm"))  # before x, as in rms_norm
    beta, _ = _widen(_t(beta, "layer_norm"))
    x, dt = _widen(_t(x, "layer_norm"))
    xc = sub(x, mean(x, -1, keepdim=True))
    var = mean(mul(xc, xc), -1, keepdim=True)
    return _narrow(add(mul(mul(xc, rsqrt(add(var, epsilon))), gamma), beta), dt)
