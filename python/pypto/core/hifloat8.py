"""HiFloat8 (``DT_HF8``) bytes and their values in numpy, for goldens and host-side data.

HiFloat8 is the Ascend 950's tapered 8-bit float: a sign bit, a prefix-coded "dot" field that
gives the exponent's width, the exponent (its sign first) and a mantissa of 1 to 3 bits. Its
values run from 2^-22 to 2^15 (3 mantissa bits near 1, fewer far from it); 0x00 is zero, 0x80
the only NaN (there is no -0), 0x6F / 0xEF are +-infinity. There is no torch dtype for it:
tensors hold the bytes as uint8, as PyPTO's own tests do.

``to_hifloat8`` rounds to the nearest value, ties away from zero, saturating at +-2^15 (the
950's ROUND_A conversion as PyPTO's golden code and the PTO CPU simulator define it); it gives
the same bytes as ``pypto.cast(x, pypto.DT_HF8)`` in a program.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

__all__ = ["from_hifloat8", "to_hifloat8", "VALUES", "MAX"]


def _value(code: int) -> float:
    """The value of one code, read field by field."""
    sign = -1.0 if code & 0x80 else 1.0
    low = code & 0x7F
    if low >= 0x60:  # dot 11: |e| = 8 + 3 bits, 1 mantissa bit
        if low == 0x6F:
            return sign * float("inf")
        mag, m, mbits, neg = 8 + ((low >> 1) & 7), low & 1, 1, (low >> 4) & 1
    elif low >= 0x40:  # dot 10: |e| = 4 + 2 bits, 2 mantissa bits
        mag, m, mbits, neg = 4 + ((low >> 2) & 3), low & 3, 2, (low >> 4) & 1
    elif low >= 0x20:  # dot 01: |e| = 2 + 1 bit, 3 mantissa bits
        mag, m, mbits, neg = 2 + ((low >> 3) & 1), low & 7, 3, (low >> 4) & 1
    elif low >= 0x10:  # dot 001: |e| = 1
        mag, m, mbits, neg = 1, low & 7, 3, (low >> 3) & 1
    elif low >= 0x08:  # dot 0001: e = 0
        mag, m, mbits, neg = 0, low & 7, 3, 0
    else:  # dot 0000: 2^(m - 23), zero, and NaN in the place of -0
        if low == 0:
            return float("nan") if code & 0x80 else 0.0
        return sign * 2.0 ** (low - 23)
    return sign * (1.0 + m / 2 ** mbits) * 2.0 ** (-mag if neg else mag)


VALUES = np.array([_value(c) for c in range(256)], dtype=np.float32)  # code -> value
MAX = 32768.0  # the largest finite value


def _targets() -> Tuple[np.ndarray, np.ndarray]:
    """The finite non-negative values in increasing order and their codes."""
    codes = np.array([c for c in range(128) if np.isfinite(VALUES[c])], dtype=np.uint8)
    order = np.argsort(VALUES[codes].astype(np.float64), kind="stable")
    return VALUES[codes[order]].astype(np.float64), codes[order]


_POS_VALUES, _POS_CODES = _targets()


def from_hifloat8(codes: Any) -> np.ndarray:
    """HiFloat8 bytes (a uint8 array or torch tensor) as float32 values (exact)."""
    c = np.asarray(codes.numpy() if hasattr(codes, "numpy") else codes)
    if c.dtype != np.uint8:
        raise TypeError(f"from_hifloat8: expected uint8 bytes, got {c.dtype}")
    return VALUES[c]


def to_hifloat8(x: Any) -> np.ndarray:
    """float values as HiFloat8 bytes (uint8): nearest, ties away from zero, saturating at
    +-2^15 (infinities too), NaN as 0x80; a value that rounds to zero gives +0."""
    v = np.asarray(x.float().numpy() if hasattr(x, "numpy") else x, dtype=np.float64)
    a = np.minimum(np.abs(v), MAX)
    hi = np.clip(np.searchsorted(_POS_VALUES, a, side="left"), 1, len(_POS_VALUES) - 1)
    below, above = _POS_VALUES[hi - 1], _POS_VALUES[hi]
    pick = np.where(above - a <= a - below, hi, hi - 1)  # a tie goes up: away from zero
    code = _POS_CODES[pick]
    code = np.where(np.signbit(v) & (code != 0), code | 0x80, code)
    return np.where(np.isnan(v), 0x80, code).astype(np.uint8)
