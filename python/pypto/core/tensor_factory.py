"""``pypto.tensor``: outside a traced function an annotation or a declaration (``pypto.Tensor``),
inside one a new global-memory tensor, or with no arguments a placeholder that ``.move(v)``
names; also the type PyPTO programs test with ``isinstance(x, pypto.tensor)``."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import pypto._core as _core
from .._core import DataType, SymbolicScalar
from ._dtypes import check_dtype
from ._tracing import current_recorder, maybe_recorder, open_loop_indices, user_loc
from .tensor import DT_FP32, Dim, Tensor, _loc_suffix, ops

__all__ = ["tensor"]


class _TensorAlias(type):
    """``pypto.tensor`` is a function (below) that PyPTO programs also use as the tensor type:
    ``isinstance(x, pypto.tensor)``."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:  # type: ignore[override]
        return _new_tensor(*args, **kwargs)


class tensor(metaclass=_TensorAlias):  # noqa: N801 - PyPTO's name
    """``pypto.tensor(shape, dtype, name)``: inside a traced function a new global-memory tensor,
    outside an annotation or a declaration (see _new_tensor); ``isinstance(x, pypto.tensor)`` is
    ``isinstance(x, pypto.Tensor)``."""


def _new_tensor(shape: Optional[Sequence[Dim]] = None, dtype: Optional[DataType] = None, name: Optional[str] = None,
                format: Any = None, **kw: Any) -> Tensor:  # noqa: A002 - PyPTO's name (4th positionally)
    """Inside a traced function: a new global-memory tensor (an output when returned; dtype
    defaults to fp32). Outside: an annotation, as ``pypto.Tensor(...)`` (PyPTO writes
    ``pypto.tensor()`` for a parameter whose shape and dtype come from the argument)."""
    if format is not None:
        kw["format"] = format
    if maybe_recorder() is None:
        return Tensor(shape, dtype, name, **kw)
    if shape is None and dtype is None and not kw:
        # PyPTO's `res = pypto.tensor()` then `res.move(value)`: a name for the value moved in.
        t = Tensor(_rec=current_recorder("tensor"), _id=-1)
        t._placeholder = True
        return t
    if shape is None:
        raise _core.UserError("pypto.tensor(shape, dtype): a tensor created in a function needs a shape"
                              + _loc_suffix())
    dtype = DT_FP32 if dtype is None else check_dtype(dtype, "pypto.tensor", _loc_suffix())
    rec = current_recorder("tensor")
    loops = set(open_loop_indices())
    varying = any(isinstance(d, SymbolicScalar) and loops & set(d.free_vars()) for d in shape)
    try:
        if varying:  # a shape that changes with a loop's index: allocated at its bound, below
            raise _core.UserError("pypto.tensor: the shape depends on a loop index")
        return Tensor(_rec=rec, _id=rec.create_tensor(list(shape), dtype, name or "", user_loc()))
    except _core.UserError as e:
        # A shape that depends on an element the kernel reads (sparse attention's
        # `[min(valid - i * 2048, 2048), d]`) is known only when the call gets there, but tensors
        # are allocated when it starts: allocate the bound of each dim and hand out the window
        # of the run-time shape (as PyPTO's tensor has a static shape and a valid one).
        bounds = [d if isinstance(d, int) else d.upper_bound() if isinstance(d, SymbolicScalar) else None
                  for d in shape]
        if "depends on" not in str(e) or any(b is None or b <= 0 for b in bounds):
            if varying:
                raise _core.UserError(f"pypto.tensor: the shape {list(shape)} changes with a loop index and has no "
                                      "bound (tensors are allocated when the call starts)" + _loc_suffix()
                                      + "\nhint: bound each dim, e.g. (n - i * 8).min(8)") from None
            raise
        base = Tensor(_rec=rec, _id=rec.create_tensor(list(bounds), dtype, name or "", user_loc()))
        return ops.view(base, list(shape), [0] * len(shape))
