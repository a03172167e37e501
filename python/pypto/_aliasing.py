"""Whether two argument arrays of a call share memory (jit.py refuses two outputs that do and
copies an input that overlaps an output first, as numpy's ufuncs do)."""

from __future__ import annotations

from typing import Tuple

import numpy as np


def _disjoint_in_rows(a: np.ndarray, b: np.ndarray) -> bool:
    """Two arrays with rows of the same stride whose byte ranges within a row do not meet (two
    column ranges of one cache row, in dtypes of other sizes: PyPTO's indexer keeps its fp8 keys
    and fp32 scales side by side in one uint8 cache): they share no byte."""
    if a.ndim == 0 or b.ndim == 0 or a.strides[0] != b.strides[0] or a.strides[0] <= 0:
        return False
    period = a.strides[0]

    def row_bytes(x: np.ndarray) -> Tuple[int, int]:  # (first byte, bytes spanned) of one row
        lo = sum(st * (n - 1) for st, n in zip(x.strides[1:], x.shape[1:]) if st < 0)
        hi = sum(st * (n - 1) for st, n in zip(x.strides[1:], x.shape[1:]) if st > 0) + x.itemsize
        return x.__array_interface__["data"][0] + lo, hi - lo

    (sa, na), (sb, nb) = row_bytes(a), row_bytes(b)
    gap = (sb - sa) % period
    return na + nb <= period and gap >= na and period - gap >= nb


def overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays share an element: exactly for interleaved slices of one buffer (the
    two column ranges of a cache), conservatively when that is too hard to decide."""
    if not np.may_share_memory(a, b) or _disjoint_in_rows(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=100000))
    except np.exceptions.TooHardError:
        return True
