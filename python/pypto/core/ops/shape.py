"""Shape and movement. transpose / permute / squeeze / unsqueeze / reshape that only adds or
drops dims of size 1 are one op: a load through a remapped view of the operand (a strided load,
no copy in the on-chip buffer). expand_clone / clone copy, concat / pad assemble into a new
tensor, tril / triu / one_hot compare index vectors."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import pypto._core as _core
from ..._core import SymbolicScalar
from .._dtypes import DT_BOOL, DT_INT32, DT_INT64, DT_UINT8, DataType, check_dtype, is_float_dtype, is_int_dtype
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor, _dim
from ..tensor_factory import tensor
from .core import _convert as cast
from .core import _reinterpret, _suffix, _t, assemble, sub, view
from .creation import full_value as full
from .logic import eq, ge, le, where

__all__ = ["transpose", "permute", "squeeze", "unsqueeze", "reshape", "expand_clone", "clone", "concat", "pad",
           "tril", "triu", "one_hot", "fillpad", "pack", "unpack"]


def _norm(x: Tensor, d: Any, op: str, rank: Optional[int] = None) -> int:
    n = x.ndim if rank is None else rank
    if not isinstance(d, int) or isinstance(d, bool) or not -n <= d < n:
        raise _core.UserError(f"pypto.{op}: dim {d!r} is out of range for {x!r} (rank {n} here)" + _suffix()
                              + f"\nhint: use a dim in [{-n}, {n - 1}]")
    return d % n


def _remap(op: str, x: Tensor, perm: List[int]) -> Tensor:
    """Output dim d is input dim perm[d], or a new dim of size 1 where perm[d] is -1."""
    rec = current_recorder(op)
    return Tensor(_rec=rec, _id=rec.remap(x._id, perm, user_loc()))


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002 - PyPTO's name
    """The dims of ``input`` in the order ``dims``: result dim i is input dim dims[i]."""
    x = _t(input, "permute")
    if not isinstance(dims, (list, tuple)):
        raise _core.UserError(f"pypto.permute: dims must be a list of ints, got {dims!r}" + _suffix())
    perm = [_norm(x, d, "permute") for d in dims]
    if sorted(perm) != list(range(x.ndim)):
        raise _core.UserError(f"pypto.permute: {list(dims)} is not a permutation of the {x.ndim} dims of {x!r}"
                              + _suffix())
    return _remap("permute", x, perm)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    """``input`` with dims ``dim0`` and ``dim1`` swapped."""
    x = _t(input, "transpose")
    a, b = _norm(x, dim0, "transpose"), _norm(x, dim1, "transpose")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return _remap("transpose", x, perm)


def unsqueeze(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """``input`` with a new dim of size 1 at ``dim`` (in [-rank-1, rank])."""
    x = _t(input, "unsqueeze")
    d = _norm(x, dim, "unsqueeze", x.ndim + 1)
    perm = list(range(x.ndim))
    perm.insert(d, -1)
    return _remap("unsqueeze", x, perm)


def squeeze(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """``input`` without its dims of size 1 (all of them, or ``dim``: an int or a list)."""
    x = _t(input, "squeeze")
    dims = [d for d in range(x.ndim) if _static(x.shape[d]) and int(x.shape[d]) == 1] if dim is None else \
        [_norm(x, d, "squeeze") for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    dims = [d for d in dims if _static(x.shape[d]) and int(x.shape[d]) == 1]  # torch: a dim that is not 1 stays
    keep = [d for d in range(x.ndim) if d not in dims]
    if not keep:
        raise _core.UserError(f"pypto.squeeze would make a 0-d tensor of {x!r}; keep at least one dim" + _suffix())
    return _remap("squeeze", x, keep)


def _static(d: Any) -> bool:
    return isinstance(d, int) or (isinstance(d, SymbolicScalar) and d.is_concrete())


def _only_unit_dims_differ(a: List[Any], b: List[Any]) -> bool:
    """Whether two shapes differ only by dims of size 1 (a remap, no data movement)."""
    ka = [_core.to_sym(d) for d in a if not (isinstance(d, int) and d == 1)]
    kb = [_core.to_sym(d) for d in b if not (isinstance(d, int) and d == 1)]
    return len(ka) == len(kb) and all(x.same_as(y) for x, y in zip(ka, kb))


def reshape(input: Tensor, shape: Sequence[Any], *, valid_shape: Optional[Sequence[Any]] = None,  # noqa: A002
            inplace: bool = False) -> Tensor:
    """``input`` with ``shape`` of as many elements, in row-major order (one entry may be -1 when
    every dim is static). No copy: adding or dropping dims of size 1 is a remapped view; merging
    or splitting dims reads the same dense memory in the new shape (a computed input is kept in
    global memory for it). A slice must be reshaped as a whole tensor first."""
    x = _t(input, "reshape")
    target = list(shape)
    shape = list(valid_shape if valid_shape is not None else shape)
    minus = [i for i, d in enumerate(shape) if isinstance(d, int) and d == -1]
    if minus:
        if len(minus) > 1 or not all(_static(d) for i, d in enumerate(list(x.shape) + shape)
                                     if i - x.ndim not in minus):
            raise _core.UserError(f"pypto.reshape: -1 in {shape} needs static dims and appears at most once"
                                  + _suffix())
        total = 1
        for d in x.shape:
            total *= int(d)
        known = 1
        for i, d in enumerate(shape):
            known *= 1 if i in minus else int(d)
        shape[minus[0]] = total // known
    rec = current_recorder("reshape")
    if valid_shape is None:
        x = _with_padded_columns(x, shape)
        valid = _valid_rows_reshape(x, shape)
        if valid is not None:
            # PyPTO reshapes the whole (padded) tile; its valid rows are the valid part here.
            out = reshape(x, valid)
            out._padded_shape = list(shape)
            return out
    if valid_shape is not None and _elements(list(x.shape)) is not None and \
            _elements(list(x.shape)) == _elements(list(target)) and _elements(list(x.shape)) != _elements(shape):
        # A whole (static) tensor reshaped with a valid shape: PyPTO's reshape, then the valid
        # part of it (a view that remembers its padded shape, as pypto.view(valid_shape=)).
        whole = reshape(x, list(target))
        return view(whole, list(target), [0] * len(target), valid_shape=shape)
    if valid_shape is not None and not _same_count(list(x.shape), shape):
        # A valid shape over other run-time extents than x's (valid_b * valid_s from one tensor's
        # dims, x sliced from another's): PyPTO reshapes the padded tile and takes its first
        # elements. Here: x's elements in a row, the first of them as many as the valid shape
        # holds (a window the run time checks lies inside x), in that shape.
        flat = reshape(x, [_product(list(x.shape))])
        first = view(flat, [_product(list(target))], [0], valid_shape=[_product(shape)])
        out = reshape(first, shape)
        out._padded_shape = list(target)
        return out
    if rec.value_kind(x._vid) == "view" and not _only_unit_dims_differ(list(x.shape), shape) and \
            not rec.reshapes_in_place(x._vid, shape):
        # A slice strided in its base: merging or splitting its dims reads a dense copy of it
        # (PyPTO's reshape of a tile-sized slice); writes into the result do not reach the base.
        # (A contiguous slice is reshaped in place: a slice of the base reshaped.)
        x = clone(x)
    out = Tensor(_rec=rec, _id=rec.reshape(x._id, shape, user_loc()))
    out._reshape_of = x  # `t = reshape(t, s)` in a loop body repeats itself: no carried value
    x._reshaped = True
    x._reshape_targets = x._reshape_targets + (tuple(shape),)
    if valid_shape is not None:
        out._padded_shape = list(target)  # pypto.fillpad fills up to it
    return out


def _with_padded_columns(x: Tensor, shape: List[Any]) -> Tensor:
    """``x`` with its padding columns, when the reshape is of PyPTO's whole padded tile: a gathered
    ``[n, 4]`` of scales in a tile ``[2048, 8]`` reshaped to ``[2048 * 8, 1]`` puts 4 padding rows
    after each 4 scales (sparse attention's dequantization relies on it). The padding is zeros
    here (on the NPU, whatever the tile held); it lands where the program does not read it."""
    padded = getattr(x, "_padded_shape", None)
    if padded is None or x.ndim < 2 or len(padded) != x.ndim:
        return x
    cols, have = padded[-1], x.shape[-1]
    if not (_static(cols) and _static(have) and int(cols) > int(have)):
        return x
    whole = _elements(list(padded))
    if whole is None or whole != _elements(shape):
        return x
    out = pad(x, [0, int(cols) - int(have)])
    out._padded_shape = list(padded)
    return out


def _valid_rows_reshape(x: Tensor, shape: List[Any]) -> Optional[List[Any]]:
    """A tensor with a run-time number of rows (a valid shape: ``[n, 1024]``) reshaped to a static
    shape (``[2048 * 8, 128]``): in PyPTO the whole tile is reshaped and its valid part is the
    first n * 1024 elements; here that part is the result, ``[n * 8, 128]``. None when the
    shapes are not of this kind, or the valid elements do not fill whole rows of the result."""
    xs = list(x.shape)
    if not xs or not shape or _elements(shape) is None or _static(xs[0]) or _elements(xs[1:]) is None:
        return None
    row = _elements(list(shape[1:]))
    n = _core.to_sym(xs[0]) * _elements(xs[1:])
    rest = n % row if row else None
    if rest is None or not rest.is_const() or int(rest) != 0:
        return None
    return [_dim(n // row)] + list(shape[1:])


def _product(shape: List[Any]) -> Any:
    n: Any = 1
    for d in shape:
        n = n * d
    return _dim(_core.to_sym(n))


def _same_count(a: List[Any], b: List[Any]) -> bool:
    """Whether shapes a and b provably hold as many elements (over the same symbols)."""
    return bool(_core.to_sym(_product(a)).same_as(_core.to_sym(_product(b))))


def _elements(shape: List[Any]) -> Optional[int]:
    """The element count of a static shape (None when a dim is symbolic)."""
    n = 1
    for d in shape:
        if not _static(d):
            return None
        n *= int(d)
    return n


def _record(op: str, x: Tensor, attrs: dict) -> Tensor:
    rec = current_recorder(op)
    return Tensor(_rec=rec, _id=rec.op(op, [x._id], attrs, user_loc()))


def expand_clone(input: Tensor, shape: Sequence[Any], *, valid_shape: Optional[Sequence[Any]] = None) -> Tensor:  # noqa: A002
    """``input`` broadcast along its dims of size 1 to ``shape`` (same rank), as a new tensor."""
    x = _t(input, "expand_clone")
    return _record("expand", x, {"shape": list(valid_shape if valid_shape is not None else shape)})


def clone(input: Tensor) -> Tensor:  # noqa: A002
    """A copy of ``input`` (bits included: -0.0 and NaN payloads stay)."""
    x = _t(input, "clone")
    return _record("expand", x, {"shape": list(x.shape)})


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors side by side along ``dim`` (same dtype and rank; the other dims equal): each is
    assembled into a new tensor."""
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise _core.UserError("pypto.concat needs a non-empty list of tensors" + _suffix())
    ts = [_t(t, "concat") for t in tensors]
    first = ts[0]
    d = _norm(first, dim, "concat")
    for t in ts[1:]:
        same = t.ndim == first.ndim and t.dtype == first.dtype and all(
            i == d or _core.to_sym(a).same_as(_core.to_sym(b)) for i, (a, b) in enumerate(zip(t.shape, first.shape)))
        if not same:
            raise _core.UserError(f"pypto.concat: {t!r} does not match {first!r} outside dim {d}" + _suffix()
                                  + "\nhint: concatenated tensors share the dtype, the rank and every other dim")
    if len(ts) == 1:
        return clone(first)
    extent: Any = 0
    for t in ts:
        extent = extent + t.shape[d]
    shape = list(first.shape)
    shape[d] = extent
    out = tensor(shape, first.dtype, "concat")
    offset: Any = 0
    for t in ts:
        offsets: List[Any] = [0] * first.ndim
        offsets[d] = offset
        assemble(t, offsets, out)
        offset = offset + t.shape[d]
    return out


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Any = 0) -> Tensor:  # noqa: A002
    """torch.nn.functional.pad with PyPTO's limits: ``pad`` = (left, right[, top, bottom]) for the
    last dim (and the one before), left and top 0, mode 'constant'."""
    x = _t(input, "pad")
    if mode != "constant":
        raise _core.UserError(f"pypto.pad: mode {mode!r} is not supported; only 'constant'" + _suffix())
    if not isinstance(pad, (list, tuple)) or len(pad) not in (2, 4) or any(
            not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in pad):
        raise _core.UserError(f"pypto.pad: pad must be 2 or 4 non-negative ints, got {pad!r}" + _suffix())
    if pad[0] != 0 or (len(pad) == 4 and pad[2] != 0):
        raise _core.UserError(f"pypto.pad: only right / bottom padding (left and top 0), got {tuple(pad)}" + _suffix())
    if len(pad) == 4 and x.ndim < 2:
        raise _core.UserError(f"pypto.pad: 4 pads need a tensor of rank >= 2, got {x!r}" + _suffix())
    if is_int_dtype(x.dtype) and isinstance(value, float) and value != int(value):
        raise _core.UserError(f"pypto.pad: the value {value} is not an integer but {x!r} is" + _suffix())
    shape = list(x.shape)
    shape[-1] = shape[-1] + pad[1]
    if len(pad) == 4:
        shape[-2] = shape[-2] + pad[3]
    out = tensor(shape, x.dtype, "pad")
    out[...] = full(shape, value, x.dtype)
    assemble(x, [0] * x.ndim, out)
    return out


def _tri(op: str, x: Any, diagonal: Any, lower: bool) -> Tensor:
    x = _t(x, op)
    if x.ndim < 2:
        raise _core.UserError(f"pypto.{op} needs a tensor of rank >= 2, got {x!r}" + _suffix())
    if isinstance(diagonal, _core.SymbolicScalar) and diagonal.is_concrete():
        diagonal = int(diagonal)
    if not isinstance(diagonal, (int, _core.SymbolicScalar)) or isinstance(diagonal, bool):
        raise _core.UserError(f"pypto.{op}: diagonal must be an int or a symbolic scalar, got {diagonal!r}"
                              + _suffix())
    lead = [1] * (x.ndim - 2)
    rec = current_recorder(op)
    rows = Tensor(_rec=rec, _id=rec.op("iota", [], {"shape": lead + [x.shape[-2], 1], "dim": x.ndim - 2,
                                                    "dtype": DT_INT32}, user_loc()))
    cols = Tensor(_rec=rec, _id=rec.op("iota", [], {"shape": lead + [1, x.shape[-1]], "dim": x.ndim - 1,
                                                    "dtype": DT_INT32}, user_loc()))
    keep = (le if lower else ge)(sub(cols, rows), diagonal)  # c - r <= d (tril), >= d (triu)
    zero: Any = False if x.dtype == DT_BOOL else 0.0 if is_float_dtype(x.dtype) else 0
    return where(keep, x, zero)


def tril(input: Tensor, diagonal: Any = 0) -> Tensor:  # noqa: A002
    """Zeros above the ``diagonal``-th diagonal of the last two dims (torch.tril); ``diagonal``
    may be a symbolic scalar (a loop index expression: the diagonal of a tile of a larger matrix)."""
    return _tri("tril", input, diagonal, True)


def triu(input: Tensor, diagonal: Any = 0) -> Tensor:  # noqa: A002
    """Zeros below the ``diagonal``-th diagonal of the last two dims (torch.triu); ``diagonal``
    may be a symbolic scalar, as in tril."""
    return _tri("triu", input, diagonal, False)


def one_hot(input: Tensor, num_classes: int) -> Tensor:  # noqa: A002
    """int64 tensor of ``input.shape + [num_classes]`` with 1 where the last index equals the input
    value (values outside [0, num_classes) give a row of zeros)."""
    x = _t(input, "one_hot")
    if not is_int_dtype(x.dtype):
        raise _core.UserError(f"pypto.one_hot needs an integer tensor, got {x!r}" + _suffix())
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes <= 0:
        raise _core.UserError(f"pypto.one_hot: num_classes must be a positive int, got {num_classes!r}" + _suffix())
    rec = current_recorder("one_hot")
    idx_dt = DT_INT64 if x.dtype == DT_INT64 else DT_INT32
    x = x if x.dtype == idx_dt else cast(x, idx_dt)
    tile = list(rec.vec_tile_shapes())
    if len(tile) == x.ndim:  # the result has one dim more: the user's tile, then the classes
        rec.set_vec_tile_shapes(tile + [num_classes], user_loc())
    try:
        classes = Tensor(_rec=rec, _id=rec.op("iota", [], {"shape": [1] * x.ndim + [num_classes], "dim": x.ndim,
                                                           "dtype": idx_dt}, user_loc()))
        return cast(eq(unsqueeze(x, -1), classes), DT_INT64)
    finally:
        if len(tile) == x.ndim:
            rec.set_vec_tile_shapes(tile, user_loc())




def fillpad(input: Tensor, mode: str = "constant", value: Any = 0) -> Tensor:  # noqa: A002
    """A view (or reshape) with a ``valid_shape`` at its whole ``shape``: the valid part, and
    ``value`` past it (PyPTO fills the padding of the tile). Any other tensor has no padding:
    the result is a copy."""
    x = _t(input, "fillpad")
    if mode != "constant":
        raise _core.UserError(f"pypto.fillpad: mode {mode!r} is not supported; only 'constant'" + _suffix())
    padded = getattr(x, "_padded_shape", None)
    if padded is None or len(padded) != x.ndim or all(
            _core.to_sym(a).same_as(_core.to_sym(b)) for a, b in zip(padded, x.shape)):
        return clone(x)
    if is_int_dtype(x.dtype) and isinstance(value, float) and value != int(value):
        raise _core.UserError(f"pypto.fillpad: the value {value} is not an integer but {x!r} is" + _suffix())
    out = tensor(list(padded), x.dtype, "fillpad")
    out[...] = full(list(padded), value, x.dtype)
    assemble(x, [0] * x.ndim, out)  # the valid part over the fill (the runtime orders the writes)
    return out


def pack(input: Tensor) -> Tensor:  # noqa: A002
    """PyPTO's pack: ``input`` flattened to 1-D, its bytes as ``DT_UINT8`` elements (little-endian,
    as the NPU and the host store them): ``[numel * element bytes]``."""
    x = _t(input, "pack")
    if x.dtype == DT_BOOL:
        raise _core.UserError(f"pypto.pack: a {x.dtype} tensor has no byte layout to pack, got {x!r}" + _suffix())
    n: Any = 1
    for d in x.shape:
        n = n * d
    flat = reshape(x, [_dim(_core.to_sym(n))]) if x.ndim != 1 else x
    return flat if x.dtype == DT_UINT8 else _reinterpret(current_recorder("pack"), flat, DT_UINT8)


def unpack(input: Tensor, dstDataType: DataType) -> Tensor:  # noqa: A002,N803
    """PyPTO's unpack: the bytes of a 1-D ``DT_UINT8`` tensor read as ``dstDataType`` elements
    (its length must be a multiple of their size)."""
    x = _t(input, "unpack")
    if x.dtype != DT_UINT8 or x.ndim != 1:
        raise _core.UserError(f"pypto.unpack: the input must be a 1-D DT_UINT8 tensor, got {x!r}" + _suffix())
    dst = check_dtype(dstDataType, "pypto.unpack", _suffix())
    return x if dst == DT_UINT8 else _reinterpret(current_recorder("unpack"), x, dst)

