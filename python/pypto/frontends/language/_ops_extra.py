"""More operators of ``pypto.language`` (hw-native-sys pypto's names and signatures): partial
combines, products and arg-reductions, comparison and selection, remainders, bitwise and shift
ops, activations, three-operand adds, index sequences, gather / scatter, the matrix-vector forms,
valid-shape and dtype views, the triangular mask, and the dtype and layout names that go with
them.

Each op is the tensor-level op of the same meaning (or an exact composition of such ops) recorded
with the vec tile shape of its tile operands, as the ops of ``_ops``: on tiles a tile of work, on
global tensors the tensor-level op (the language's unified dispatch). The scratch tiles (``tmp``)
the chip's instructions take are accepted and not needed here.
"""

from __future__ import annotations

import enum
import math
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

import pypto._core as _core
from ...core import _dtypes
from ...core import ops as _ops
from ...core._dtypes import (DT_BOOL, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_UINT8, UnsupportedDType,
                             is_int_dtype, to_numpy_dtype)
from ...core.control import sym_min
from ...core.tensor import Tensor
from ...core.tensor_factory import tensor as new_tensor
from ._ops import (_is_tile, _loc, _mark, _one_tile, _require, _static_dims, _tile_shape,
                   matmul as _pl_matmul)
from ._types import MemorySpace, PadValue, TensorLayout

Number = Union[int, float]

# --- dtype and layout names ------------------------------------------------------------------------

# Upstream's DataType names, as the pypto dtypes of the same format.
FP8E4M3FN = _dtypes.DT_FP8E4M3  # OCP e4m3fn (torch.float8_e4m3fn): storage, converted with pl.cast
FP8E5M2 = _dtypes.DT_FP8E5M2
FP8E8M0 = _dtypes.DT_FP8E8M0
HF8 = _dtypes.DT_HF8
# Upstream's FP4 is the logical 4-bit float (E2M1): here the jit parameter dtype of packed bytes.
FP4 = _dtypes.DT_FP4_E2M1
HF4 = _dtypes.DT_HF4  # named; using it is a UserError (no CPU arithmetic)
INT4 = _dtypes.DT_INT4
UINT4 = UnsupportedDType("DT_UINT4", "an NPU storage format with no CPU arithmetic here")

ND = TensorLayout.ND
DN = TensorLayout.DN
NZ = TensorLayout.NZ


class TileLayout(enum.Enum):
    """A tile's element order on the chip (upstream ``pl.TileLayout``); tiles here are row-major,
    the member is accepted where the language takes one."""

    none_box = "none_box"
    row_major = "row_major"
    col_major = "col_major"


class CompactMode(enum.Enum):
    """Upstream ``pl.CompactMode``: whether a tile's valid region is stored compactly (accepted;
    here a tile's value is its valid region)."""

    null = "null"
    normal = "normal"


# --- helpers --------------------------------------------------------------------------------------------


def _err(msg: str, hint: str = "") -> _core.UserError:
    return _core.UserError(msg + _loc() + (f"\nhint: {hint}" if hint else ""))


def _operand(op: str, x: Any, what: str = "operand") -> Tensor:
    if not isinstance(x, Tensor) or not x.is_traced:
        raise _err(f"pl.{op}: the {what} must be a tile or a tensor, got {type(x).__name__}")
    return x


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _scalar(op: str, x: Any, like: Tensor, *, ints: bool = False) -> Any:
    """A scalar operand: a number, a symbolic int (pl.read of an int tensor, a loop index) or the
    one-element value pl.read gives for a float tensor (broadcast as a scalar)."""
    if isinstance(x, Tensor) and getattr(x, "_pl_scalar", False):
        if ints:
            raise _err(f"pl.{op}: the scalar must be an integer, got an element of a {x.dtype} tensor")
        return _ops.reshape(x, [1] * len(like.shape)) if len(x.shape) != len(like.shape) else x
    if isinstance(x, _core.SymbolicScalar):
        return x
    if _is_number(x):
        if ints and not isinstance(x, (int, np.integer)):
            raise _err(f"pl.{op}: the scalar must be an integer, got {x!r}")
        return int(x) if isinstance(x, (int, np.integer)) else float(x)
    raise _err(f"pl.{op}: the scalar must be a number or a value pl.read gave, got {type(x).__name__}",
               f"pl.{op.rstrip('s')} takes two tiles" if op.endswith("s") else "")


def _same_dtype(op: str, a: Tensor, b: Tensor) -> None:
    if a.dtype != b.dtype:
        raise _err(f"pl.{op}: the operands' dtypes differ ({_core.dtype_name(a.dtype)} and "
                   f"{_core.dtype_name(b.dtype)})", "pl.cast one operand to the other's dtype")


def _int_only(op: str, *ts: Tensor) -> None:
    for t in ts:
        if not is_int_dtype(t.dtype):
            raise _err(f"pl.{op} is a bitwise op on integer tiles, got {_core.dtype_name(t.dtype)}",
                       "pl.cast to an integer dtype, or pl.reinterpret_view the bits")


def _mem(t: Any) -> MemorySpace:
    return getattr(t, "_pl_mem", MemorySpace.Vec)


def _like(out: Tensor, src: Tensor) -> Tensor:
    """`out` marked as a tile of `src`'s tile shape and memory (a tile op's result)."""
    return _mark(out, _tile_shape(src), _mem(src)) if _is_tile(src) else out


def _same_extents(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y or (isinstance(x, int) and isinstance(y, int) and x == y)
                                    or _core.to_sym(x).same_as(_core.to_sym(y)) for x, y in zip(a, b))


def _overlay(base: Tensor, top: Tensor) -> Tensor:
    """A new value: `base` with `top` written at its origin (both of one dtype)."""
    out = new_tensor(list(base.shape), base.dtype)
    _one_tile(lambda: _ops.assemble(base, [0] * len(base.shape), out), [base])
    _one_tile(lambda: _ops.assemble(top, [0] * len(top.shape), out), [top])
    return out


# --- partial combines -----------------------------------------------------------------------------------


def _part(name: str, fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    def op(lhs: Tensor, rhs: Tensor) -> Tensor:
        _require(name, "vector")
        a, b = _operand(name, lhs, "lhs"), _operand(name, rhs, "rhs")
        if len(a.shape) != len(b.shape):
            raise _err(f"pl.{name}: the operands have ranks {len(a.shape)} and {len(b.shape)}; they must match")
        _same_dtype(name, a, b)
        if _same_extents(a.shape, b.shape):
            return _one_tile(lambda: fn(a, b), [a, b])
        # The result is lhs's valid region: lhs op rhs where both hold data, lhs where only it does.
        ov = [min(x, y) if isinstance(x, int) and isinstance(y, int) else sym_min(x, y)
              for x, y in zip(a.shape, b.shape)]
        zero = [0] * len(ov)
        inner = _one_tile(lambda: fn(_ops.view(a, ov, zero), _ops.view(b, ov, zero)), [a, b])
        return _like(_overlay(a, inner), a)
    op.__name__ = name
    op.__doc__ = (f"``pl.{name}(lhs, rhs)``: elementwise over lhs's valid region; where rhs holds no "
                  "data (its valid region is smaller) the result is lhs's element (upstream's partial "
                  "combine, TPART*). Tiles or tensors, one dtype.")
    return op


part_add = _part("part_add", _ops.add)
part_mul = _part("part_mul", _ops.mul)
part_max = _part("part_max", _ops.maximum)
part_min = _part("part_min", _ops.minimum)


# --- products and arg-reductions -------------------------------------------------------------------


def _reduce(name: str, fn: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    def op(input: Tensor, tmp_tile: Optional[Tensor] = None) -> Tensor:  # noqa: A002 - upstream's name
        _require(name, "vector")
        x = _operand(name, input, "input")
        if len(x.shape) < (2 if name.startswith("col") else 1):
            raise _err(f"pl.{name}: a {len(x.shape)}-D input has no column axis")
        return _one_tile(lambda: fn(x), [x])
    op.__name__ = name
    return op


row_prod = _reduce("row_prod", lambda t: _ops.prod(t, -1, keepdim=True))
col_prod = _reduce("col_prod", lambda t: _ops.prod(t, -2, keepdim=True))
row_prod.__doc__ = "``pl.row_prod(x[, tmp_tile])``: product along the last dim, kept as size 1 ([R, 1])."
col_prod.__doc__ = "``pl.col_prod(x)``: product along the dim before the last, kept as size 1 ([1, C])."
# int32 indices of the first extreme (a NaN counts as the extreme, as numpy's).
row_argmax = _reduce("row_argmax", lambda t: _ops.argmax(t, -1, keepdim=True))
row_argmin = _reduce("row_argmin", lambda t: _ops.argmin(t, -1, keepdim=True))
col_argmax = _reduce("col_argmax", lambda t: _ops.argmax(t, -2, keepdim=True))
col_argmin = _reduce("col_argmin", lambda t: _ops.argmin(t, -2, keepdim=True))
for _f, _what in ((row_argmax, "column index of each row's maximum ([R, 1] int32)"),
                  (row_argmin, "column index of each row's minimum ([R, 1] int32)"),
                  (col_argmax, "row index of each column's maximum ([1, C] int32)"),
                  (col_argmin, "row index of each column's minimum ([1, C] int32)")):
    _f.__doc__ = (f"``pl.{_f.__name__}(x[, tmp_tile])``: the {_what}; the first one on ties, a NaN counts "
                  "as the extreme (numpy's argmax / argmin).")


# --- broadcast values ------------------------------------------------------------------------------------


def expands(target: Tensor, scalar: Any) -> Tensor:
    """``pl.expands(target, scalar)``: a tile (or tensor) of `target`'s shape and dtype holding
    `scalar` (`target` gives the shape only; it is not read)."""
    _require("expands", "vector")
    t = _operand("expands", target, "target")
    v = _scalar("expands", scalar, t)
    if isinstance(v, Tensor):  # a float element pl.read gave
        out = _one_tile(lambda: _ops.expand_clone(_ops.cast(v, t.dtype), list(t.shape)), [t])
    else:
        out = _ops.creation.full_value(list(t.shape), v, t.dtype)
    return _like(out, t)


def expand_clone(src: Tensor, target: Tensor) -> Tensor:
    """``pl.expand_clone(src, target)``: `src` broadcast along its size-1 dims to `target`'s shape
    (same rank), as a new value."""
    _require("expand_clone", "vector")
    s, t = _operand("expand_clone", src, "src"), _operand("expand_clone", target, "target")
    if len(s.shape) != len(t.shape):
        raise _err(f"pl.expand_clone: src is {len(s.shape)}-D {list(s.shape)}, target {len(t.shape)}-D "
                   f"{list(t.shape)}; they must have the same rank", "pl.reshape src first")
    for d, (a, b) in enumerate(zip(s.shape, t.shape)):
        if isinstance(a, int) and isinstance(b, int) and a != 1 and a != b:
            raise _err(f"pl.expand_clone: src {list(s.shape)} does not broadcast to {list(t.shape)} (dim {d})")
    return _like(_one_tile(lambda: _ops.expand_clone(s, list(t.shape)), [s, t]), t)


# --- comparison and selection --------------------------------------------------------------------------

_CMP = (_ops.eq, _ops.ne, _ops.lt, _ops.le, _ops.gt, _ops.ge)
_CMP_NAMES = ("eq", "ne", "lt", "le", "gt", "ge")


def _cmp_fn(op: str, cmp_type: Any) -> Callable[[Any, Any], Tensor]:
    if isinstance(cmp_type, bool) or not isinstance(cmp_type, (int, np.integer)) or not 0 <= cmp_type <= 5:
        raise _err(f"pl.{op}: cmp_type must be 0..5 (0=eq, 1=ne, 2=lt, 3=le, 4=gt, 5=ge), got {cmp_type!r}")
    return _CMP[int(cmp_type)]


def _compare(op: str, lhs: Tensor, rhs: Any, cmp_type: Any) -> Tensor:
    fn = _cmp_fn(op, cmp_type)
    a = _operand(op, lhs, "lhs")
    b = rhs if isinstance(rhs, Tensor) and rhs.is_traced and not getattr(rhs, "_pl_scalar", False) \
        else _scalar(op, rhs, a)
    if isinstance(b, Tensor) and not getattr(rhs, "_pl_scalar", False):
        _same_dtype(op, a, b)
    mask = _one_tile(lambda: fn(a, b), [a, b])
    if _is_tile(a) or (isinstance(b, Tensor) and _is_tile(b)):
        return mask  # a tile's predicate mask (DT_BOOL), what pl.sel / pl.sels take
    # A tensor compare is 0 / 1 in lhs's dtype (upstream's tensor.cmp).
    return _ops.cast(mask, a.dtype)


def cmp(lhs: Tensor, rhs: Any, cmp_type: int = 0) -> Tensor:
    """``pl.cmp(lhs, rhs, cmp_type=0)``: elementwise compare, ``cmp_type`` 0=eq 1=ne 2=lt 3=le
    4=gt 5=ge; `rhs` a tile / tensor of lhs's dtype or a scalar. On tiles the result is the
    predicate mask for ``pl.sel`` / ``pl.sels`` (a DT_BOOL tile of lhs's shape here; the chip
    packs it in bits); on global tensors 0 / 1 in lhs's dtype. NaN compares as numpy's."""
    _require("cmp", "vector")
    return _compare("cmp", lhs, rhs, cmp_type)


def cmps(lhs: Tensor, rhs: Any, cmp_type: int = 0) -> Tensor:
    """``pl.cmps(lhs, scalar, cmp_type=0)``: ``pl.cmp`` against a scalar."""
    _require("cmps", "vector")
    if isinstance(rhs, Tensor) and not getattr(rhs, "_pl_scalar", False):
        raise _err("pl.cmps compares with a scalar, got a tile", "pl.cmp compares two tiles")
    return _compare("cmps", lhs, rhs, cmp_type)


def _mask(op: str, mask: Any, like: Tensor) -> Tensor:
    m = _operand(op, mask, "mask")
    if m.dtype != DT_BOOL:
        m = _one_tile(lambda: _ops.ne(m, 0), [m])  # a 0 / 1 compare of tensors: nonzero selects
    ls, ms = list(like.shape), list(m.shape)
    if len(ms) != len(ls) or any(isinstance(a, int) and isinstance(b, int) and a != b and a != 1
                                 for a, b in zip(ms, ls)):
        raise _err(f"pl.{op}: the mask {ms} does not cover the operand {ls}; a bit-packed mask (the chip's "
                   "TCMP output read from memory) is not decoded here", "pass the mask pl.cmp / pl.cmps gave")
    return m


def sel(mask: Tensor, lhs: Tensor, rhs: Tensor, tmp: Optional[Tensor] = None) -> Tensor:
    """``pl.sel(mask, lhs, rhs, tmp)``: lhs where `mask` is true, else rhs (the mask from
    ``pl.cmp`` / ``pl.cmps``; a 0 / 1 tile of the operands' shape works too)."""
    _require("sel", "vector")
    a, b = _operand("sel", lhs, "lhs"), _operand("sel", rhs, "rhs")
    _same_dtype("sel", a, b)
    m = _mask("sel", mask, a)
    return _like(_one_tile(lambda: _ops.where(m, a, b), [m, a, b]), a)


def sels(mask: Tensor, src: Tensor, tmp: Optional[Tensor] = None, scalar: Any = None) -> Tensor:
    """``pl.sels(mask, src, tmp, scalar)``: src where `mask` is true, else `scalar`."""
    _require("sels", "vector")
    s = _operand("sels", src, "src")
    if scalar is None:
        raise _err("pl.sels: give the scalar chosen where the mask is false: pl.sels(mask, src, tmp, scalar)")
    v = _scalar("sels", scalar, s)
    if isinstance(v, (int, float)) and is_int_dtype(s.dtype):
        info = np.iinfo(to_numpy_dtype(s.dtype))
        if v != int(v) or not info.min <= v <= info.max:
            raise _err(f"pl.sels: {v!r} is not a value of {_core.dtype_name(s.dtype)}")
    if isinstance(v, Tensor):
        v = _ops.cast(v, s.dtype) if v.dtype != s.dtype else v
    m = _mask("sels", mask, s)
    return _like(_one_tile(lambda: _ops.where(m, s, v), [m, s]), s)


# --- remainders ------------------------------------------------------------------------------------------


def _binary_op(name: str, fn: Callable[[Any, Any], Tensor], a: Tensor, b: Any, *, ints: bool = False,
               scalar_only: bool = False) -> Tensor:
    x = _operand(name, a, "lhs")
    if isinstance(b, Tensor) and b.is_traced and not getattr(b, "_pl_scalar", False):
        if scalar_only:
            raise _err(f"pl.{name} takes a scalar right-hand side, got a tile", f"pl.{name[:-1]} takes two tiles")
        if ints:
            _int_only(name, x, b)
        _same_dtype(name, x, b)
        y: Any = b
    else:
        if ints:
            _int_only(name, x)
        y = _scalar(name, b, x, ints=ints)
    return _one_tile(lambda: fn(x, y), [x, y])


def rem(lhs: Tensor, rhs: Any, tmp: Optional[Tensor] = None) -> Tensor:
    """``pl.rem(lhs, rhs, tmp)``: lhs % rhs, the result with the divisor's sign (Python's %,
    numpy.remainder; an integer x % 0 is 0). `rhs` a tile or a scalar."""
    _require("rem", "vector")
    return _binary_op("rem", _ops.remainder, lhs, rhs)


def rems(lhs: Tensor, rhs: Any, tmp: Optional[Tensor] = None) -> Tensor:
    """``pl.rems(lhs, scalar, tmp)``: ``pl.rem`` by a scalar."""
    _require("rems", "vector")
    return _binary_op("rems", _ops.remainder, lhs, rhs, scalar_only=True)


def fmods(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.fmods(lhs, scalar)``: C's fmod by a scalar (the result has the dividend's sign, as
    torch.fmod)."""
    _require("fmods", "vector")
    return _binary_op("fmods", _ops.fmod, lhs, rhs, scalar_only=True)


# --- bitwise and shifts ----------------------------------------------------------------------------------


def and_(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.and_(lhs, rhs)``: lhs & rhs on integer tiles; `rhs` a tile or an int."""
    _require("and_", "vector")
    return _binary_op("and_", _ops.bitwise_and, lhs, rhs, ints=True)


def ands(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.ands(lhs, scalar)``: lhs & scalar."""
    _require("ands", "vector")
    return _binary_op("ands", _ops.bitwise_and, lhs, rhs, ints=True, scalar_only=True)


def or_(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.or_(lhs, rhs)``: lhs | rhs on integer tiles; `rhs` a tile or an int."""
    _require("or_", "vector")
    return _binary_op("or_", _ops.bitwise_or, lhs, rhs, ints=True)


def ors(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.ors(lhs, scalar)``: lhs | scalar."""
    _require("ors", "vector")
    return _binary_op("ors", _ops.bitwise_or, lhs, rhs, ints=True, scalar_only=True)


def xor(lhs: Tensor, rhs: Any, tmp: Optional[Tensor] = None) -> Tensor:
    """``pl.xor(lhs, rhs[, tmp])``: lhs ^ rhs on integer tiles; `rhs` a tile or an int (the
    chip's scratch tile is accepted, not needed)."""
    _require("xor", "vector")
    return _binary_op("xor", _ops.bitwise_xor, lhs, rhs, ints=True)


def xors(lhs: Tensor, rhs: Any, tmp: Optional[Tensor] = None) -> Tensor:
    """``pl.xors(lhs, scalar[, tmp])``: lhs ^ scalar."""
    _require("xors", "vector")
    return _binary_op("xors", _ops.bitwise_xor, lhs, rhs, ints=True, scalar_only=True)


def not_(input: Tensor) -> Tensor:  # noqa: A002 - upstream's name
    """``pl.not_(x)``: ~x on an integer tile (the chip's TNOT takes 16-bit ones; every integer
    dtype works here)."""
    _require("not_", "vector")
    x = _operand("not_", input, "input")
    _int_only("not_", x)
    return _one_tile(lambda: _ops.bitwise_not(x), [x])


def _shift(name: str, fn: Callable[[Any, Any], Tensor], lhs: Tensor, rhs: Any, scalar_only: bool) -> Tensor:
    if not (isinstance(rhs, Tensor) and rhs.is_traced) and isinstance(rhs, (int, np.integer)) \
            and not isinstance(rhs, bool) and rhs < 0:
        raise _err(f"pl.{name}: the shift amount must be >= 0, got {rhs}")
    return _binary_op(name, fn, lhs, rhs, ints=True, scalar_only=scalar_only)


def shl(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.shl(lhs, rhs)``: lhs << rhs on integer tiles (of one dtype; a shift of the width or
    more gives 0, as numpy); `rhs` a tile or an int >= 0."""
    _require("shl", "vector")
    return _shift("shl", _ops.bitwise_left_shift, lhs, rhs, False)


def shls(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.shls(lhs, scalar)``: lhs << scalar (scalar >= 0)."""
    _require("shls", "vector")
    return _shift("shls", _ops.bitwise_left_shift, lhs, rhs, True)


def shr(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.shr(lhs, rhs)``: lhs >> rhs, arithmetic for signed dtypes (a shift of the width or
    more gives 0, or -1 for a negative signed value, as numpy)."""
    _require("shr", "vector")
    return _shift("shr", _ops.bitwise_right_shift, lhs, rhs, False)


def shrs(lhs: Tensor, rhs: Any) -> Tensor:
    """``pl.shrs(lhs, scalar)``: lhs >> scalar (scalar >= 0)."""
    _require("shrs", "vector")
    return _shift("shrs", _ops.bitwise_right_shift, lhs, rhs, True)


# --- activations and three-operand adds ------------------------------------------------------------------


def _float_only(op: str, t: Tensor) -> None:
    if is_int_dtype(t.dtype) or t.dtype == DT_BOOL:
        raise _err(f"pl.{op} takes float tiles, got {_core.dtype_name(t.dtype)}")


def prelu(tile: Tensor, slope: Tensor, tmp: Optional[Tensor] = None) -> Tensor:
    """``pl.prelu(x, slope, tmp)``: x where x > 0, else x * slope (slope a tile of x's shape, or
    one that broadcasts to it)."""
    _require("prelu", "vector")
    x, s = _operand("prelu", tile, "tile"), _operand("prelu", slope, "slope")
    _float_only("prelu", x)
    _same_dtype("prelu", x, s)
    return _like(_one_tile(lambda: _ops.where(_ops.gt(x, 0.0), x, _ops.mul(x, s)), [x, s]), x)


def lrelu(tile: Tensor, slope: Any) -> Tensor:
    """``pl.lrelu(x, slope)``: x where x > 0, else x * slope (a scalar)."""
    _require("lrelu", "vector")
    x = _operand("lrelu", tile, "tile")
    _float_only("lrelu", x)
    s = _scalar("lrelu", slope, x)
    return _one_tile(lambda: _ops.where(_ops.gt(x, 0.0), x, _ops.mul(x, s)), [x])


def _three(name: str, f1: Callable[[Any, Any], Tensor], f2: Callable[[Any, Any], Tensor],
           scalar_mid: bool) -> Callable[..., Tensor]:
    def op(lhs: Tensor, rhs: Any, rhs2: Tensor) -> Tensor:
        _require(name, "vector")
        a, c = _operand(name, lhs, "lhs"), _operand(name, rhs2, "rhs2")
        _same_dtype(name, a, c)
        if scalar_mid:
            if isinstance(rhs, Tensor) and not getattr(rhs, "_pl_scalar", False):
                raise _err(f"pl.{name} takes a scalar as its second operand, got a tile",
                           f"pl.{name[:-2]}c takes three tiles")
            b: Any = _scalar(name, rhs, a)
        else:
            b = _operand(name, rhs, "rhs")
            _same_dtype(name, a, b)
        # Left to right, each step rounded: (lhs op rhs) op rhs2.
        return _one_tile(lambda: f2(f1(a, b), c), [a, b, c])
    op.__name__ = name
    return op


addc = _three("addc", _ops.add, _ops.add, False)
subc = _three("subc", _ops.sub, _ops.sub, False)
addsc = _three("addsc", _ops.add, _ops.add, True)
subsc = _three("subsc", _ops.sub, _ops.sub, True)
addc.__doc__ = "``pl.addc(a, b, c)``: (a + b) + c elementwise."
subc.__doc__ = "``pl.subc(a, b, c)``: (a - b) - c elementwise."
addsc.__doc__ = "``pl.addsc(a, scalar, c)``: (a + scalar) + c elementwise."
subsc.__doc__ = "``pl.subsc(a, scalar, c)``: (a - scalar) - c elementwise."


# --- index sequences, the triangular mask ------------------------------------------------------------


def arange(start: Any, shape: Sequence[int], dtype: Any = DT_INT32, descending: bool = False) -> Tensor:
    """``pl.arange(start, shape, dtype=pl.INT32, descending=False)`` (upstream's ``tensor.ci``):
    start, start + 1, ... (or start, start - 1, ... descending) along the last dim of a [1, ..., N]
    tile of INT16 or INT32 (the chip fills the first row only, so the leading dims are 1)."""
    _require("arange", "vector")
    dims = _static_dims(shape, "arange", "shape")
    if dtype not in (DT_INT16, DT_INT32):
        raise _err(f"pl.arange: dtype must be pl.INT16 or pl.INT32, got {dtype!r}")
    if any(d != 1 for d in dims[:-1]):
        raise _err(f"pl.arange: the shape {dims} must have leading dims of 1 (the sequence fills one row)",
                   f"pl.arange(start, [1, {math.prod(dims)}]) and pl.reshape it")
    n = dims[-1]
    if isinstance(start, bool) or not isinstance(start, (int, np.integer, _core.SymbolicScalar)):
        raise _err(f"pl.arange: start must be an integer (or a scalar pl.read gave), got {start!r}")
    if isinstance(start, (int, np.integer)):
        info = np.iinfo(to_numpy_dtype(dtype))
        last = int(start) - (n - 1) if descending else int(start) + n - 1
        if not (info.min <= int(start) <= info.max and info.min <= last <= info.max):
            raise _err(f"pl.arange: {n} values from {int(start)} leave {_core.dtype_name(dtype)}")
    idx = _ops.arange(n)  # int32
    seq = _ops.sub(start, idx) if descending else _ops.add(idx, start)
    if dtype != DT_INT32:
        seq = _ops.cast(seq, dtype)
    return _mark(_ops.reshape(seq, dims), dims, MemorySpace.Vec)


def tri(diagonal: Any, shape: Sequence[int], valid_shape: Optional[Sequence[int]] = None, dtype: Any = DT_INT32,
        upper: bool = False) -> Tensor:
    """``pl.tri(diagonal, shape, valid_shape=None, dtype=pl.INT32, upper=False)``: 1 where
    j <= i + diagonal (upper: j >= i + diagonal), else 0, over the valid region (`diagonal` may
    be a scalar known at run time)."""
    _require("tri", "vector")
    dims = _static_dims(shape, "tri", "shape")
    if len(dims) < 2:
        raise _err(f"pl.tri: the shape {dims} needs 2 or more dims")
    valid = dims if valid_shape is None else list(valid_shape)
    if len(valid) != len(dims) or any(isinstance(v, int) and not 0 < v <= d for v, d in zip(valid, dims)):
        raise _err(f"pl.tri: valid_shape {valid} must have one extent in 1..dim per dim of the shape {dims}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer, _core.SymbolicScalar)):
        raise _err(f"pl.tri: diagonal must be an integer, got {diagonal!r}")
    ones = _ops.creation.full_value(valid, 1, dtype)
    d = int(diagonal) if isinstance(diagonal, (int, np.integer)) else diagonal
    return _mark(_ops.triu(ones, d) if upper else _ops.tril(ones, d), dims, MemorySpace.Vec)


# --- gather and scatter ----------------------------------------------------------------------------------


def _index_dtype(op: str, data: Tensor, index: Tensor) -> None:
    if index.dtype not in (DT_INT32, DT_INT16):
        raise _err(f"pl.{op}: the index must be INT32 (or INT16), got {_core.dtype_name(index.dtype)}")


def gather(input: Tensor, dim: Optional[int] = None, index: Optional[Tensor] = None, *,  # noqa: A002
           mask_pattern: Optional[int] = None, output_dtype: Any = None, kvalue: Any = None, cmp_mode: Any = None,
           out_cols: Optional[int] = None, offset: int = 0, count_dtype: Any = None) -> Tensor:
    """``pl.gather(x, dim, index)``: out[b, k] = x[b, index[b, k]] along `dim` (torch.gather; an
    index outside the dim fails the run). ``pl.gather(x, mask_pattern=p)``: the columns the mask
    pattern picks (1: every 2nd from 0, 2: from 1, 3-6: every 4th from 0..3, 7: all), with
    ``output_dtype`` a bit view of the same width. The compare form (``kvalue=``) is refused."""
    _require("gather", "vector")
    x = _operand("gather", input, "input")
    if kvalue is not None or cmp_mode is not None or out_cols is not None:
        raise _err("pl.gather: the compare form (kvalue=, cmp_mode=, out_cols=) is not supported here yet")
    if mask_pattern is not None:
        if dim is not None or index is not None:
            raise _err("pl.gather: the index form (dim, index) and the mask form (mask_pattern=) are exclusive")
        if isinstance(mask_pattern, bool) or not isinstance(getattr(mask_pattern, "value", mask_pattern), int) \
                or not 1 <= int(getattr(mask_pattern, "value", mask_pattern)) <= 7:
            raise _err(f"pl.gather: mask_pattern must be 1..7, got {mask_pattern!r}")
        mode = int(getattr(mask_pattern, "value", mask_pattern))
        out = _one_tile(lambda: _ops.gathermask(x, mode), [x])
        if output_dtype is not None and output_dtype != out.dtype:
            if _core.dtype_bytes(output_dtype) != _core.dtype_bytes(out.dtype):
                raise _err(f"pl.gather: output_dtype {output_dtype!r} must have the input's width "
                           f"({_core.dtype_name(out.dtype)})")
            out = _one_tile(lambda: _ops.view(out, dtype=output_dtype), [out])
        return out
    if dim is None or index is None:
        raise _err("pl.gather takes (input, dim, index), or mask_pattern=")
    idx = _operand("gather", index, "index")
    _index_dtype("gather", x, idx)
    if len(idx.shape) != len(x.shape):
        raise _err(f"pl.gather: the index is {len(idx.shape)}-D, the input {len(x.shape)}-D; they must match")
    return _one_tile(lambda: _ops.gather(x, dim, idx), [x, idx])


def scatter(input: Tensor, dim: Optional[int] = None, index: Optional[Tensor] = None,  # noqa: A002
            src: Optional[Tensor] = None, *, mask_pattern: Optional[int] = None, dst: Optional[Tensor] = None) -> Tensor:
    """``pl.scatter(x, dim, index, src)``: a copy of `x` with out[b, index[b, k]] = src[b, k]
    along `dim` (x itself is unchanged; of repeated positions one write wins). The mask form
    (``mask_pattern=``, ``dst=``) is refused."""
    _require("scatter", "vector")
    x = _operand("scatter", input, "input")
    if mask_pattern is not None or dst is not None:
        raise _err("pl.scatter: the mask form (mask_pattern=, dst=) is not supported here yet")
    if dim is None or index is None or src is None:
        raise _err("pl.scatter takes (input, dim, index, src)")
    idx, s = _operand("scatter", index, "index"), _operand("scatter", src, "src")
    _index_dtype("scatter", x, idx)
    _same_dtype("scatter", x, s)
    if list(idx.shape) != list(s.shape):
        raise _err(f"pl.scatter: the index {list(idx.shape)} and src {list(s.shape)} must have one shape")
    return _like(_one_tile(lambda: _ops.scatter(x, dim, idx, s), [x, idx, s]), x)


def tile_gather(src: Tensor, indices: Tensor, tmp: Optional[Tensor] = None) -> Tensor:
    """``pl.tile.gather(src, indices, tmp)``: out[i, j] = src.flat[indices[i, j]] (flat indices
    into the source tile; the result has the indices' shape and src's dtype)."""
    _require("tile.gather", "vector")
    x, idx = _operand("tile.gather", src, "src"), _operand("tile.gather", indices, "indices")
    _index_dtype("tile.gather", x, idx)
    n = math.prod(int(d) for d in x.shape) if all(isinstance(d, int) for d in x.shape) else None
    m = math.prod(int(d) for d in idx.shape) if all(isinstance(d, int) for d in idx.shape) else None
    if n is None or m is None:
        raise _err("pl.tile.gather: a tile with a run-time valid shape is not supported here yet")
    flat = _one_tile(lambda: _ops.gather(_ops.reshape(x, [1, n]), 1,
                                         _ops.reshape(idx, [1, m])), [x, idx])
    return _like(_one_tile(lambda: _ops.reshape(flat, list(idx.shape)), [idx]), idx)


def tile_scatter(dst: Tensor, src: Tensor, indexes: Tensor) -> Tensor:
    """``pl.tile.scatter(dst, src, indexes)``: dst with dst.flat[indexes[i, j]] = src[i, j] (a new
    tile here; the chip rewrites dst in place)."""
    _require("tile.scatter", "vector")
    d, s = _operand("tile.scatter", dst, "dst"), _operand("tile.scatter", src, "src")
    idx = _operand("tile.scatter", indexes, "indexes")
    _index_dtype("tile.scatter", d, idx)
    _same_dtype("tile.scatter", d, s)
    if list(idx.shape) != list(s.shape):
        raise _err(f"pl.tile.scatter: indexes {list(idx.shape)} and src {list(s.shape)} must have one shape")
    dims = [d.shape, s.shape]
    if not all(isinstance(v, int) for sh in dims for v in sh):
        raise _err("pl.tile.scatter: a tile with a run-time valid shape is not supported here yet")
    n, m = math.prod(d.shape), math.prod(s.shape)
    flat = _one_tile(lambda: _ops.scatter(_ops.reshape(d, [1, n]), 1, _ops.reshape(idx, [1, m]),
                                          _ops.reshape(s, [1, m])), [d, s, idx])
    return _like(_one_tile(lambda: _ops.reshape(flat, list(d.shape)), [d]), d)


# --- the cube: batched and matrix-vector forms ---------------------------------------------------------

_ACC_PHASES = ("unspecified", "partial", "final")


def batch_matmul(lhs: Tensor, rhs: Tensor) -> Tensor:
    """``pl.batch_matmul(a, b)``: [..., M, K] @ [..., K, N] with the batch dims broadcast, into
    the accumulator dtype (fp32; int32 for int8)."""
    _require("batch_matmul", "cube")
    a, b = _operand("batch_matmul", lhs, "lhs"), _operand("batch_matmul", rhs, "rhs")
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise _err(f"pl.batch_matmul takes tiles of 2 or more dims, got {list(a.shape)} and {list(b.shape)}")
    ka, kb = a.shape[-1], b.shape[-2]
    if isinstance(ka, int) and isinstance(kb, int) and ka != kb:
        raise _err(f"pl.batch_matmul: lhs {list(a.shape)} and rhs {list(b.shape)} disagree on K ({ka} != {kb})")
    acc = DT_INT32 if a.dtype in (DT_INT8, DT_UINT8) else DT_FP32
    ra, rb = len(a.shape), len(b.shape)
    if ra != rb:  # the shorter operand gains leading batch dims of 1, as numpy's matmul
        if ra < rb:
            a = _one_tile(lambda: _ops.reshape(a, [1] * (rb - ra) + list(a.shape)), [a])
        else:
            b = _one_tile(lambda: _ops.reshape(b, [1] * (ra - rb) + list(b.shape)), [b])
    batch = []
    for d, (x, y) in enumerate(zip(a.shape[:-2], b.shape[:-2])):
        if isinstance(x, int) and isinstance(y, int) and x != y and 1 not in (x, y):
            raise _err(f"pl.batch_matmul: batch dims {list(a.shape[:-2])} and {list(b.shape[:-2])} do not "
                       f"broadcast (dim {d})")
        batch.append(y if x == 1 else x)
    if list(a.shape[:-2]) != batch:
        a = _one_tile(lambda: _ops.expand_clone(a, batch + list(a.shape[-2:])), [a])
    if list(b.shape[:-2]) != batch:
        b = _one_tile(lambda: _ops.expand_clone(b, batch + list(b.shape[-2:])), [b])
    out = _ops.matmul(a, b, acc)
    m, n = a.shape[-2], b.shape[-1]
    tile = [int(x) if isinstance(x, int) else 1 for x in batch] + \
        [m if isinstance(m, int) else (_tile_shape(lhs) or [1, 1])[-2],
         n if isinstance(n, int) else (_tile_shape(rhs) or [1, 1])[-1]]
    return _mark(out, tile, MemorySpace.Acc)


def _gemv_check(op: str, lhs: Tensor, rhs: Tensor, acc_phase: str) -> None:
    if acc_phase not in _ACC_PHASES:
        raise _err(f"pl.{op}: acc_phase must be one of {list(_ACC_PHASES)}, got {acc_phase!r}")
    a, b = _operand(op, lhs, "lhs"), _operand(op, rhs, "rhs")
    rows = (_tile_shape(a) or list(a.shape))[-2] if len(a.shape) >= 2 else None
    if len(a.shape) != 2 or rows != 1:
        raise _err(f"pl.{op}: lhs must be a row vector [1, K], got {list(_tile_shape(a) or a.shape)}",
                   "pl.matmul multiplies matrices")
    if len(b.shape) != 2:
        raise _err(f"pl.{op}: rhs must be a [K, N] matrix, got {list(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (DT_INT8, DT_FP32, _dtypes.DT_FP16, _dtypes.DT_BF16):
        raise _err(f"pl.{op}: lhs and rhs must share one of INT8, FP16, BF16, FP32, got "
                   f"{_core.dtype_name(a.dtype)} and {_core.dtype_name(b.dtype)}")


def _acc_dtype(t: Tensor) -> Any:
    return DT_INT32 if t.dtype == DT_INT8 else DT_FP32


def gemv(lhs: Tensor, rhs: Tensor, acc_phase: str = "unspecified") -> Tensor:
    """``pl.gemv(a, b)``: [1, K] @ [K, N] into the accumulator dtype (fp32; int32 for int8).
    ``acc_phase`` (the chip's accumulation phase) is checked and has no effect here."""
    _require("gemv", "cube")
    _gemv_check("gemv", lhs, rhs, acc_phase)
    return _pl_matmul(lhs, rhs, _acc_dtype(lhs))


def gemv_acc(acc: Tensor, lhs: Tensor, rhs: Tensor, acc_phase: str = "unspecified") -> Tensor:
    """``pl.gemv_acc(acc, a, b)``: acc + [1, K] @ [K, N] (acc in the accumulator dtype)."""
    _require("gemv_acc", "cube")
    _gemv_check("gemv_acc", lhs, rhs, acc_phase)
    c = _operand("gemv_acc", acc, "acc")
    if c.dtype != _acc_dtype(lhs):
        raise _err(f"pl.gemv_acc: acc must be {_core.dtype_name(_acc_dtype(lhs))} (the accumulator dtype), got "
                   f"{_core.dtype_name(c.dtype)}")
    prod = _pl_matmul(lhs, rhs, c.dtype)
    out = _one_tile(lambda: _ops.add(c, prod), [c, prod])
    return _mark(out, _tile_shape(c) or _tile_shape(prod), MemorySpace.Acc) if _is_tile(out) else out


def gemv_bias(lhs: Tensor, rhs: Tensor, bias: Tensor, acc_phase: str = "unspecified") -> Tensor:
    """``pl.gemv_bias(a, b, bias)``: [1, K] @ [K, N] + bias ([1, N], in the accumulator dtype)."""
    _require("gemv_bias", "cube")
    _gemv_check("gemv_bias", lhs, rhs, acc_phase)
    bs = _operand("gemv_bias", bias, "bias")
    if bs.dtype != _acc_dtype(lhs):
        raise _err(f"pl.gemv_bias: bias must be {_core.dtype_name(_acc_dtype(lhs))} (the accumulator dtype), got "
                   f"{_core.dtype_name(bs.dtype)}")
    prod = _pl_matmul(lhs, rhs, bs.dtype)
    out = _one_tile(lambda: _ops.add(prod, bs), [prod, bs])
    return _mark(out, _tile_shape(prod) or _tile_shape(bs), MemorySpace.Acc) if _is_tile(out) else out


# --- valid shape, padding and dtype views --------------------------------------------------------------


def set_validshape(input: Tensor, valid_rows: Any, valid_cols: Any) -> Tensor:  # noqa: A002
    """``pl.set_validshape(x, rows, cols)``: the same 2-D tile with `rows` x `cols` of it valid
    (no data moves). The valid region can shrink here; growing it past the data the tile holds
    is refused (the chip would expose whatever its buffer held)."""
    _require("set_validshape", "move")
    x = _operand("set_validshape", input, "input")
    if len(x.shape) != 2:
        raise _err(f"pl.set_validshape takes a 2-D tile, got {list(x.shape)}")
    new = [valid_rows, valid_cols]
    for v, have, what in zip(new, x.shape, ("rows", "cols")):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, _core.SymbolicScalar)):
            raise _err(f"pl.set_validshape: valid_{what} must be an integer, got {v!r}")
        if isinstance(v, (int, np.integer)) and (v < 0 or (isinstance(have, int) and v > have)):
            raise _err(f"pl.set_validshape: valid_{what} {int(v)} is outside 0..{have}, the {what} that hold "
                       "data", "load the tile with the valid_shape you need, or pl.fillpad_expand it")
    new = [int(v) if isinstance(v, (int, np.integer)) else v for v in new]
    out = _ops.view(x, list(x.shape), [0, 0], valid_shape=new)
    return _like(out, x)


def _pad_number(op: str, pad_value: Any, dtype: Any) -> Number:
    v = getattr(pad_value, "value", pad_value) if isinstance(pad_value, PadValue) else pad_value
    if isinstance(pad_value, PadValue) and v in ("zero",):
        return 0
    if is_int_dtype(dtype):
        info = np.iinfo(to_numpy_dtype(dtype))
        table = {"max": int(info.max), "min": int(info.min)}
    else:
        table = {"max": math.inf, "min": -math.inf}
    if isinstance(pad_value, PadValue):
        if v not in table:
            raise _err(f"pl.{op}: pad_value {pad_value} leaves the padding undefined; give PadValue.zero, "
                       "max or min")
        return table[v]
    if _is_number(pad_value) and (pad_value == 0 or pad_value in (math.inf, -math.inf)):
        return 0 if pad_value == 0 else table["max" if pad_value > 0 else "min"]
    raise _err(f"pl.{op}: pad_value must be a pl.PadValue or 0, math.inf, -math.inf (the chip's three padding "
               f"modes), got {pad_value!r}")


def fillpad_expand(value: Tensor, shape: Sequence[int], pad_value: Any = PadValue.zero) -> Tensor:
    """``pl.fillpad_expand(x, shape, pad_value=pl.PadValue.zero)``: a larger tile of `shape`
    holding x's valid region at its top-left and `pad_value` elsewhere (zero, max: +inf or the
    integer maximum, min: -inf or the integer minimum; or 0, math.inf, -math.inf)."""
    _require("fillpad_expand", "vector")
    x = _operand("fillpad_expand", value, "value")
    dims = _static_dims(shape, "fillpad_expand", "shape")
    src = _tile_shape(x) or list(x.shape)
    if len(dims) != len(x.shape) or any(isinstance(s, int) and d < s for d, s in zip(dims, src)):
        raise _err(f"pl.fillpad_expand: the shape {dims} must have x's rank and cover x's shape {src}")
    pad = _pad_number("fillpad_expand", pad_value, x.dtype)
    base = _ops.creation.full_value(dims, pad, x.dtype)
    _mark(base, dims, _mem(x))
    return _mark(_overlay(base, x), dims, _mem(x))


def reinterpret_view(data: Tensor, dtype: Any, *, shape: Optional[Sequence[int]] = None) -> Tensor:
    """``pl.reinterpret_view(x, dtype, shape=None)``: x's bytes read as `dtype` (the last dim
    scaled by the width ratio: fp32 [16, 8] -> int8 [16, 32]), optionally in another shape of as
    many bytes."""
    _require("reinterpret_view", "move")
    x = _operand("reinterpret_view", data, "data")
    if dtype == x.dtype:
        raise _err(f"pl.reinterpret_view: the target dtype must differ from the source's ({_core.dtype_name(dtype)})")
    if not isinstance(dtype, _core.DataType) or dtype == DT_BOOL or x.dtype == DT_BOOL:
        raise _err(f"pl.reinterpret_view: no byte view between {_core.dtype_name(x.dtype)} and {dtype!r}")
    src_bytes, dst_bytes = _core.dtype_bytes(x.dtype), _core.dtype_bytes(dtype)
    last = x.shape[-1]
    if isinstance(last, int) and (last * src_bytes) % dst_bytes:
        raise _err(f"pl.reinterpret_view: a last dim of {last} {_core.dtype_name(x.dtype)} is {last * src_bytes} "
                   f"bytes, not a whole number of {_core.dtype_name(dtype)} elements")
    out = _one_tile(lambda: _ops.view(x, dtype=dtype), [x])
    tshape = _tile_shape(x)
    if tshape:
        tshape = tshape[:-1] + [tshape[-1] * src_bytes // dst_bytes]
    if shape is not None:
        dims = _static_dims(shape, "reinterpret_view", "shape")
        have = list(out.shape)
        if all(isinstance(d, int) for d in have) and math.prod(dims) != math.prod(have):
            raise _err(f"pl.reinterpret_view: the shape {dims} is {math.prod(dims) * dst_bytes} bytes, the data "
                       f"{math.prod(have) * dst_bytes}")
        out = _one_tile(lambda: _ops.reshape(out, dims), [out])
        tshape = dims
    return _mark(out, tshape, _mem(x)) if tshape else out


# --- sorting ---------------------------------------------------------------------------------------------


def sort32(src: Tensor, idx: Tensor) -> Tensor:
    """``pl.sort32(src, idx)``: not supported here yet (the chip's interleaved value / index-bit
    block format)."""
    _require("sort32", "vector")
    raise _err("pl.sort32 is not supported here yet (the chip's 32-element block sort with interleaved "
               "value / index bits)", "pypto.sort / pypto.topk sort along the last dim")


def mrgsort(src0: Tensor, src1: Optional[Tensor] = None, src2: Optional[Tensor] = None,
            src3: Optional[Tensor] = None, tmp: Optional[Tensor] = None, exhausted: bool = False, *,
            block_len: Any = None) -> Tensor:
    """``pl.mrgsort(...)``: not supported here yet (it merges the sort32 format)."""
    _require("mrgsort", "vector")
    raise _err("pl.mrgsort is not supported here yet (it merges pl.sort32's value / index format)",
               "pypto.sort / pypto.topk sort along the last dim")


__all__ = [
    "part_add", "part_mul", "part_max", "part_min", "row_prod", "col_prod", "row_argmax", "row_argmin",
    "col_argmax", "col_argmin", "expands", "expand_clone", "cmp", "cmps", "sel", "sels", "rem", "rems", "fmods",
    "and_", "ands", "or_", "ors", "xor", "xors", "not_", "shl", "shls", "shr", "shrs", "prelu", "lrelu",
    "addc", "subc", "addsc", "subsc", "arange", "tri", "gather", "scatter", "tile_gather", "tile_scatter",
    "batch_matmul", "gemv", "gemv_acc", "gemv_bias", "set_validshape", "fillpad_expand", "reinterpret_view",
    "sort32", "mrgsort", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8", "INT4", "UINT4", "ND", "DN",
    "NZ", "TileLayout", "CompactMode",
]
