"""The oracle's integer arithmetic for every width and signedness, the bitwise ops and shifts, and
pypto.cast into and out of the FP8 storage formats. A mixin of Shadow (oracle.py), beside NewOps.

Integers are exact and carried in their own numpy dtype (uint64 above 2^63 included), so nothing
here goes through int64 or float64 where that would round or wrap: conversions saturate (docs
and tests/python/test_unsigned_dtypes.py: float -> int truncates, NaN -> 0, +-inf -> the bounds;
int -> int clamps), + - * and ** wrap modulo 2^bits, x // 0 and x % 0 are 0, comparisons with a
real scalar are exact. Shifts (docs/isa.md TSHL / TSHR, pypto.bitwise_*_shift): an amount in
[0, bits) shifts (>> is arithmetic for signed dtypes, logical for unsigned ones); any other
amount gives 0 for <<, and for >> the sign fill (-1 or 0).

FP8 (DT_FP8E4M3, DT_FP8E5M2) is storage: pypto.cast from fp32 / fp16 / bf16 into it rounds as
common.fp8_round says, and back is exact; every other op on it (arithmetic, comparisons, casts
to or from integers) is a UserError naming the storage format."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .bounds import OT, zero_sign_unknown
from .common import (BITS, FLOATS, FMAX, FP8S, IBOUNDS, INTS, NP_INT, PREC, UINTS, ExpectedUserError,
                     OracleUnsupported, contig, fp8_round, fp8_round64, round64_to, round_to)

STORAGE_PATTERN = "storage format"
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}


def int_to_float(dt: str, v: np.ndarray) -> np.ndarray:
    """Integers -> float32 values of dt, rounded once from the exact integer (64-bit values
    beyond 2^53 would round twice through float64)."""
    v = np.asarray(v)
    if v.dtype not in (np.int64, np.uint64):
        return round64_to(dt, v.astype(np.float64))
    p = PREC[dt][0]
    if v.dtype == np.uint64:
        mag, neg = v.copy(), np.zeros(v.shape, bool)
    else:
        mag = np.where(v < 0, (~v.view(np.uint64)) + np.uint64(1), v.view(np.uint64))  # |v| without overflow
        neg = v < 0
    nbits = np.zeros(v.shape, np.int64)
    m = mag.copy()
    for s in (32, 16, 8, 4, 2, 1):  # bit length, branch-free
        big = m >= (np.uint64(1) << np.uint64(s))
        nbits += np.where(big, s, 0)
        m = np.where(big, m >> np.uint64(s), m)
    nbits += (m > 0).astype(np.int64)
    shift = np.maximum(nbits - p, 0).astype(np.uint64)
    q = mag >> shift
    rem = mag - (q << shift)
    half = np.where(shift > 0, np.uint64(1) << np.maximum(shift, np.uint64(1)) - np.uint64(1), np.uint64(0))
    up = (shift > 0) & ((rem > half) | ((rem == half) & ((q & np.uint64(1)) == 1)))
    q = q + up.astype(np.uint64)
    r = np.ldexp(q.astype(np.float64), shift.astype(np.int64)) * np.where(neg, -1.0, 1.0)
    with np.errstate(all="ignore"):
        r = np.where(np.abs(r) > FMAX[dt], np.copysign(np.inf, r), r)
        return r.astype(np.float32)


def float_to_int(dt: str, v64: np.ndarray) -> np.ndarray:
    """pypto.cast's default from a float: truncate toward zero (CAST_TRUNC, torch's .to(int)) and
    saturate at the dtype's bounds; NaN -> 0."""
    lo, hi = IBOUNDS[dt]
    t: Any = NP_INT[dt]
    with np.errstate(all="ignore"):
        q = np.where(np.isnan(v64), 0.0, np.trunc(v64))
        big, small = q >= float(hi), q <= float(lo)  # float(hi) may be hi + 1 (2^63, 2^64): then q fits below
        inner = np.where(big | small, 0.0, q).astype(t)
    return np.where(big, t(hi), np.where(small, t(lo), inner))


def int_to_int(v: np.ndarray, to: str) -> np.ndarray:
    """An integer array converted to `to`, saturating at its bounds (exact for uint64 too)."""
    lo, hi = IBOUNDS[to]
    v = np.asarray(v)
    if v.dtype == np.uint64:
        return np.minimum(v, np.uint64(hi)).astype(NP_INT[to])
    w = v.astype(np.int64)
    return np.clip(w, max(lo, IBOUNDS["int64"][0]), min(hi, IBOUNDS["int64"][1])).astype(NP_INT[to])


def int_vs_scalar(op: str, v: np.ndarray, s: Any) -> np.ndarray:
    """An exact comparison of an integer array (any width) with a real scalar s (an int is taken
    exactly): x < 2.5 is x < 3, x == 2.5 is never true, NaN compares unequal."""
    v = np.asarray(v)
    info = np.iinfo(v.dtype)
    lo, hi = int(info.min), int(info.max)
    full = lambda b: np.full(v.shape, b)  # noqa: E731
    if isinstance(s, float) and math.isnan(s):
        return full(op == "ne")
    if op in ("eq", "ne"):
        exact = not (isinstance(s, float) and (math.isinf(s) or s != math.floor(s)))
        t = int(s) if exact else None
        hit = v == v.dtype.type(t) if t is not None and lo <= t <= hi else full(False)
        return hit if op == "eq" else ~hit
    inf = isinstance(s, float) and math.isinf(s)
    if op in ("lt", "ge"):  # x < s <=> x < ceil(s)
        c = s if inf else math.ceil(s)
        res = full(True) if c > hi else full(False) if c <= lo else v < v.dtype.type(c)
        return res if op == "lt" else ~res
    f = s if inf else math.floor(s)  # le, gt: x <= s <=> x <= floor(s)
    res = full(True) if f >= hi else full(False) if f < lo else v <= v.dtype.type(f)
    return res if op == "le" else ~res


def ipow(a: np.ndarray, b: np.ndarray, dt: str) -> np.ndarray:
    """Integer a ** b, wrapping like repeated multiplication (modulo 2^64, then to the dtype's
    width); a negative b (signed only) gives 1 / a**|b| truncated."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    with np.errstate(all="ignore"):
        base = a.astype(np.uint64)  # two's complement: the low bits of the product are the same
        neg_b = b < 0 if dt not in UINTS else np.zeros(b.shape, bool)
        n = np.where(neg_b, 0, b).astype(np.uint64)
        r = np.ones(a.shape, np.uint64)
        while np.any(n > 0):
            r = np.where((n & np.uint64(1)) == 1, r * base, r)
            base = base * base
            n = n >> np.uint64(1)
        r = r.astype(NP_INT[dt])
    if dt in UINTS:
        return r
    a64 = a.astype(np.int64)
    inv = np.where(a64 == 1, 1, np.where(a64 == -1, np.where(b.astype(np.int64) & 1, -1, 1), 0))
    return np.where(neg_b, inv.astype(NP_INT[dt]), r)


def idiv(op: str, a: np.ndarray, b: np.ndarray, dt: str) -> np.ndarray:
    """floor_div / remainder (the divisor's sign) / fmod (the dividend's sign) of integers; x // 0
    and x % 0 are 0, MIN // -1 wraps."""
    with np.errstate(all="ignore"):
        if dt in UINTS:  # in uint64: exact for every unsigned width
            a, b = a.astype(np.uint64), b.astype(np.uint64)
            nz = np.where(b == 0, np.uint64(1), b)
            r = np.floor_divide(a, nz) if op == "floor_div" else np.remainder(a, nz)
            return np.where(b == 0, np.uint64(0), r).astype(NP_INT[dt])
        a, b = a.astype(np.int64), b.astype(np.int64)
        nz = np.where(b == 0, 1, b)
        safe = np.where(b == -1, 1, nz)
        if op == "floor_div":
            r = np.where(b == 0, 0, np.where(b == -1, -a, np.floor_divide(a, safe)))
        else:
            fn = np.remainder if op == "remainder" else np.fmod
            r = np.where((b == 0) | (b == -1), 0, fn(a, safe))
        return r.astype(NP_INT[dt])


def check_dim(op: str, nd: int, dim: int) -> None:
    """pypto refuses a dim outside [-rank, rank) (a reduction of a 0-d tensor, say)."""
    if not -nd <= dim < nd:
        raise ExpectedUserError(f"pypto.{op}: dim {dim} is out of range for a tensor of rank {nd}", "out of range")


def refuse_storage(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a Shadow op: an FP8 operand is a UserError naming the storage format."""
    def op(self: Any, *args: Any, **kw: Any) -> Any:
        for a in list(args) + list(kw.values()):
            if isinstance(a, OT) and a.dt in FP8S:
                raise ExpectedUserError(f"pypto.{name} on {a.dt}: a storage format (no arithmetic)", STORAGE_PATTERN)
        return fn(self, *args, **kw)
    op.__name__ = name
    op.__doc__ = fn.__doc__
    return op


class BitOps:
    """Shadow methods: bitwise ops and shifts on integers (on bool: the logical ops), and the
    FP8 half of pypto.cast. Relies on Shadow's _operand and the logical ops of NewOps."""

    def _bitwise(self, op: str, x: Any, y: Any) -> OT:
        t = x if isinstance(x, OT) else y
        if not isinstance(t, OT):
            raise OracleUnsupported(f"{op} of two scalars")
        if t.dt == "bool":
            if not (isinstance(x, OT) and isinstance(y, OT) and y.dt == "bool" and x.dt == "bool"):
                raise OracleUnsupported(f"{op} of bool with {x!r}, {y!r}")
            return getattr(self, "logical_" + op.split("_")[-1])(x, y)
        dt = t.dt
        if dt not in INTS:
            raise OracleUnsupported(f"{op} of {dt}")
        a, ea = self._operand(x, dt, op)  # type: ignore[attr-defined]
        b, eb = self._operand(y, dt, op)  # type: ignore[attr-defined]
        shape = np.broadcast_shapes(a.shape, b.shape)
        a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
        with np.errstate(all="ignore"):
            if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
                r = BITWISE[op](a, b)
            else:
                n = b.astype(np.int64)  # a uint64 amount >= 2^63 reads as negative: outside [0, bits) either way
                inside = (n >= 0) & (n < BITS[dt])
                k = np.where(inside, n, 0).astype(a.dtype)
                if op == "bitwise_left_shift":
                    r = np.where(inside, np.left_shift(a, k), 0)
                else:
                    fill = np.where(a < 0, -1, 0) if dt not in UINTS else 0
                    r = np.where(inside, np.right_shift(a, k), fill)
            r = np.asarray(r).astype(NP_INT[dt])
        e = np.where((np.broadcast_to(ea, shape) > 0) | (np.broadcast_to(eb, shape) > 0), np.inf, 0.0)
        return OT(contig(r), contig(e), dt)

    def bitwise_and(self, x: Any, y: Any) -> OT: return self._bitwise("bitwise_and", x, y)
    def bitwise_or(self, x: Any, y: Any) -> OT: return self._bitwise("bitwise_or", x, y)
    def bitwise_xor(self, x: Any, y: Any) -> OT: return self._bitwise("bitwise_xor", x, y)
    def bitwise_left_shift(self, x: Any, y: Any) -> OT: return self._bitwise("bitwise_left_shift", x, y)
    def bitwise_right_shift(self, x: Any, y: Any) -> OT: return self._bitwise("bitwise_right_shift", x, y)

    def bitwise_not(self, x: OT) -> OT:
        if x.dt == "bool":
            return self.logical_not(x)  # type: ignore[attr-defined]
        if x.dt not in INTS:
            raise OracleUnsupported(f"bitwise_not of {x.dt}")
        return OT(contig(np.invert(x.v)), np.where(x.e > 0, np.inf, 0.0), x.dt)

    def _cast_fp8(self, x: OT, to: str) -> OT:
        """pypto.cast where either side is an FP8 format."""
        fr = x.dt
        if fr in FP8S and to not in FLOATS:
            raise ExpectedUserError(f"pypto.cast: {fr} converts to a float dtype only, not {to}",
                                    "converts to a float dtype")
        if to in FP8S and fr not in FLOATS:
            raise ExpectedUserError(f"pypto.cast: {fr} to {to}: only the float dtypes convert to FP8",
                                    "float dtypes convert to")
        unc = np.isinf(x.e)
        if fr in FP8S:  # decoding is exact in every float dtype
            return OT(contig(round_to(to, x.v)), x.e.copy(), to)
        inexact = x.e > 0
        with np.errstate(all="ignore"):
            r = fp8_round(to, x.v)
            rr = r.astype(np.float64)
            v64 = x.v.astype(np.float64)
            # Rounding is monotonic: a value in [v - e, v + e] rounds to an FP8 value between the
            # ends' (a few float64 ulps wider, for the ends' own rounding).
            lo = v64 - x.e
            hi = v64 + x.e
            lo, hi = lo - np.abs(lo) * 2.0 ** -50, hi + np.abs(hi) * 2.0 ** -50
            rlo, rhi = fp8_round64(to, lo), fp8_round64(to, hi)
            e = np.maximum(np.abs(rlo - rr), np.abs(rhi - rr))
            e = np.where(np.isnan(e), np.inf, e)
            e = zero_sign_unknown(e, (rr == 0) & (np.signbit(rlo) != np.signbit(rhi)))
            e = np.where(inexact, e, 0.0)
            fin = np.isfinite(rr)
            e = np.where(fin, e, np.where(np.isfinite(v64) & inexact, np.inf, 0.0))
        return OT(contig(r), np.where(unc, np.inf, e), to)
