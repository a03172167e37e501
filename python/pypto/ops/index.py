"""Index and sort ops: topk, sort, argsort (the last dim, whole in one tile), gather and
index_select (the input read whole along the indexed dim). An index outside the input raises
at run time; memory outside the tensor is never read."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .. import _core
from .._dtypes import is_int_dtype
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor
from .core import _suffix, _t

__all__ = ["topk", "sort", "argsort", "gather", "index_select"]


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
    return _topk("topk", x, k, dim, largest, False), _topk("topk", x, k, dim, largest, True)


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
    from .shape import expand_clone, reshape
    x, idx = _t(input, "index_select"), _t(index, "index_select")
    if not is_int_dtype(idx.dtype) or idx.ndim not in (1, 2):
        raise _core.UserError(f"pypto.index_select: the index must be a 1-D or 2-D integer tensor, got {idx!r}"
                              + _suffix())
    d = _dim(x, dim, "index_select")
    if not isinstance(d, int) or not 0 <= d < x.ndim:
        raise _core.UserError(f"pypto.index_select: dim {dim} is out of range for {x!r}" + _suffix())
    if idx.ndim == 2:
        raise _core.UserError("pypto.index_select: a 2-D index is not supported yet (it needs a reshape that "
                              f"merges dims); index with each row of {idx!r}" + _suffix())
    m = idx.shape[0]
    shape = list(x.shape)
    shape[d] = m
    one = [1] * x.ndim
    one[d] = m
    full_index = expand_clone(reshape(idx, one), shape)
    return gather(x, d, full_index)
