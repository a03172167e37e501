"""More operators of ``pypto.language`` (hw-native-sys pypto's names and signatures): partial
combines, products and arg-reductions, comparison and selection, remainders, bitwise and shift
ops, activations, three-operand adds, and the dtype and layout names that go with them (index
sequences, gather / scatter, the matrix-vector forms and valid-shape views: ``_ops_indexed``).

Each op is the tensor-level op of the same meaning (or an exact composition of such ops) recorded
with the vec tile shape of its tile operands, as the ops of ``_ops``: on tiles a tile of work, on
global tensors the tensor-level op (the language's unified dispatch). The scratch tiles (``tmp``)
the chip's instructions take are accepted and not needed here.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

import pypto._core as _core
from ...core import _dtypes
from ...core import ops as _ops
from ...core._dtypes import (DT_BOOL, UnsupportedDType,
                             is_int_dtype, to_numpy_dtype)
from ...core.control import sym_min
from ...core.tensor import Tensor
from ...core.tensor_factory import tensor as new_tensor
from ._ops import (_is_tile, _loc, _mark, _one_tile, _require, _tile_shape)
from ._types import MemorySpace, TensorLayout

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


__all__ = [
    "part_add", "part_mul", "part_max", "part_min", "row_prod", "col_prod", "row_argmax", "row_argmin",
    "col_argmax", "col_argmin", "expands", "expand_clone", "cmp", "cmps", "sel", "sels", "rem", "rems", "fmods",
    "and_", "ands", "or_", "ors", "xor", "xors", "not_", "shl", "shls", "shr", "shrs", "prelu", "lrelu",
    "addc", "subc", "addsc", "subsc", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF4", "HF8", "INT4", "UINT4",
    "ND", "DN", "NZ", "TileLayout", "CompactMode",
]
