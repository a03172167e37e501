"""Shape and movement: transpose and permute (a strided load of the permuted view: no copy in
the on-chip buffer)."""

from __future__ import annotations

from typing import Any, Sequence

from .. import _core
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor
from .core import _suffix, _t

__all__ = ["transpose", "permute"]


def _norm(x: Tensor, d: Any, op: str) -> int:
    if not isinstance(d, int) or isinstance(d, bool) or not -x.ndim <= d < x.ndim:
        raise _core.UserError(f"pypto.{op}: dim {d!r} is out of range for {x!r} of rank {x.ndim}" + _suffix()
                              + f"\nhint: use a dim in [{-x.ndim}, {x.ndim - 1}]")
    return d % x.ndim


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002 - PyPTO's name
    """The dims of ``input`` in the order ``dims``: result dim i is input dim dims[i]."""
    x = _t(input, "permute")
    if not isinstance(dims, (list, tuple)):
        raise _core.UserError(f"pypto.permute: dims must be a list of ints, got {dims!r}" + _suffix())
    perm = [_norm(x, d, "permute") for d in dims]
    if perm == list(range(x.ndim)):
        return x
    rec = current_recorder("permute")
    return Tensor(_rec=rec, _id=rec.op("permute", [x._id], {"perm": perm}, user_loc()))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    """``input`` with dims ``dim0`` and ``dim1`` swapped."""
    x = _t(input, "transpose")
    a, b = _norm(x, dim0, "transpose"), _norm(x, dim1, "transpose")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)
