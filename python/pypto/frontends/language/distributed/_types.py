"""The types and enums of ``pypto.language.distributed``."""

from __future__ import annotations

import enum
from typing import Any, List

from ....core.tensor import STATIC, Tensor
from .._types import AtomicType

__all__ = ["DistributedTensor", "NotifyOp", "WaitCmp", "AtomicType", "ReduceOp", "window_shape"]


class NotifyOp(enum.IntEnum):
    """How ``system.notify`` writes the peer's signal cell (upstream's values)."""

    AtomicAdd = 0
    Set = 1


class WaitCmp(enum.IntEnum):
    """What ``system.wait`` waits for: the cell equal to (``Eq``) or at least (``Ge``) the value."""

    Eq = 0
    Ge = 1


class ReduceOp(enum.IntEnum):
    """The combining op of a reducing collective."""

    Sum = 0
    Max = 1
    Min = 2
    Prod = 3


class DistributedTensor:
    """``pld.DistributedTensor[[1, 256], pl.FP32]``: a window of the symmetric heap as a rank's
    function receives it. The function sees its own rank's copy with that shape; the peers' copies
    are reached with ``pld.tile.remote_load`` / ``remote_store``, ``pld.tensor.put`` / ``get`` and
    the signals. (The array passed holds every rank's copy, [nranks, *shape]; see
    docs/distributed.md.)"""

    _pld_window_class = True  # the bare annotation: shape and dtype from the argument

    def __init__(self) -> None:
        raise TypeError("pld.DistributedTensor is an annotation: write `data: pld.DistributedTensor[[1, 256], pl.FP32]`")

    def __class_getitem__(cls, item: Any) -> Tensor:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"pld.DistributedTensor[[shape], dtype], got pld.DistributedTensor[{item!r}]")
        shape, dtype = item
        ann = Tensor[[STATIC, *list(shape)], dtype]
        ann._pld_window = list(shape)  # type: ignore[attr-defined]
        return ann


def window_shape(ann: Any) -> List[Any]:
    """The per-rank shape of a DistributedTensor annotation, or [] for any other."""
    return list(getattr(ann, "_pld_window", []) or [])
