"""Random numbers: uniform and normal, PyPTO's counter-based generator (Philox-4x32-10).

Element g of the flattened result comes from the Philox block g // 4 under the 64-bit ``key[0]``
with the 64-bit offset ``counter[1]`` (PyPTO fixes ``counter[0]`` to 0): the same bits as CANN
PyPTO gives for the same key and counter (its documented example is a test here), whatever the
tiling, thread count or backend. ``normal`` is Box-Muller on pairs of uniform fp32 values, the
sequence of ops PyPTO's own ``normal`` records."""

from __future__ import annotations

from typing import Any, List, Sequence

import pypto._core as _core
from ..._core import DataType
from .._dtypes import DT_BF16, DT_FP16, DT_FP32, check_dtype
from .._tracing import automatic_tiles, current_recorder, user_loc
from ..tensor import Tensor
from .cast import cast
from .core import _suffix, log, maximum, mul, sqrt
from .math import cos, sin
from .shape import concat, reshape
from .index import deinterleave, interleave

__all__ = ["uniform", "normal"]

_PHILOX = (1, 3)  # Philox, and "auto select" (which selects Philox)


def _u64(v: Any, what: str, op: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2**64:
        raise _core.UserError(f"pypto.{op}: {what} must be an int in [0, 2**64), got {v!r}" + _suffix())
    return v - 2**64 if v >= 2**63 else v  # the bit pattern as the recorder's int64


def _args(op: str, shape: Sequence[Any], key: Sequence[Any], counter: Sequence[Any], alg: Sequence[Any],
          dtype: Any) -> tuple:
    if not isinstance(shape, (list, tuple)) or not 1 <= len(shape) <= 4 or any(
            not isinstance(d, int) or isinstance(d, bool) or d <= 0 for d in shape):
        raise _core.UserError(f"pypto.{op}: shape must be 1 to 4 positive ints, got {shape!r}" + _suffix())
    for what, v, n in (("key", key, 1), ("counter", counter, 2), ("alg", alg, 1)):
        if not isinstance(v, (list, tuple)) or len(v) != n:
            raise _core.UserError(f"pypto.{op}: {what} must be a list of {n} int(s), got {v!r}" + _suffix())
    if alg[0] not in _PHILOX or isinstance(alg[0], bool):
        raise _core.UserError(f"pypto.{op}: alg [{alg[0]!r}] is not supported: 1 (Philox) or 3 (auto select, "
                              "Philox)" + _suffix())
    dt = check_dtype(dtype, f"pypto.{op}", _suffix())
    if dt not in (DT_FP32, DT_FP16, DT_BF16):
        raise _core.UserError(f"pypto.{op}: dtype {dt} is not supported: DT_FP32, DT_FP16 or DT_BF16" + _suffix())
    n = 1
    for d in shape:
        n *= d
    _u64(counter[0], "counter[0]", op)  # checked, and unused: PyPTO's counter is [0, counter[1]]
    return list(shape), n, _u64(key[0], "key[0]", op), _u64(counter[1], "counter[1]", op), dt


def _flat_uniform(op: str, n: int, key: int, offset: int, dtype: DataType) -> Tensor:
    rec = current_recorder(op)
    with automatic_tiles(op):  # a 1-D op under the program's tile of any rank (PyPTO flattens it too)
        return Tensor(_rec=rec, _id=rec.op("uniform", [], {"shape": [n], "dtype": dtype, "key": key,
                                                            "offset": offset}, user_loc()))


def _shaped(x: Tensor, shape: List[int]) -> Tensor:
    return x if len(shape) == 1 else reshape(x, shape)


def uniform(shape: Sequence[int], key: Sequence[int], counter: Sequence[int], alg: Sequence[int],
            dtype: DataType = DT_FP32) -> Tensor:
    """Values in [0, 1) of ``shape``: element g (flattened) is word g % 4 of Philox-4x32-10 of the
    counter (g // 4, counter[1]) under key[0], its low mantissa bits as the fraction."""
    shape, n, k, off, dt = _args("uniform", shape, key, counter, alg, dtype)
    return _shaped(_flat_uniform("uniform", n, k, off, dt), shape)


def normal(shape: Sequence[int], key: Sequence[int], counter: Sequence[int], alg: Sequence[int],
           dtype: DataType = DT_FP32) -> Tensor:
    """Standard normal values of ``shape``: Box-Muller on the uniform fp32 pairs (u1, u2) =
    (element 2i, element 2i + 1): sin(2 pi u2) * sqrt(-2 log max(u1, 1e-7)) at 2i and the cos at
    2i + 1, in fp32 (then cast to ``dtype``)."""
    shape, n, k, off, dt = _args("normal", shape, key, counter, alg, dtype)
    even = (n + 1) // 2 * 2
    with automatic_tiles("normal"):
        u = _flat_uniform("normal", even, k, off, DT_FP32)
        u1, u2 = deinterleave(u)
        v1 = mul(u2, 2.0 * 3.14159265358979323846)
        v2 = sqrt(mul(log(maximum(u1, 1.0e-7)), -2.0))
        first, second = interleave(mul(sin(v1), v2), mul(cos(v1), v2))
        out = concat([first, second], 0)
        if even != n:
            out = out[0:n]
        if dt != DT_FP32:
            out = cast(out, dt)
    return _shaped(out, shape)
