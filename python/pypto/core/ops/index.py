"""Index and sort ops: topk, sort, argsort (the last dim, whole in one tile), gather and
index_select (the input read whole along the indexed dim into a tile, or, along a dim of run-time
size or too long for UB, the indexed elements read straight from memory), and the scatters (scatter_, scatter,
index_add_, index_add, index_put_, scatter_update: a tile written into global memory along a dim
at the positions an index names). An index outside the tensor raises at run time; memory
outside it is never read or written."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import pypto._core as _core
from .._dtypes import DT_INT32, DT_INT64, is_float_dtype, is_int_dtype, to_numpy_dtype
from .._tracing import completed_tiles, current_recorder, user_loc
from ..tensor import Tensor
from .core import _suffix, _t, add, exact_view, mul, same_extent, view
from .shape import concat, expand_clone, fillpad, reshape
from .creation import arange, full_value as full
from ..tensor_factory import tensor
from .cast import cast
from .logic import ge, logical_and, lt, where

__all__ = ["topk", "sort", "argsort", "gather", "index_select", "scatter_", "scatter", "index_add_", "index_add",
           "index_add__ub", "index_add_ub", "index_put_", "scatter_update", "gathermask", "interleave", "deinterleave"]


def _dim(x: Tensor, dim: Any, op: str) -> int:
    if dim is None:
        return x.ndim - 1
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise _core.UserError(f"pypto.{op}: dim must be an int, got {dim!r}" + _suffix())
    return dim % x.ndim if -x.ndim <= dim < x.ndim else dim


def _topk(op: str, x: Tensor, k: int, dim: Any, largest: bool, indices: bool) -> Tensor:
    rec = current_recorder(op)
    attrs = {"k": k, "dim": _dim(x, dim, op), "largest": bool(largest), "indices": bool(indices)}
    return Tensor(_rec=rec, _id=rec.op("topk", [x._id], attrs, user_loc()))


def topk(input: Tensor, k: int, dim: Optional[int] = None, largest: bool = True,  # noqa: A002
         algo: Any = None) -> Tuple[Tensor, Tensor]:
    """(values, int32 indices) of the ``k`` largest (or smallest) elements along the last dim, in
    order; NaN counts as the largest value (torch), ties keep the lower index first. ``algo``
    (PyPTO's TopKAlgo) is accepted: both give the same answer here."""
    x = _t(input, "topk")
    if not isinstance(k, int) or isinstance(k, bool):
        raise _core.UserError(f"pypto.topk: k must be an int, got {k!r}" + _suffix())
    x = _padded_for_selection(x, dim, largest, "topk")
    d = _dim(x, dim, "topk")
    n = x.shape[d] if isinstance(d, int) and 0 <= d < x.ndim else None
    chunk = _selection_chunk(x, k)
    if isinstance(n, int) and chunk and n > chunk and 0 < k <= chunk:
        return _topk_in_chunks(x, k, d, largest, chunk)
    # One selection: the values are the elements the indices name (a gather of k per row), not a
    # second pass over the row.
    indices = _topk("topk", x, k, dim, largest, True)
    return gather(x, d, indices), indices


def _selection_chunk(x: Tensor, k: int) -> int:
    """The largest power-of-two length whose row (values and indices) fits the CPU's UB with
    room to spare: a topk over a longer dim runs in chunks of it (see _topk_in_chunks)."""
    item = max(4, int(_core.dtype_bytes(x.dtype)))  # 16-bit values select in fp32
    limit = _core.machine_ub_bytes("cpu") // (4 * item)
    c = 1
    while c * 2 <= limit:
        c *= 2
    return c


def _topk_in_chunks(x: Tensor, k: int, d: int, largest: bool, chunk: int) -> Tuple[Tensor, Tensor]:
    """topk along a dim too long for one tile (the 128K keys of DeepSeek's lightning indexer):
    the top k of each chunk, then the top k of those candidates, whose indices map back through
    a gather. Order and ties are the one-pass topk's: candidates keep chunk order, and a stable
    selection then puts equal values in index order."""
    n = int(x.shape[d])
    values, indices = [], []
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        key = tuple(slice(start, start + size) if i == d else slice(None) for i in range(x.ndim))
        part = x[key]
        local = _topk("topk", part, min(k, size), d, largest, True)
        values.append(gather(part, d, local))  # the selected elements: one selection per chunk
        indices.append(add(local, start) if start else local)
    cand_v, cand_i = concat(values, d), concat(indices, d)
    best_v, best_at = topk(cand_v, k, d, largest)
    return best_v, gather(cand_i, d, best_at)


def _padded_for_selection(x: Tensor, dim: Any, largest: bool, op: str) -> Tensor:
    """A view with a run-time valid size along ``dim`` and a static (padded) one, as
    ``view(t, [1, 131072], valid_shape=[1, n])``: PyPTO selects among the valid elements of the
    padded tile. Here the selection runs over the padded size with the padding at the end of
    the order (-inf for the largest, +inf for the smallest), so the first min(k, n) results are
    the valid elements' and the op needs no run-time-sized tile."""
    d = _dim(x, dim, op)
    padded = getattr(x, "_padded_shape", None)
    if not isinstance(d, int) or not 0 <= d < x.ndim or isinstance(x.shape[d], int) or padded is None or \
            len(padded) != x.ndim or not isinstance(padded[d], int):
        return x
    if is_float_dtype(x.dtype):
        fill: Any = float("-inf") if largest else float("inf")
    else:
        import numpy as np
        info = np.iinfo(to_numpy_dtype(x.dtype))
        fill = int(info.min if largest else info.max)
    return fillpad(x, "constant", fill)


def _whole(x: Tensor, dim: Any, op: str) -> int:
    d = _dim(x, dim, op)
    n = x.shape[d] if isinstance(d, int) and 0 <= d < x.ndim else None
    if not isinstance(n, int):
        raise _core.UserError(f"pypto.{op}: dim {dim} of {x!r} must exist and have a static size" + _suffix())
    return n


def sort(input: Tensor, dim: int = -1, descending: bool = False) -> Tuple[Tensor, Tensor]:  # noqa: A002
    """(values, int32 indices) sorted along the last dim; stable (equal values keep their order),
    NaN last ascending and first descending (torch)."""
    x = _t(input, "sort")
    n = _whole(x, dim, "sort")
    return _topk("sort", x, n, dim, descending, False), _topk("sort", x, n, dim, descending, True)


def argsort(input: Tensor, dim: Optional[int] = None, descending: bool = False) -> Tensor:  # noqa: A002
    """int32 indices that sort the last dim (stable); PyPTO's source default ``descending=False``."""
    x = _t(input, "argsort")
    return _topk("argsort", x, _whole(x, dim, "argsort"), dim, descending, True)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """torch.gather: out[i][j][k] = input[index[i][j][k]][j][k] for dim 0 (and so on); out has the
    index's shape, which may not exceed the input's along the other dims. The input's ``dim``
    needs a static size; an index outside [0, size) raises."""
    x, idx = _t(input, "gather"), _t(index, "gather")
    rec = current_recorder("gather")
    return Tensor(_rec=rec, _id=rec.op("gather", [x._id, idx._id], {"dim": _dim(x, dim, "gather")}, user_loc()))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """The slices of ``input`` along ``dim`` at the positions of the 1-D ``index`` (a 2-D index adds
    its dims, as PyPTO's ONNX-style gather)."""
    x, idx = _t(input, "index_select"), _t(index, "index_select")
    if not is_int_dtype(idx.dtype) or idx.ndim not in (1, 2):
        raise _core.UserError(f"pypto.index_select: the index must be a 1-D or 2-D integer tensor, got {idx!r}"
                              + _suffix())
    d = _dim(x, dim, "index_select")
    if not isinstance(d, int) or not 0 <= d < x.ndim:
        raise _core.UserError(f"pypto.index_select: dim {dim} is out of range for {x!r}" + _suffix())
    if idx.ndim == 2:  # the selection by the flattened index, its dim split back into the index's two
        rows, cols = idx.shape
        flat = index_select(x, d, reshape(idx, [rows * cols]))
        return reshape(flat, list(x.shape[:d]) + [rows, cols] + list(x.shape[d + 1:]))
    m = idx.shape[0]
    shape = list(x.shape)
    shape[d] = m
    one = [1] * x.ndim
    one[d] = m
    full_index = expand_clone(reshape(idx, one), shape)
    return gather(x, d, full_index)


_REDUCE = {None: 0, "add": 1, "multiply": 2}


def _scatter_into(op: str, dst: Tensor, dim: int, index: Tensor, src: Tensor, reduce: int,
                  what: Optional[str] = None) -> None:
    """Records the scatter; `what` is how an index error at run time names the op (the user's)."""
    rec = current_recorder(op)
    ishape, sshape = list(index.shape), list(src.shape)
    if len(ishape) == len(sshape) and all(  # static dims only (a symbolic != has no truth value)
            isinstance(a, int) and isinstance(b, int) and a <= b for a, b in zip(ishape, sshape)) and ishape != sshape:
        # torch: values larger than the index are read only where the index has elements.
        src = view(src, ishape, [0] * len(ishape))
        sshape = ishape
    if len(ishape) == len(sshape) and any(
            not _core.to_sym(a).same_as(_core.to_sym(b)) for a, b in zip(ishape, sshape)):
        # Extents equal only at run time (the index sized by one parameter's dim, the values by
        # another's: GLM's kv_act_seqs and x): checked when the call binds the dims, then the
        # index is the window of the values' shape (all of it).
        for d, (a, b) in enumerate(zip(ishape, sshape)):
            if not _core.to_sym(a).same_as(_core.to_sym(b)):
                what = f"dim {d} of the index {index!r} and of the values {src!r} of pypto.{op}"
                try:
                    rec.assume_equal(a, b, what, user_loc())
                except _core.UserError:
                    # min(x_dim0 - 8 * i, 8) against min(k_dim0 - 8 * i, 8): equal when the two
                    # dims are, which the call can check.
                    if not same_extent(a, b, what):
                        raise
        index = exact_view(index, sshape, [0] * len(sshape))
    rec.op("scatter", [src._id, index._id, dst._id], {"dim": dim, "reduce": reduce, "what": what or f"pypto.{op}"},
           user_loc())


def _values_like(op: str, src: Any, index: Tensor, dtype: Any) -> Tensor:
    """src as a tensor of the index's shape: a Python scalar filled, a tensor as it is."""
    if isinstance(src, Tensor):
        return _t(src, op)
    if isinstance(src, (int, float)) and not isinstance(src, bool):
        return full(list(index.shape), src, dtype)
    raise _core.UserError(f"pypto.{op}: src must be a tensor or a Python scalar, got {type(src).__name__}"
                          + _suffix())


def scatter_(input: Tensor, dim: int, index: Tensor, src: Any, *, reduce: Optional[str] = None) -> Tensor:  # noqa: A002
    """torch.Tensor.scatter_: input[index[i][j]][j] = src[i][j] for dim 0 (and so on), in place;
    ``reduce='add'`` / ``'multiply'`` combine instead. src is a tensor of the index's shape or a
    Python scalar. An index outside input raises. Without ``reduce`` the winner of repeated
    positions is unspecified (as in PyPTO)."""
    x, idx = _t(input, "scatter_"), _t(index, "scatter_")
    if reduce not in _REDUCE:
        raise _core.UserError(f"pypto.scatter_: reduce must be None, 'add' or 'multiply', got {reduce!r}" + _suffix())
    if current_recorder("scatter_").value_kind(x._vid) == "temp":
        # A computed value (pypto.full(...) in the loop) has no memory to scatter into: it goes
        # to a tensor first, and the Python object is that tensor from here on (in place, as
        # PyPTO's tensors are).
        x._id = _copy("scatter_", x)._vid
    _scatter_into("scatter_", x, _dim(x, dim, "scatter_"), idx, _values_like("scatter_", src, idx, x.dtype),
                  _REDUCE[reduce])
    return x


def _copy(op: str, x: Tensor) -> Tensor:
    out = tensor(list(x.shape), x.dtype, op)
    out[...] = x
    return out


def scatter(input: Tensor, dim: int, index: Tensor, src: Any, *, reduce: Optional[str] = None) -> Tensor:  # noqa: A002
    """scatter_ on a copy of ``input`` (input itself is unchanged)."""
    return scatter_(_copy("scatter", _t(input, "scatter")), dim, index, src, reduce=reduce)


def _expanded_index(op: str, index: Tensor, dim: int, shape: list) -> Tensor:
    """A 1-D index along `dim` broadcast to `shape` (index[i] at every position with dim == i)."""
    idx = _t(index, op)
    if not is_int_dtype(idx.dtype) or idx.ndim != 1:
        raise _core.UserError(f"pypto.{op}: the index must be a 1-D integer tensor, got {idx!r}" + _suffix())
    one = [1] * len(shape)
    one[dim] = idx.shape[0]
    return expand_clone(reshape(idx, one), shape)


def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """input[..., index[i], ...] += alpha * source[..., i, ...] along ``dim``, in place; repeated
    indices accumulate (torch.Tensor.index_add_)."""
    x, src = _t(input, "index_add_"), _t(source, "index_add_")
    d = _dim(x, dim, "index_add_")
    if alpha != 1:
        src = mul(src, alpha)
    _scatter_into("index_add_", x, d, _expanded_index("index_add_", index, d, list(src.shape)), src, 1)
    return x


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """index_add_ on a copy of ``input``."""
    return index_add_(_copy("index_add", _t(input, "index_add")), dim, index, source, alpha=alpha)


# PyPTO's UB versions (the NPU keeps the operands in the unified buffer): the same results here,
# where every op's operands are tiles in the on-chip buffer.
index_add__ub = index_add_
index_add_ub = index_add


def index_put_(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """input[indices[0][i], ..., indices[k-1][i]] = values[i] (or += with ``accumulate``), in
    place: k 1-D index tensors of one length t for the k leading dims, values [t, *shape[k:]]. A
    vec tile of lower rank than the values is completed with their trailing dims (PyPTO's rule).
    An index outside its dim raises."""
    x, v = _t(input, "index_put_"), _t(values, "index_put_")
    idx = [_t(i, "index_put_") for i in (list(indices) if isinstance(indices, (list, tuple)) else [indices])]
    if not 1 <= len(idx) <= x.ndim or any(not is_int_dtype(i.dtype) or i.ndim != 1 for i in idx):
        raise _core.UserError(f"pypto.index_put_: indices must be 1 to {x.ndim} 1-D integer tensors (one per leading "
                              f"dim of {x!r}), got {tuple(idx)!r}" + _suffix())
    with completed_tiles("index_put_", list(v.shape)):
        rows, flat, what = x, idx[0], None
        if len(idx) > 1:
            rows, flat = _flat_rows("index_put_", x, idx)
            lead = [d for d in x.shape[:len(idx)]]
            what = (f"pypto.index_put_ (the index tuples of its {len(idx)} index tensors address the leading dims "
                    f"{lead} as one row each; -1 marks a tuple with an index outside its dim)")
        _scatter_into("index_put_", rows, 0, _expanded_index("index_put_", flat, 0, list(v.shape)), v,
                      1 if accumulate else 0, what)
    return x


def _flat_rows(op: str, x: Tensor, idx: List[Tensor]) -> Tuple[Tensor, Tensor]:
    """x with its len(idx) leading dims merged (in memory) and the row of each index tuple in it:
    sum(idx[j] * stride_j), or -1 (which the scatter refuses) when an index is outside its dim, so
    a wrong index cannot land on another row."""
    k = len(idx)
    lead = x.shape[:k]
    if not all(isinstance(d, int) for d in lead[1:]):
        raise _core.UserError(f"pypto.{op}: dims 1..{k - 1} of {x!r} need static sizes for {k} index tensors"
                              + _suffix())
    total = 1
    for d in lead:
        total = total * d
    wide = DT_INT64 if not isinstance(total, int) or total > 2**31 - 1 else DT_INT32
    flat: Any = None
    ok: Any = None
    stride = 1
    for j in reversed(range(k)):
        i = idx[j] if idx[j].dtype == wide else cast(idx[j], wide)
        inside = logical_and(ge(i, 0), lt(i, lead[j]))
        ok = inside if ok is None else logical_and(ok, inside)
        term = i if stride == 1 else mul(i, stride)
        flat = term if flat is None else add(flat, term)
        stride = stride * lead[j]
    flat = where(ok, flat, -1)
    return _memory_reshape(op, x, [total] + list(x.shape[k:])), flat


def _memory_reshape(op: str, x: Tensor, shape: List[Any]) -> Tensor:
    """x in another shape over the same memory, for an in-place write (pypto.reshape drops unit
    dims by remapping a value, which a write would not reach)."""
    rec = current_recorder(op)
    if rec.value_kind(x._vid) == "view" and not rec.reshapes_in_place(x._vid, shape):
        raise _core.UserError(f"pypto.{op}: {x!r} is a slice that is not one contiguous run of its tensor; "
                              "an in-place update needs it in another shape" + _suffix())
    out = Tensor(_rec=rec, _id=rec.reshape(x._id, shape, user_loc(), True))
    out._reshape_of = x  # as pypto.reshape: the call runs a strided argument on a dense copy
    x._reshaped = True
    x._reshape_targets = x._reshape_targets + (tuple(shape),)
    return out


def scatter_update(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:  # noqa: A002
    """A paged KV-cache write, in place (PyPTO's scatter_update, ``dim=-2``): 2-D input
    [blocks * block_size, d], src [b * s, d], index [b, s]: input[index[i][j]] = src[i * s + j];
    4-D input [blocks, block_size, 1, d], src [b, s, 1, d]: the row index[i][j] of the flattened
    blocks. An index outside the cache raises. An input that is an intermediate result is
    copied first (the copy is updated and returned)."""
    x, idx, s = _t(input, "scatter_update"), _t(index, "scatter_update"), _t(src, "scatter_update")
    if dim not in (-2, x.ndim - 2):
        raise _core.UserError(f"pypto.scatter_update: dim must be -2, got {dim!r}" + _suffix())
    if x.ndim not in (2, 4) or s.ndim != x.ndim or idx.ndim != 2 or not is_int_dtype(idx.dtype):
        raise _core.UserError(f"pypto.scatter_update: needs a 2-D or 4-D input and src of its rank and a 2-D integer "
                              f"index, got {x!r}, {s!r}, {idx!r}" + _suffix())
    if current_recorder("scatter_update").root_kind(x._id) not in ("input", "output", "tensor"):
        x = _copy("scatter_update", x)  # an intermediate result: update a copy in memory (PyPTO returns it)
    d = x.shape[-1]
    rows = x if x.ndim == 2 else _memory_reshape("scatter_update", x, [x.shape[0] * x.shape[1], d])
    vals = s if s.ndim == 2 else reshape(s, [s.shape[0] * s.shape[1], d])
    flat = reshape(idx, [idx.shape[0] * idx.shape[1], 1])
    _scatter_into("scatter_update", rows, 0, expand_clone(flat, [flat.shape[0], d]), vals, 0)
    return x


# --- strided selections along the last dim: a gather at constant positions ----------------------

def _last_dim(x: Tensor, op: str) -> int:
    n = x.shape[-1]
    if not isinstance(n, int):
        raise _core.UserError(f"pypto.{op}: the last dim of {x!r} has a dynamic size; it needs a static one"
                              + _suffix())
    return n


def _select_last(x: Tensor, positions: List[int], op: str) -> Tensor:
    """x[..., positions] (constant positions, as a gather along the last dim)."""
    import numpy as _np
    pos = _np.asarray(positions, dtype=_np.int64)
    lo, step = int(pos[0]), int(pos[1] - pos[0]) if len(pos) > 1 else 1
    if len(pos) > 1 and not _np.array_equal(pos, lo + step * _np.arange(len(pos))):
        raise _core.InternalError(f"{op}: positions are not an arithmetic sequence")
    idx = arange(lo, lo + step * len(pos), step) if step != 0 else arange(lo, lo + 1)
    shape = list(x.shape)
    shape[-1] = len(pos)
    one = [1] * x.ndim
    one[-1] = len(pos)
    return gather(x, x.ndim - 1, expand_clone(reshape(idx, one), shape))


_GATHERMASK = {1: (0, 2), 2: (1, 2), 3: (0, 4), 4: (1, 4), 5: (2, 4), 6: (3, 4), 7: (0, 1)}


def gathermask(self: Tensor, pattern_mode: int) -> Tensor:
    """PyPTO's gathermask: the elements of the last dim a built-in mask selects: mode 1/2 every
    second element from 0/1, modes 3-6 every fourth from 0..3, mode 7 all of them."""
    x = _t(self, "gathermask")
    if pattern_mode not in _GATHERMASK or isinstance(pattern_mode, bool):
        raise _core.UserError(f"pypto.gathermask: pattern_mode must be an int in 1..7, got {pattern_mode!r}"
                              + _suffix())
    off, stride = _GATHERMASK[pattern_mode]
    n = _last_dim(x, "gathermask")
    if stride == 1:
        return x
    if n % stride:
        raise _core.UserError(f"pypto.gathermask: pattern_mode {pattern_mode} takes every {stride}th element, but "
                              f"the last dim of {x!r} ({n}) is not a multiple of {stride}" + _suffix())
    return _select_last(x, list(range(off, n, stride)), "gathermask")


def interleave(input: Tensor, other: Tensor) -> Tuple[Tensor, Tensor]:  # noqa: A002
    """PyPTO's interleave: the stream input[0], other[0], input[1], other[1], ... along the last
    dim, its first half as the first result and its second half as the second (shapes of
    input). The inverse of deinterleave."""
    x, y = _t(input, "interleave"), _t(other, "interleave")
    if list(x.shape) != list(y.shape) or x.dtype != y.dtype:
        raise _core.UserError(f"pypto.interleave: input {x!r} and other {y!r} must have one shape and dtype"
                              + _suffix())
    n = _last_dim(x, "interleave")
    c = concat([x, y], x.ndim - 1)  # [.., 2n]: x then y
    outs = []
    for part in (0, 1):
        j = arange(part * n, (part + 1) * n)  # positions in the stream
        idx = j // 2 + (j % 2) * n  # stream[j] = c[j // 2 + (j % 2) * n]
        one = [1] * x.ndim
        one[-1] = n
        outs.append(gather(c, x.ndim - 1, expand_clone(reshape(idx, one), list(x.shape))))
    return outs[0], outs[1]


def deinterleave(input: Tensor, other: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:  # noqa: A002
    """PyPTO's deinterleave: the even and the odd positions of an interleaved stream along the
    last dim: of ``input`` (results half as long), or of input and other side by side (results of
    their shape). The inverse of interleave."""
    x = _t(input, "deinterleave")
    if other is not None:
        y = _t(other, "deinterleave")
        if list(x.shape) != list(y.shape) or x.dtype != y.dtype:
            raise _core.UserError(f"pypto.deinterleave: input {x!r} and other {y!r} must have one shape and "
                                  "dtype" + _suffix())
        x = concat([x, y], x.ndim - 1)
    n = _last_dim(x, "deinterleave")
    if n % 2:
        raise _core.UserError(f"pypto.deinterleave: the stream along the last dim of {x!r} has an odd length {n}"
                              + _suffix())
    return _select_last(x, list(range(0, n, 2)), "deinterleave"), _select_last(x, list(range(1, n, 2)),
                                                                                "deinterleave")
