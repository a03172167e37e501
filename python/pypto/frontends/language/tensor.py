"""``pl.tensor``: hw-native-sys pypto's tensor-op namespace: element access (``read``, ``write``,
``dim``), global tensors (``create``, ``slice``, ``view``, ``assemble``, ``reshape``, ``full``)
and the ops of ``pl`` under the same names (on a global tensor they record the tensor-level op;
on a tile the tile op). Names of upstream's namespace that are not here raise AttributeError
naming the difference (docs/porting.md)."""

from __future__ import annotations

from typing import Any, Sequence

from ._ops import (abs, add, adds, assemble, cast, col_expand, col_expand_add, col_expand_div,  # noqa: F401
                   col_expand_max, col_expand_min, col_expand_mul, col_expand_sub, col_max, col_min, col_sum, concat,
                   cos, dim, div, divs, exp, fillpad, fmod, full, log, matmul, matmul_acc, maximum, maximums, minimum,
                   minimums, mul, muls, neg, read, recip, relu, reshape, row_expand, row_expand_add, row_expand_div,
                   row_expand_max, row_expand_min, row_expand_mul, row_expand_sub, row_max, row_min, row_sum, rsqrt,
                   sigmoid, sin, sqrt, sub, subs, tanh, write)
from ._ops import create_tensor as create  # noqa: F401
from ._ops import create_tensor  # noqa: F401
from ._ops import tensor_slice as slice  # noqa: F401,A004
from ._ops_extra import (and_, ands, cmp, col_argmax, col_argmin, col_prod, expand_clone, expands,  # noqa: F401
                         fmods, not_, or_, ors, part_add, part_max, part_min, part_mul, row_argmax, row_argmin,
                         row_prod, shl, shls, shr, shrs, xor, xors)
from ._ops_indexed import (arange, fillpad_expand, gather, mrgsort, reinterpret_view, scatter,  # noqa: F401
                           set_validshape, sort32)
from ._ops_indexed import arange as ci  # noqa: F401
from ._tensor_ops import transpose  # noqa: F401
from ...core.tensor import Tensor


def view(tensor: Tensor, shape: Sequence[Any], offset: Sequence[Any], **kwargs: Any) -> Tensor:
    """``pl.tensor.view(t, shape, offset)``: the same view as ``pl.tensor.slice``."""
    return slice(tensor, shape, offset, **kwargs)
