"""More of hw-native-sys's tile ops (the other half of ``_ops_extra``): index sequences and the
triangular mask, gather / scatter, the cube's batched and matrix-vector forms, valid shapes,
padding and dtype views, and the sorting names."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

import pypto._core as _core
from ...core import _dtypes
from ...core import ops as _ops
from ...core._dtypes import (DT_BOOL, DT_FP32, DT_INT8, DT_INT16, DT_INT32, DT_UINT8, is_int_dtype, to_numpy_dtype)
from ...core.tensor import Tensor
from ._ops import (_is_tile, _mark, _one_tile, _require, _static_dims, _tile_shape,
                   matmul as _pl_matmul)
from ._ops_extra import Number, _err, _is_number, _like, _mem, _operand, _overlay, _same_dtype
from ._types import MemorySpace, PadValue


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


__all__ = ["arange", "tri", "gather", "scatter", "tile_gather", "tile_scatter", "batch_matmul", "gemv", "gemv_acc",
           "gemv_bias", "set_validshape", "fillpad_expand", "reinterpret_view", "sort32", "mrgsort"]
