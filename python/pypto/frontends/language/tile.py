"""``pl.tile``: hw-native-sys pypto's tile-op namespace. The ops of ``pl`` on tiles are here
under the same names; ``pl.tile.assemble(target, source, offset)`` is the tile form (a new tile:
`target` with `source` written at `offset`; `target` itself is unchanged)."""

from __future__ import annotations

from typing import Any, Sequence

import pypto._core as _core

from ...core import ops as _ops
from ...core.tensor import Tensor
from ...core.tensor_factory import tensor as new_tensor
from . import _ops as _pl
from ._program import get_block_idx, get_block_num  # noqa: F401 - pl.tile.get_block_idx / get_block_num
from ._ops_extra import (addc, addsc, and_, ands, cmp, cmps, col_argmax, col_argmin, col_prod,  # noqa: F401
                         expands, fmods, lrelu, not_, or_, ors, part_add, part_max, part_min, part_mul, prelu, rem,
                         rems, row_argmax, row_argmin, row_prod, sel, sels, shl, shls, shr, shrs, subc, subsc, xor,
                         xors)
from ._ops_indexed import (arange, batch_matmul, fillpad_expand, gemv, gemv_acc, gemv_bias, mrgsort,  # noqa: F401
                           reinterpret_view, set_validshape, sort32, tri)
from ._ops_indexed import arange as ci  # noqa: F401
from ._ops_indexed import (tile_gather as gather, tile_scatter as scatter)  # noqa: F401
from ._ops import (abs, add, adds, cast, col_expand, col_expand_add, col_expand_div, col_expand_max,  # noqa: F401
                   col_expand_min, col_expand_mul, col_expand_sub, col_max, col_min, col_sum, concat, cos, div, divs,
                   exp, fillpad, fmod, full, load, log, matmul, matmul_acc, matmul_bias, maximum, maximums, minimum,
                   minimums, move, mul, muls, neg, recip, relu, reshape, row_expand, row_expand_add, row_expand_div,
                   row_expand_max, row_expand_min, row_expand_mul, row_expand_sub, row_max, row_min, row_sum, rsqrt,
                   sigmoid, sin, slice, sqrt, store, sub, subs, tanh, transpose_view)


def assemble(target: Tensor, source: Tensor, offset: Sequence[Any]) -> Tensor:
    """A new tile: `target` with `source` written at `offset` (the tile op; pl.assemble writes a
    global tensor in place)."""
    _pl._require("tile.assemble", "vector")
    for name, t in (("target", target), ("source", source)):
        if not isinstance(t, Tensor) or not t.is_traced:
            raise _core.UserError(f"pl.tile.assemble: {name} must be a tile, got {t!r}" + _pl._loc())
    shape = _pl._tile_shape(target) or list(target.shape)
    out = new_tensor(list(target.shape), target.dtype)
    _pl._one_tile(lambda: _ops.assemble(target, [0] * len(shape), out), [target])
    _pl._write("tile.assemble", source, list(offset), out, _pl.AtomicType.None_)
    return _pl._mark(out, shape, getattr(target, "_pl_mem", _pl.MemorySpace.Vec))
