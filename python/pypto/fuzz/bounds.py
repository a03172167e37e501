"""The oracle's shadow tensor and its per-element error bounds.

An OT carries the oracle's values and, per element, a bound on how far a conforming
implementation may be from them: first-order propagation of the allowed per-op error (0 ulp for
correctly rounded ops, a few for exp/log/tanh..., n*u*sum|x| for sums). inf marks an element
whose class (NaN / inf / finite, or a bool's value) the contract does not determine
("uncertain": e.g. an overflow decided by an approximate exp); it is not compared."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .common import FMAX, IBOUNDS, INTS, PREC, ExpectedUserError, OracleUnsupported, ulp

SHADOW: Any = None  # the Shadow instance OT's operators dispatch to (set by oracle.py)


class OT:
    """A shadow tensor: values (float32 for floats, the int dtype for ints, numpy bool), an error
    bound (float64, inf = not determined by the contract) and the pypto dtype name."""

    __slots__ = ("v", "e", "dt")

    def __init__(self, v: np.ndarray, e: np.ndarray, dt: str):
        self.v = np.asarray(v)  # a 0-d result of numpy is a scalar: keep it an array
        self.e = np.asarray(e)
        self.dt = dt

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.v.shape)

    @property
    def ndim(self) -> int:
        return self.v.ndim

    @property
    def dtype(self) -> str:
        return self.dt

    def __getitem__(self, idx: Any) -> "OT":
        return OT(self.v[idx], self.e[idx], self.dt)

    def __setitem__(self, idx: Any, val: "OT") -> None:
        if not isinstance(val, OT) or val.dt != self.dt:
            raise OracleUnsupported(f"store of {getattr(val, 'dt', val)} into {self.dt}")
        if self.v[idx].shape != val.v.shape:
            raise OracleUnsupported(f"store shape {val.v.shape} into {self.v[idx].shape}")
        self.v[idx] = val.v
        self.e[idx] = val.e

    def __getattr__(self, name: str) -> Any:  # x.tanh(), x.clip(...): PyPTO's Tensor methods
        if name.startswith("_"):
            raise AttributeError(name)
        fn = getattr(SHADOW, name)
        return lambda *a, **k: fn(self, *a, **k)

    def __add__(self, o: Any) -> "OT": return SHADOW.add(self, o)
    def __radd__(self, o: Any) -> "OT": return SHADOW.add(o, self)
    def __sub__(self, o: Any) -> "OT": return SHADOW.sub(self, o)
    def __rsub__(self, o: Any) -> "OT": return SHADOW.sub(o, self)
    def __mul__(self, o: Any) -> "OT": return SHADOW.mul(self, o)
    def __rmul__(self, o: Any) -> "OT": return SHADOW.mul(o, self)
    def __truediv__(self, o: Any) -> "OT": return SHADOW.div(self, o)
    def __rtruediv__(self, o: Any) -> "OT": return SHADOW.div(o, self)
    def __floordiv__(self, o: Any) -> "OT": return SHADOW.floor_div(self, o)
    def __rfloordiv__(self, o: Any) -> "OT": return SHADOW.floor_div(o, self)
    def __mod__(self, o: Any) -> "OT": return SHADOW.remainder(self, o)
    def __rmod__(self, o: Any) -> "OT": return SHADOW.remainder(o, self)
    def __pow__(self, o: Any) -> "OT": return SHADOW.pow(self, o)
    def __rpow__(self, o: Any) -> "OT": return SHADOW.pow(o, self)
    def __neg__(self) -> "OT": return SHADOW.neg(self)
    def __abs__(self) -> "OT": return SHADOW.abs(self)
    def __lt__(self, o: Any) -> "OT": return SHADOW.lt(self, o)
    def __le__(self, o: Any) -> "OT": return SHADOW.le(self, o)
    def __gt__(self, o: Any) -> "OT": return SHADOW.gt(self, o)
    def __ge__(self, o: Any) -> "OT": return SHADOW.ge(self, o)
    def __eq__(self, o: Any) -> "OT": return SHADOW.eq(self, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> "OT": return SHADOW.ne(self, o)  # type: ignore[override]
    __hash__ = object.__hash__

    # & | ^ ~ << >> are bitwise in pypto: on masks they are the logical ops
    def __and__(self, o: Any) -> "OT": return SHADOW.bitwise_and(self, o)
    def __rand__(self, o: Any) -> "OT": return SHADOW.bitwise_and(o, self)
    def __or__(self, o: Any) -> "OT": return SHADOW.bitwise_or(self, o)
    def __ror__(self, o: Any) -> "OT": return SHADOW.bitwise_or(o, self)
    def __xor__(self, o: Any) -> "OT": return SHADOW.bitwise_xor(self, o)
    def __rxor__(self, o: Any) -> "OT": return SHADOW.bitwise_xor(o, self)
    def __lshift__(self, o: Any) -> "OT": return SHADOW.bitwise_left_shift(self, o)
    def __rlshift__(self, o: Any) -> "OT": return SHADOW.bitwise_left_shift(o, self)
    def __rshift__(self, o: Any) -> "OT": return SHADOW.bitwise_right_shift(self, o)
    def __rrshift__(self, o: Any) -> "OT": return SHADOW.bitwise_right_shift(o, self)
    def __invert__(self) -> "OT": return SHADOW.bitwise_not(self)


def smul(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """x * e with 0 where e == 0 (so inf * 0 is 0: an exact operand adds no error)."""
    with np.errstate(all="ignore"):
        return np.where(e == 0, 0.0, np.abs(x) * e)


def finish(dt: str, r: np.ndarray, prop: np.ndarray, ins: Sequence[Tuple[np.ndarray, np.ndarray]], own_ulps: float,
           zero_sens: Sequence[Tuple[np.ndarray, np.ndarray]] = (), ideal: Optional[np.ndarray] = None) -> np.ndarray:
    """The error bound of an elementwise result r: `prop` (the inputs' errors carried through the
    op) where an input is inexact, plus own_ulps ulps of r; non-finite results must be exact
    unless an inexact input could have made them (or, with `ideal`, an approximate op at the
    overflow threshold); zero_sens operands whose interval reaches 0 make a non-finite result
    uncertain; a result whose interval crosses the largest finite value is uncertain."""
    shape = r.shape
    inexact = np.zeros(shape, bool)
    unc = np.zeros(shape, bool)
    in_nonfin = np.zeros(shape, bool)
    for v, e in ins:
        v = np.broadcast_to(v, shape)
        e = np.broadcast_to(e, shape)
        inexact |= e > 0
        unc |= np.isinf(e)
        in_nonfin |= ~np.isfinite(v)
    with np.errstate(all="ignore"):
        prop = np.where(np.isnan(prop), np.inf, np.broadcast_to(prop, shape))
        rr = r.astype(np.float64)
        if dt in INTS:
            lo, hi = IBOUNDS[dt]
            err = np.where(inexact, prop, 0.0)
            err = np.where(inexact & ((rr + err > hi) | (rr - err < lo)), np.inf, err)
            return np.where(unc, np.inf, err)
        sp = ulp(rr, dt)
        # own error: ulps at the result, taken where the neighbour could be (the larger binade)
        own = own_ulps * ulp(np.abs(rr) + own_ulps * sp, dt) if own_ulps else 0.0
        err = np.where(inexact, prop + sp, 0.0) + own
        fin = np.isfinite(rr)
        created = ~fin & ~in_nonfin
        err = np.where(fin, err, 0.0)
        err = np.where(created & inexact, np.inf, err)
        if own_ulps and ideal is not None:  # an approximate op at the overflow threshold
            p = PREC[dt][0]
            near = np.abs(ideal) <= FMAX[dt] * (1 + (own_ulps + 2) * 2.0 ** -(p - 1))
            err = np.where(created & ~inexact & near, np.inf, err)
        for v, e in zero_sens:
            v = np.broadcast_to(v, shape)
            e = np.broadcast_to(e, shape)
            err = np.where(~fin & (e > 0) & (np.abs(v) <= e), np.inf, err)
        err = np.where(fin & (err > 0) & (np.abs(rr) + err > FMAX[dt]), np.inf, err)
        return np.where(unc, np.inf, err)


ZERO_SIGN = 5e-324  # "a zero of unknown sign": the smallest error bound there is


def zero_sign_unknown(e: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Which zero max/min/relu/amax/amin return for +0 against -0 is not pinned down: numpy's own
    SIMD loops return the second operand (np.maximum(0.0, -0.0) is -0.0 here), the interpreter the
    first (docs/numerics.md). A tiny error bound keeps the value compared (0 == -0) but makes a
    later division by it, or inf * it, uncertain."""
    return np.where(mask & (e == 0), ZERO_SIGN, e)


def value_error(e: np.ndarray) -> np.ndarray:
    """The error of a value for ops blind to the sign of zero (compare, argmax, where's mask)."""
    return np.where(e == ZERO_SIGN, 0.0, e)


def check_int_scalar(s: Any, dt: str, op: str) -> int:
    lo, hi = IBOUNDS[dt]
    if isinstance(s, float) and not (math.isfinite(s) and s.is_integer()):
        raise ExpectedUserError(f"pypto.{op}: the scalar {s!r} is not an integer but the tensor is {dt}",
                                "not an integer")
    si = int(s)
    if not lo <= si <= hi:
        raise ExpectedUserError(f"pypto.{op}: the scalar {s!r} is out of the range of {dt}", "out of the range")
    return si
