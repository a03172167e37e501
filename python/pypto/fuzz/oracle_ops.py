"""The oracle of the ops added after the first fuzzer: elementwise math (tanh ... pow atan2
floor_div lrelu), comparisons, logical ops, where and clip, prod / argmax / argmin / cumsum / var,
transpose / permute, topk and gather. A mixin of Shadow (oracle.py).

Contract (docs/numerics.md, docs/isa.md): fp32 transcendental math is within 2 ulp of the
correctly rounded result (the oracle: numpy in float64, rounded once); fp16/bf16 compute in fp32
and round once (1 ulp of the 16-bit type); floor / ceil / trunc / rint / sign / copysign / fmod /
floor_div / remainder, comparisons, where, clip and movement are exact."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .bounds import OT, finish, smul, value_error
from .common import (FLOATS, FMAX, IBOUNDS, INTS, NP_INT, U32, ExpectedUserError, OracleUnsupported, contig, round_to,
                     ulp)
from .oracle_bits import check_dim, idiv, int_vs_scalar, ipow

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)

F64 = {"tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
       "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
       "atanh": np.arctanh, "exp2": np.exp2, "expm1": np.expm1, "log2": np.log2, "log10": np.log10,
       "log1p": np.log1p, "erf": lambda a: np.asarray(_erf(a), np.float64),
       "erfc": lambda a: np.asarray(_erfc(a), np.float64),
       "cbrt": np.cbrt, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
       "sign": lambda a: np.where(a > 0, 1.0, np.where(a < 0, -1.0, np.where(a == 0, 0.0, a)))}
EXACT = {"floor", "ceil", "trunc", "rint", "sign", "copysign", "fmod", "floor_div", "remainder", "lrelu"}
SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
NP_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
          "ge": np.greater_equal}


def _own(dt: str, op: str) -> int:
    if op in EXACT:
        return 0
    return 2 if dt == "fp32" else 1


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _swap_scalar_left(op: str, x: Any, y: Any) -> Tuple[str, Any, Any]:
    if _is_scalar(x) and isinstance(y, OT):
        return SWAPPED[op], y, x
    return op, x, y


class NewOps:
    """Shadow methods of the newer ops (relies on Shadow's _operand, cast, mul, ...)."""

    # --- elementwise math, one operand ----------------------------------------------------------
    def _math1(self, op: str, x: Any) -> OT:
        if not isinstance(x, OT):
            raise OracleUnsupported(f"{op} of {x!r}")
        dt = x.dt
        if dt in INTS:
            if op == "sign":
                r = np.sign(x.v).astype(NP_INT[dt])
                with np.errstate(all="ignore"):
                    e = np.where((x.e > 0) & (np.abs(x.v.astype(np.float64)) <= x.e), 2.0, 0.0)
                return OT(r, np.where(np.isinf(x.e), np.inf, e), dt)
            if op in ("floor", "ceil", "trunc", "rint"):
                return x  # integers are already whole: pypto returns its input
            if op in ("exp2", "expm1"):
                return self._math1(op, self.cast(x, "fp32"))
            raise OracleUnsupported(f"integer {op}")
        if dt not in FLOATS:
            raise OracleUnsupported(f"{op} of {dt}")
        a64 = x.v.astype(np.float64)
        ea = x.e
        f = F64[op]
        with np.errstate(all="ignore"):
            ideal = f(a64)
            if op == "sign" and dt in ("fp16", "bf16"):  # torch's sign(NaN) = 0 (the 16-bit contract)
                ideal = np.where(np.isnan(a64), 0.0, ideal)
            r = round_to(dt, ideal.astype(np.float32))
            lo, hi = f(a64 - ea), f(a64 + ea)
            prop = np.maximum(np.abs(hi - ideal), np.abs(lo - ideal))  # monotonic: the interval's ends
            if op in ("sin", "cos"):
                prop = np.minimum(ea, 2.0)
            elif op == "tan":  # a pole inside the interval: anything
                pole = (np.sign(np.cos(a64 - ea)) != np.sign(np.cos(a64 + ea))) | (ea >= 1.5)
                prop = np.where(pole, np.inf, prop)
            elif op == "cosh":  # convex: the minimum 1 may be inside
                prop = np.where((a64 - ea <= 0) & (a64 + ea >= 0), np.maximum(prop, ideal - 1), prop)
            elif op == "sign":
                prop = np.where(np.abs(a64) > ea, 0.0, 2.0)
            prop = np.where(ea == 0, 0.0, prop)
        e = finish(dt, r, prop, [(a64, ea)], _own(dt, op), (), ideal)
        return OT(contig(r), contig(e), dt)

    def tanh(self, x: OT) -> OT: return self._math1("tanh", x)
    def sin(self, x: OT) -> OT: return self._math1("sin", x)
    def cos(self, x: OT) -> OT: return self._math1("cos", x)
    def tan(self, x: OT) -> OT: return self._math1("tan", x)
    def asin(self, x: OT) -> OT: return self._math1("asin", x)
    def acos(self, x: OT) -> OT: return self._math1("acos", x)
    def atan(self, x: OT) -> OT: return self._math1("atan", x)
    def sinh(self, x: OT) -> OT: return self._math1("sinh", x)
    def cosh(self, x: OT) -> OT: return self._math1("cosh", x)
    def asinh(self, x: OT) -> OT: return self._math1("asinh", x)
    def acosh(self, x: OT) -> OT: return self._math1("acosh", x)
    def atanh(self, x: OT) -> OT: return self._math1("atanh", x)
    def exp2(self, x: OT) -> OT: return self._math1("exp2", x)
    def expm1(self, x: OT) -> OT: return self._math1("expm1", x)
    def log2(self, x: OT) -> OT: return self._math1("log2", x)
    def log10(self, x: OT) -> OT: return self._math1("log10", x)
    def log1p(self, x: OT) -> OT: return self._math1("log1p", x)
    def erf(self, x: OT) -> OT: return self._math1("erf", x)
    def erfc(self, x: OT) -> OT: return self._math1("erfc", x)
    def cbrt(self, x: OT) -> OT: return self._math1("cbrt", x)
    def floor(self, x: OT) -> OT: return self._math1("floor", x)
    def ceil(self, x: OT) -> OT: return self._math1("ceil", x)
    def trunc(self, x: OT) -> OT: return self._math1("trunc", x)
    def sign(self, x: OT) -> OT: return self._math1("sign", x)

    def round(self, x: OT, decimals: int = 0) -> OT:
        if x.dt in INTS or decimals == 0:
            return self._math1("rint", x)
        scale = 10.0 ** decimals  # rint(x * 10**d) / 10**d in x's precision, as pypto.round
        return self.div(self._math1("rint", self.mul(x, scale)), scale)

    # --- elementwise math, two operands ---------------------------------------------------------
    def _math2(self, op: str, x: Any, y: Any) -> OT:
        t = x if isinstance(x, OT) else y
        if not isinstance(t, OT):
            raise OracleUnsupported(f"{op} of two scalars")
        if op == "pow" and isinstance(x, OT) and x.dt in INTS and isinstance(y, float):
            return self._math2(op, self.cast(x, "fp32"), y)  # PyPTO: an integer to a float power is fp32
        dt = t.dt
        if dt == "bool" or (dt in INTS and op in ("atan2", "hypot", "copysign")):
            raise OracleUnsupported(f"{op} of {dt}")
        a, ea = self._operand(x, dt, op)
        b, eb = self._operand(y, dt, op)
        shape = np.broadcast_shapes(a.shape, b.shape)
        a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
        ea, eb = np.broadcast_to(ea, shape), np.broadcast_to(eb, shape)
        if dt in INTS:
            return self._imath2(op, a, b, ea, eb, dt)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(all="ignore"):
            if op in ("floor_div", "remainder", "fmod"):  # float32 arithmetic, as numpy's (elem_math.hpp)
                fn = {"floor_div": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod}[op]
                ideal = None
                r = round_to(dt, fn(a.astype(np.float32), b.astype(np.float32)))
                if op == "remainder" and dt in ("fp16", "bf16"):  # torch: a zero has the dividend's sign
                    r = np.where(r == 0, np.copysign(np.zeros_like(r), a.astype(r.dtype)), r)
                q = a64 / b64
                dq = np.where(np.abs(b64) > eb, (smul(a64, eb) + smul(b64, ea)) / (np.abs(b64) * (np.abs(b64) - eb)),
                              np.inf)
                rnd = np.trunc if op == "fmod" else np.floor
                stable = (rnd(q - dq) == rnd(q + dq)) & np.isfinite(dq)
                if op == "floor_div":
                    prop = np.where(stable, 0.0, np.maximum(np.abs(rnd(q + dq) - rnd(q)), np.abs(rnd(q - dq) - rnd(q))))
                else:
                    prop = np.where(stable, ea + smul(rnd(q), eb), np.inf)
            else:
                ideal = {"pow": np.power, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign}[op](a64, b64)
                r = round_to(dt, ideal.astype(np.float32))
                if op == "pow":
                    corners = [np.power(a64 + sa * ea, b64 + sb * eb) for sa in (-1, 1) for sb in (-1, 1)]
                    prop = np.max([np.abs(c - ideal) for c in corners], axis=0)
                    prop = np.where((ea > 0) & (a64 - ea <= 0) & (a64 + ea >= 0), np.inf, prop)
                elif op == "atan2":  # |grad| = 1 / r; the branch cut along the negative x axis
                    rmin = np.sqrt(np.maximum(np.abs(a64) - ea, 0) ** 2 + np.maximum(np.abs(b64) - eb, 0) ** 2)
                    prop = np.where(rmin > 0, (ea + eb) / rmin, np.inf)
                    prop = np.where((b64 - eb < 0) & (np.abs(a64) <= ea) & (ea > 0), np.inf, prop)
                elif op == "hypot":
                    prop = ea + eb
                else:  # copysign: the sign of b may be unknown, or that of a NaN
                    prop = np.where((eb > 0) & (np.abs(b64) <= eb), 2 * np.abs(a64) + ea, ea)
                prop = np.where((ea == 0) & (eb == 0), 0.0, prop)
        e = finish(dt, r, prop, [(a64, ea), (b64, eb)], _own(dt, op), (), ideal)
        if op == "copysign":
            e = np.where(np.isnan(b64) & ~np.isnan(a64), np.inf, e)  # a computed NaN's sign is not specified
        return OT(contig(r), contig(e), dt)

    def _imath2(self, op: str, a: np.ndarray, b: np.ndarray, ea: np.ndarray, eb: np.ndarray, dt: str) -> OT:
        if op == "pow":
            r = ipow(a, b, dt)
        elif op in ("floor_div", "remainder", "fmod"):
            r = idiv(op, a, b, dt)
        else:
            raise OracleUnsupported(f"integer {op}")
        e = np.where((ea > 0) | (eb > 0), np.inf, 0.0)  # discontinuous in an inexact operand
        return OT(contig(r), e, dt)

    def pow(self, x: Any, y: Any) -> OT: return self._math2("pow", x, y)
    def atan2(self, x: Any, y: Any) -> OT: return self._math2("atan2", x, y)
    def hypot(self, x: Any, y: Any) -> OT: return self._math2("hypot", x, y)
    def copysign(self, x: Any, y: Any) -> OT: return self._math2("copysign", x, y)
    def floor_div(self, x: Any, y: Any) -> OT: return self._math2("floor_div", x, y)
    def remainder(self, x: Any, y: Any) -> OT: return self._math2("remainder", x, y)
    def fmod(self, x: Any, y: Any) -> OT: return self._math2("fmod", x, y)

    def lrelu(self, x: OT, negative_slope: float = 0.01) -> OT:
        """x < 0 ? x * slope : x, in fp32 (the slope an fp32 scalar), rounded once."""
        dt = x.dt
        if dt not in FLOATS:
            raise OracleUnsupported(f"lrelu of {dt}")
        s = np.float32(negative_slope)
        with np.errstate(all="ignore"):
            r = round_to(dt, np.where(x.v < 0, x.v * s, x.v))
            a64 = x.v.astype(np.float64)
            prop = x.e * max(1.0, float(s))
        e = finish(dt, r, prop, [(a64, x.e)], 0)
        return OT(contig(r), contig(e), dt)

    # --- comparisons, logic, where, clip --------------------------------------------------------
    def _cmp(self, op: str, x: Any, y: Any) -> OT:
        op, x, y = _swap_scalar_left(op, x, y)
        if not isinstance(x, OT):
            raise OracleUnsupported(f"{op} of {x!r}")
        dt = x.dt
        a64 = x.v.astype(np.float64)
        ea = value_error(x.e)
        if _is_scalar(y):
            if dt in INTS:
                r = int_vs_scalar(op, x.v, y)
                b64, eb = np.float64(y), 0.0
            else:  # the scalar in the tensor's precision (numpy: fp32; torch: the 16-bit type)
                with np.errstate(all="ignore"):
                    s = round_to(dt, np.float32(y))
                r = NP_CMP[op](x.v, s)
                b64, eb = np.float64(s), 0.0
        else:
            if not isinstance(y, OT) or y.dt != dt:
                raise OracleUnsupported(f"{op} of {dt} and {getattr(y, 'dt', y)}")
            r = NP_CMP[op](x.v, y.v)
            b64, eb = y.v.astype(np.float64), value_error(y.e)
        with np.errstate(all="ignore"):
            tol = ea + eb
            unc = np.isinf(tol) | ((tol > 0) & (np.abs(a64 - b64) <= tol))
        r = contig(np.broadcast_to(r, unc.shape))
        return OT(r, np.where(unc, np.inf, 0.0), "bool")

    def eq(self, x: Any, y: Any) -> OT: return self._cmp("eq", x, y)
    def ne(self, x: Any, y: Any) -> OT: return self._cmp("ne", x, y)
    def lt(self, x: Any, y: Any) -> OT: return self._cmp("lt", x, y)
    def le(self, x: Any, y: Any) -> OT: return self._cmp("le", x, y)
    def gt(self, x: Any, y: Any) -> OT: return self._cmp("gt", x, y)
    def ge(self, x: Any, y: Any) -> OT: return self._cmp("ge", x, y)
    def greater(self, x: Any, y: Any) -> OT: return self._cmp("gt", x, y)

    @staticmethod
    def _truth(x: OT) -> Tuple[np.ndarray, np.ndarray]:
        """(non-zero, undetermined): NaN is True; an inexact value whose interval reaches 0 is either."""
        if x.dt == "bool":
            return x.v, np.isinf(x.e)
        e = value_error(x.e)
        with np.errstate(all="ignore"):
            return x.v != 0, np.isinf(e) | ((e > 0) & (np.abs(x.v.astype(np.float64)) <= e))

    def _logical(self, op: str, x: OT, y: OT) -> OT:
        if not isinstance(x, OT) or not isinstance(y, OT):
            raise OracleUnsupported(f"{op} of a scalar")
        (tx, ux), (ty, uy) = self._truth(x), self._truth(y)
        r = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op](tx, ty)
        return OT(contig(r), np.where(ux | uy, np.inf, 0.0), "bool")

    def logical_and(self, x: OT, y: OT) -> OT: return self._logical("and", x, y)
    def logical_or(self, x: OT, y: OT) -> OT: return self._logical("or", x, y)
    def logical_xor(self, x: OT, y: OT) -> OT: return self._logical("xor", x, y)

    def logical_not(self, x: OT) -> OT:
        t, u = self._truth(x)
        return OT(contig(~t), np.where(u, np.inf, 0.0), "bool")

    def _classify(self, op: str, x: OT) -> OT:
        v = x.v
        unc = np.isinf(x.e)
        if x.dt in FLOATS:
            r = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}[op](v)
            if op == "signbit":  # the sign of a NaN, or of a value near 0, is not specified
                with np.errstate(all="ignore"):
                    unc = unc | np.isnan(v) | ((x.e > 0) & (np.abs(v.astype(np.float64)) <= x.e))
        else:
            r = {"isnan": np.zeros(v.shape, bool), "isinf": np.zeros(v.shape, bool),
                 "isfinite": np.ones(v.shape, bool)}.get(op)
            if r is None:
                r = v < 0
                with np.errstate(all="ignore"):
                    unc = unc | ((x.e > 0) & (np.abs(v.astype(np.float64)) <= x.e))
        return OT(contig(r), np.where(unc, np.inf, 0.0), "bool")

    def isnan(self, x: OT) -> OT: return self._classify("isnan", x)
    def isinf(self, x: OT) -> OT: return self._classify("isinf", x)
    def isfinite(self, x: OT) -> OT: return self._classify("isfinite", x)
    def signbit(self, x: OT) -> OT: return self._classify("signbit", x)

    def where(self, condition: OT, input: Any, other: Any) -> OT:  # noqa: A002 - PyPTO's names
        if not isinstance(condition, OT) or condition.dt != "bool":
            raise OracleUnsupported(f"where with condition {condition!r}")
        tensors = [v for v in (input, other) if isinstance(v, OT)]
        dt = tensors[0].dt if tensors else "fp32"
        vals = []
        for v in (input, other):
            if isinstance(v, OT):
                if v.dt != dt:
                    raise OracleUnsupported(f"where of {v.dt} and {dt}")
                vals.append((v.v, v.e))
            elif dt in INTS:
                s = float(v)
                if not math.isfinite(s) or s != math.floor(s):
                    raise ExpectedUserError(f"pypto.where: the scalar {v!r} is not an integer",
                                            "not an integer")
                info = np.iinfo(NP_INT[dt])
                if not info.min <= s <= info.max:
                    raise ExpectedUserError(f"pypto.where: the scalar {v!r} is out of the range of {dt}",
                                            "out of the range")
                vals.append((np.array(int(v), NP_INT[dt]), np.zeros(())))
            else:
                with np.errstate(all="ignore"):
                    vals.append((round_to(dt, np.float32(v)), np.zeros(())))
        (a, ea), (b, eb) = vals
        c = condition.v
        r = np.where(c, a, b)
        e = np.where(np.isinf(condition.e), np.inf, np.where(c, ea, eb))
        return OT(contig(r), contig(np.broadcast_to(e, r.shape)), dt)

    def clip(self, input: OT, min: Any = None, max: Any = None) -> OT:  # noqa: A001,A002 - PyPTO's names
        """maximum then minimum, as pypto.clip; integer bounds: x >= 2.5 is x >= 3, within the dtype."""
        if input.dt in INTS:
            lo, hi = IBOUNDS[input.dt]
            if _is_scalar(min):
                min = builtins.max(lo, builtins.min(hi, math.ceil(float(min))))
            if _is_scalar(max):
                max = builtins.max(lo, builtins.min(hi, math.floor(float(max))))
        out = input
        if min is not None:
            out = self.maximum(out, min)
        if max is not None:
            out = self.minimum(out, max)
        return out

    # --- reductions and scans ------------------------------------------------------------------
    def prod(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT:
        check_dim("prod", x.ndim, dim)
        w, dt = self._widen(x)
        ax = dim % w.ndim
        unc = np.any(np.isinf(w.e), axis=ax, keepdims=keepdim)
        if w.dt in INTS:  # wrapping: the product modulo 2**bits, in any order
            r = np.prod(w.v, axis=ax, keepdims=keepdim, dtype=NP_INT[w.dt])
            e = np.where(np.any(w.e > 0, axis=ax, keepdims=keepdim), np.inf, 0.0)
            return OT(contig(r), np.where(unc, np.inf, e), w.dt)
        v64 = w.v.astype(np.float64)
        n = w.shape[ax]
        with np.errstate(all="ignore"):
            r = np.prod(v64, axis=ax, keepdims=keepdim).astype(np.float32)  # the reference: double, rounded once
            rr = r.astype(np.float64)
            a = np.abs(v64)
            fin = np.isfinite(a) & (a > 0)
            lg = np.where(fin, np.log2(np.where(fin, a, 1.0)), 0.0)
            big = np.sum(np.where(lg > 0, lg, 0.0), axis=ax, keepdims=keepdim)
            small = np.sum(np.where(lg < 0, lg, 0.0), axis=ax, keepdims=keepdim)
            has_small = np.any(fin & (lg < 0), axis=ax, keepdims=keepdim)
            # a partial product (any order) may overflow or go subnormal: the answer depends on the order
            order_dep = (big >= 127.9) | (has_small & (small < -125.9))
            has_nan = np.any(np.isnan(v64), axis=ax, keepdims=keepdim)
            rel_in = np.sum(np.where(w.e > 0, w.e / a, 0.0), axis=ax, keepdims=keepdim)
            reach0 = np.any((w.e > 0) & (a <= w.e), axis=ax, keepdims=keepdim)
            e = np.abs(rr) * (rel_in * (1 + 2 * rel_in) + 2.0 * max(n - 1, 0) * U32) + ulp(rr, "fp32")
            e = np.where(reach0, np.inf, e)
            e = np.where(np.isfinite(rr), e, np.where(rel_in > 0, np.inf, 0.0))
            e = np.where(has_nan, 0.0, np.where(order_dep, np.inf, e))
        return self._narrow(OT(contig(r), np.where(unc & ~has_nan, np.inf, e), "fp32"), dt)

    def _arg(self, op: str, x: OT, dim: int, keepdim: bool) -> OT:
        check_dim(op, x.ndim, dim)
        ax = dim % x.ndim
        f = np.argmax if op == "argmax" else np.argmin
        r = f(x.v, axis=ax, keepdims=True)  # NaN wins (the first one), ties: the first index
        sel_v = np.take_along_axis(x.v, r, axis=ax).astype(np.float64)
        ev = value_error(x.e)
        sel_e = np.take_along_axis(ev, r, axis=ax)
        idx = np.arange(x.shape[ax]).reshape([-1 if d == ax else 1 for d in range(x.ndim)])
        with np.errstate(all="ignore"):
            tol = ev + sel_e
            close = (tol > 0) & (np.abs(x.v.astype(np.float64) - sel_v) <= tol) & (idx != r)
        unc = np.any(close | np.isinf(x.e), axis=ax, keepdims=True)
        if not keepdim:
            r, unc = np.squeeze(r, ax), np.squeeze(unc, ax)
        return OT(contig(r.astype(np.int32)), np.where(unc, np.inf, 0.0), "int32")

    def argmax(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._arg("argmax", x, dim, keepdim)
    def argmin(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._arg("argmin", x, dim, keepdim)

    def cumsum(self, x: OT, dim: int) -> OT:
        check_dim("cumsum", x.ndim, dim)
        ax = dim % x.ndim
        unc = np.maximum.accumulate(np.isinf(x.e), axis=ax)
        if x.dt in INTS:  # 64-bit accumulation: int64 (uint16/32/64: uint64, numpy's choice), wrapping
            wide = "uint64" if x.dt in ("uint16", "uint32", "uint64") else "int64"
            with np.errstate(all="ignore"):
                r = np.cumsum(x.v.astype(NP_INT[wide]), axis=ax, dtype=NP_INT[wide])
            e = np.cumsum(np.where(np.isinf(x.e), 0.0, x.e), axis=ax)
            return OT(contig(r), np.where(unc, np.inf, e), wide)
        w, dt = self._widen(x)
        with np.errstate(all="ignore"):
            r = np.cumsum(w.v, axis=ax, dtype=np.float32)  # in order, one fp32 rounding per step
            rr = r.astype(np.float64)
            ein = np.where(np.isfinite(w.e), w.e, 0.0)
            inexact = np.maximum.accumulate(ein > 0, axis=ax)
            e = np.cumsum(ein, axis=ax) + np.cumsum(np.where(inexact, ulp(rr, "fp32"), 0.0), axis=ax)
            fin = np.isfinite(rr)
            nonfin_in = np.maximum.accumulate(~np.isfinite(w.v), axis=ax)  # an inf / NaN input so far
            bad = inexact & ((fin & (np.abs(rr) + e > FMAX["fp32"])) | (~fin & ~nonfin_in))
            bad = np.maximum.accumulate(bad, axis=ax)
            e = np.where(fin, e, 0.0)
            e = np.where(bad | unc, np.inf, e)
        return self._narrow(OT(contig(r), e, "fp32"), dt)

    def var(self, input: OT, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> OT:  # noqa: A002
        x = input
        if x.dt not in FLOATS:
            raise ExpectedUserError(f"pypto.var needs a floating-point tensor, got {x.dt}", "floating-point")
        dims = list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
        dims = sorted({d % x.ndim for d in dims})
        n = 1
        for d in dims:
            n *= x.shape[d]
        xw, dt = self._widen(x)
        m = xw
        for d in dims:
            m = self.mean(m, d, keepdim=True)
        c = self.sub(xw, m)
        sq = self.mul(c, c)
        for d in reversed(dims):
            sq = self.sum(sq, d, keepdim=keepdim)
        dec = self._narrow(self.div(sq, max(0.0, n - float(correction))), dt)
        tdims = tuple(dims)

        def tvar(T: Any, t: Any) -> Any:
            with warnings.catch_warnings():  # "degrees of freedom is <= 0": numpy's inf / NaN is meant
                warnings.simplefilter("ignore")
                return T.var(t.float(), dim=tdims, correction=correction, keepdim=keepdim).to(t.dtype)
        return self._torch16(dec, tvar, x)

    # --- movement and index ----------------------------------------------------------------------
    def permute(self, input: OT, dims: Sequence[int]) -> OT:  # noqa: A002
        perm = [d % input.ndim for d in dims]
        return OT(contig(np.transpose(input.v, perm)), contig(np.transpose(input.e, perm)),
                  input.dt)

    def transpose(self, input: OT, dim0: int, dim1: int) -> OT:  # noqa: A002
        perm = list(range(input.ndim))
        a, b = dim0 % input.ndim, dim1 % input.ndim
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(input, perm)

    def topk(self, input: OT, k: int, dim: Optional[int] = None, largest: bool = True,  # noqa: A002
             algo: Any = None) -> Tuple[OT, OT]:
        """(values, int32 indices) along the last dim: NaN largest, ties by index. A value's bound is
        the spread of the k-th order statistic over the inputs' intervals; an index is determined
        when its element's interval meets no other's."""
        x = input
        check_dim("topk", x.ndim, -1 if dim is None else dim)
        if dim is not None and dim % x.ndim != x.ndim - 1:
            raise OracleUnsupported(f"topk along dim {dim}")
        v = x.v
        n = v.shape[-1]
        idx = np.broadcast_to(np.arange(n), v.shape)
        if x.dt in FLOATS:
            nan = np.isnan(v)
            vf = np.where(nan, 0.0, v.astype(np.float64))
            order = np.lexsort((idx, -vf, ~nan) if largest else (idx, vf, nan), axis=-1)
        else:  # ~ reverses the order of int64 and of uint64 alike
            vi = v.astype(np.uint64 if v.dtype == np.uint64 else np.int64)
            order = np.lexsort((idx, ~vi) if largest else (idx, vi), axis=-1)
        order = order[..., :k]
        vals = np.take_along_axis(v, order, axis=-1)
        row_unc = np.any(np.isinf(x.e), axis=-1, keepdims=True)
        with np.errstate(all="ignore"):
            v64 = v.astype(np.float64)
            big = np.where(np.isnan(v64), np.inf, v64)
            lo, hi = big - x.e, big + x.e
            sgn = -1.0 if largest else 1.0  # sort so that position j is the j-th selected
            slo = sgn * np.sort(sgn * lo, axis=-1)[..., :k]
            shi = sgn * np.sort(sgn * hi, axis=-1)[..., :k]
            s64 = vals.astype(np.float64)
            ve = np.maximum(shi - s64, s64 - slo)
            ve = np.where(np.isfinite(s64), ve, 0.0)
            ev = value_error(x.e)
            sel_e = np.take_along_axis(ev, order, axis=-1)
            tol = ev[..., None, :] + sel_e[..., :, None]
            close = (tol > 0) & (np.abs(v64[..., None, :] - s64[..., :, None]) <= tol)
            close &= idx[..., None, :] != order[..., :, None]
            iunc = np.any(close, axis=-1)
        values = OT(contig(vals), np.where(row_unc, np.inf, ve), x.dt)
        indices = OT(contig(order.astype(np.int32)), np.where(row_unc | iunc, np.inf, 0.0), "int32")
        return values, indices

    def gather(self, input: OT, dim: int, index: OT) -> OT:  # noqa: A002
        x = input
        ax = dim % x.ndim
        ii = index.v.astype(np.int64)
        if np.any((ii < 0) | (ii >= x.shape[ax])):
            raise OracleUnsupported("gather index out of range (the generator never makes one)")
        box = tuple(slice(None) if d == ax else slice(0, ii.shape[d]) for d in range(x.ndim))
        r = np.take_along_axis(x.v[box], ii, axis=ax)
        e = np.take_along_axis(x.e[box], ii, axis=ax)
        return OT(contig(r), np.where(np.isinf(index.e), np.inf, e), x.dt)

