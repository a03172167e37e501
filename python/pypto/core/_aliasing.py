"""Whether two argument arrays of a call share memory (jit.py copies an input that overlaps an
output first, as numpy's ufuncs do), and outputs that share memory (SharedOutputs)."""

from __future__ import annotations

from typing import List, Tuple

import numpy as np
from ._tracing import _format_loc, user_loc
import pypto._core as _core


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


def _changed(now: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Where two arrays of one dtype differ bit for bit (a NaN that stays the same NaN is no
    change): a boolean mask."""
    bits = np.dtype(f"u{now.itemsize}")
    return now.view(bits) != before.view(bits)


def _identity(a: np.ndarray) -> Tuple[int, Tuple[int, ...], Tuple[int, ...], str]:
    return a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str


class SharedOutputs:
    """Outputs of one call that share memory (PyPTO's indexers keep 8-bit keys and fp32 scales
    in one cache and write both through full-row views of it, at offsets their index tensors
    hold). The first runs in place; each other one runs on a copy (parameters given the very
    same array share it), and after the call the elements it changed are written into the
    caller's memory. An element changed through two of them is a conflict (the NPU would keep
    whichever write landed last): the call is refused then."""

    _CHUNK = 1 << 26  # bytes of an output compared at a time (the masks stay small)

    def __init__(self) -> None:
        self.in_place: dict = {}  # identity -> param
        self.private: dict = {}  # identity -> (param, caller's array, copy, before)

    def add(self, arrays: List[np.ndarray], originals: List[np.ndarray], i: int, j: int) -> None:
        """Outputs i and j overlap (and are not the same array): j runs on a copy unless it is
        settled already."""
        ki, kj = _identity(originals[i]), _identity(originals[j])
        if kj in self.private or kj in self.in_place:
            return
        if ki not in self.private:
            self.in_place.setdefault(ki, i)
        copy = np.array(originals[j])
        self.private[kj] = (j, originals[j], copy, np.array(copy))
        for m, a in enumerate(originals):
            if _identity(a) == kj:
                arrays[m] = copy

    def merge(self, fn: str, names: List[str]) -> None:
        """After the call: the changed elements of each copy go into the caller's memory, unless
        the caller's memory no longer holds what the copy started from there (another output
        changed it too)."""
        first = names[next(iter(self.in_place.values()))] if self.in_place else "?"
        for p, caller, copy, before in self.private.values():
            if caller.ndim == 0:
                caller, copy, before = caller.reshape(1), copy.reshape(1), before.reshape(1)
            rows = max(1, self._CHUNK // max(1, copy[0].nbytes if len(copy) else 1))
            for r in range(0, len(copy), rows):
                c, b, dst = copy[r:r + rows], before[r:r + rows], caller[r:r + rows]
                mask = _changed(c, b)
                if not mask.any():
                    continue
                if _changed(dst[mask], b[mask]).any():
                    raise _core.UserError(f"@{fn}: the outputs '{first}' and '{names[p]}' share memory and the "
                                          "function changed the same elements through both" + _format_loc(user_loc())
                                          + "\nhint: write each element through one of them")
                dst[mask] = c[mask]
