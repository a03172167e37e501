"""The oracle: the program's source run against a shadow `pypto` made of numpy float32 (fp32:
numpy's answer op by op; ints: numpy's wrapping arithmetic) and torch (fp16/bf16: fp32 inside,
one rounding per op; torch's own composites), carrying error bounds (bounds.py).

This module has the framework (jit, loop, tensor, assemble), the arithmetic of the first ops
(+ - * / max min, exp log sqrt ..., amax amin sum mean, cast) and the nn composites; the math,
logic, reduction, shape and index ops added later are in oracle_ops.py."""

from __future__ import annotations

import builtins
import linecache
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import bounds
from .bounds import OT, check_int_scalar, finish, smul, zero_sign_unknown
from .common import (FLOATS, FMAX, FP8S, IBOUNDS, INTS, NP_INT, U32, ExpectedUserError, OracleUnsupported, contig,
                     have_torch, np_dtype, round_to, ulp)
from .oracle_bits import BitOps, check_dim, float_to_int, int_to_float, int_to_int, refuse_storage
from .oracle_ops import NewOps
from .program import Param, Program

OWN_ULPS = {  # allowed own error in ulps of the result when the inputs are exact
    "fp32": {"add": 0, "sub": 0, "mul": 0, "maximum": 0, "minimum": 0, "neg": 0, "abs": 0, "relu": 0,
             "div": 1, "reciprocal": 1, "sqrt": 1, "rsqrt": 1, "exp": 4, "log": 4},
    "16": {"add": 0, "sub": 0, "mul": 0, "maximum": 0, "minimum": 0, "neg": 0, "abs": 0, "relu": 0,
           "div": 1, "reciprocal": 1, "sqrt": 1, "rsqrt": 1, "exp": 1, "log": 1},
}


def _own(dt: str, op: str) -> int:
    return OWN_ULPS["fp32" if dt == "fp32" else "16"][op]


def _f32_compute(dt: str, op: str, *xs: np.ndarray) -> np.ndarray:
    """An op in fp32: numpy for fp32 programs; torch (fp32 inside) for the 16-bit ones, except the
    exact max/min/abs/neg/relu, which follow numpy's NaN and signed-zero rules in both."""
    with np.errstate(all="ignore"):
        if op in ("maximum", "minimum", "abs", "neg", "relu"):
            if op == "maximum":
                return np.maximum(xs[0], xs[1])
            if op == "minimum":
                return np.minimum(xs[0], xs[1])
            if op == "abs":
                return np.abs(xs[0])
            if op == "neg":
                return np.negative(xs[0])
            return np.maximum(xs[0], np.float32(0))
        if dt == "fp32" or not have_torch():
            a = xs[0]
            b = xs[1] if len(xs) > 1 else None
            if op == "add":
                return a + b
            if op == "sub":
                return a - b
            if op == "mul":
                return a * b
            if op == "div":
                return a / b
            if op == "exp":
                return np.exp(a)
            if op == "log":
                return np.log(a)
            if op == "sqrt":
                return np.sqrt(a)
            if op == "rsqrt":
                return (1.0 / np.sqrt(a.astype(np.float64))).astype(np.float32)
            if op == "reciprocal":
                return np.float32(1.0) / a
            raise OracleUnsupported(op)
        import torch as T
        ts = [T.from_numpy(np.array(x, np.float32)) for x in xs]
        fn = {"add": T.add, "sub": T.sub, "mul": T.mul, "div": T.div, "exp": T.exp, "log": T.log, "sqrt": T.sqrt,
              "rsqrt": T.rsqrt, "reciprocal": T.reciprocal}[op]
        return fn(*ts).numpy()


class Shadow(NewOps, BitOps):
    """The `pypto` a program sees when it is evaluated by the oracle."""

    DT_FP32, DT_FP16, DT_BF16, DT_INT32, DT_INT8 = "fp32", "fp16", "bf16", "int32", "int8"
    DT_INT64, DT_BOOL = "int64", "bool"
    DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64 = "uint8", "uint16", "uint32", "uint64"
    DT_FP8E4M3, DT_FP8E5M2, DT_HF8 = "fp8e4m3", "fp8e5m2", "hf8"
    DYNAMIC = "DYNAMIC"  # a parameter's run-time dim: the oracle sees the call's arrays
    UserError = ExpectedUserError

    def __init__(self) -> None:
        self.ambiguous = 0  # elements where torch's composite and the fp32 decomposition disagree

    # --- framework -----------------------------------------------------------------------------
    @staticmethod
    def jit(fn: Any = None, **kw: Any) -> Any:
        return fn if fn is not None else (lambda f: f)

    @staticmethod
    def Tensor(shape: Any, dtype: Any) -> Tuple[Any, Any]:  # noqa: N802 - the pypto name
        return (tuple(shape), dtype)

    @staticmethod
    def set_vec_tile_shapes(*dims: int) -> None:
        return None

    @staticmethod
    def loop(*args: int, name: str = "", idx_name: str = "") -> range:
        if len(args) == 1:
            return range(args[0])
        return range(*args)

    @staticmethod
    def tensor(shape: Any, dtype: str) -> OT:
        shape = tuple(shape)
        return OT(np.zeros(shape, np_dtype(dtype)), np.full(shape, np.inf), dtype)

    @staticmethod
    def assemble(src: OT, offsets: Sequence[int], dst: OT) -> None:
        idx = tuple(slice(int(o), int(o) + s) for o, s in zip(offsets, src.shape))
        dst[idx] = src

    # --- elementwise ---------------------------------------------------------------------------
    def _operand(self, x: Any, dt: str, op: str) -> Tuple[np.ndarray, np.ndarray]:
        if isinstance(x, OT):
            if x.dt != dt:
                raise OracleUnsupported(f"{op} of {x.dt} and {dt}")
            return x.v, x.e
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise OracleUnsupported(f"{op} operand {x!r}")
        if dt in INTS:
            return np.array(check_int_scalar(x, dt, op), NP_INT[dt]), np.zeros(())
        with np.errstate(all="ignore"):
            return np.array(np.float32(x)), np.zeros(())  # Python scalars are rounded to fp32 once

    def _binary(self, op: str, x: Any, y: Any) -> OT:
        t = x if isinstance(x, OT) else y
        if not isinstance(t, OT):
            raise OracleUnsupported(f"{op} of two scalars")
        dt = t.dt
        if dt == "bool":
            raise OracleUnsupported(f"{op} of bool")
        a, ea = self._operand(x, dt, op)
        b, eb = self._operand(y, dt, op)
        shape = np.broadcast_shapes(a.shape, b.shape)
        if dt in INTS:
            with np.errstate(all="ignore"):
                f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
                     "minimum": np.minimum}.get(op)
                if f is None:
                    raise OracleUnsupported(f"integer {op}")
                r = np.asarray(f(a, b)).astype(NP_INT[dt])
        else:
            r32 = _f32_compute(dt, op, np.asarray(a, np.float32), np.asarray(b, np.float32))
            r = round_to(dt, r32) if dt != "fp32" else np.asarray(r32, np.float32)
        r = contig(np.broadcast_to(r, shape))
        a64 = np.broadcast_to(np.asarray(a, np.float64), shape)
        b64 = np.broadcast_to(np.asarray(b, np.float64), shape)
        ea = np.broadcast_to(ea, shape)
        eb = np.broadcast_to(eb, shape)
        zs: List[Tuple[np.ndarray, np.ndarray]] = []
        with np.errstate(all="ignore"):
            if op in ("add", "sub"):
                prop = ea + eb
            elif op == "mul":
                prop = smul(a64, eb) + smul(b64, ea) + ea * eb
                zs = [(a64, ea), (b64, eb)]
            elif op == "div":
                num = smul(a64, eb) + smul(b64, ea)
                den = np.abs(b64) * (np.abs(b64) - eb)
                prop = np.where(np.abs(b64) > eb, num / den, np.inf)
                prop = np.where(np.isinf(b64) & (eb == 0), 0.0, prop)
                zs = [(b64, eb), (a64, ea)]
            else:  # maximum, minimum
                prop = np.maximum(ea, eb)
        if op in ("maximum", "minimum") and dt in FLOATS:
            # +0 against -0 (docs/numerics.md): the first operand, or the tensor's zero when the
            # other operand is a Python scalar (numpy's loops give the second operand).
            tie = (a64 == 0) & (b64 == 0)
            winner = b if not isinstance(x, OT) else a
            r = contig(np.where(tie, np.broadcast_to(np.asarray(winner, r.dtype), shape), r))
        e = finish(dt, r, prop, [(a64, ea), (b64, eb)], 0 if dt in INTS else _own(dt, op), zs)
        if op in ("maximum", "minimum") and dt in FLOATS:
            # Exact zeros have a known sign; a zero only near an operand's value has not.
            e = zero_sign_unknown(e, (a64 == 0) & (b64 == 0) & (np.signbit(a64) != np.signbit(b64))
                                  & ((ea != 0) | (eb != 0)))
        return OT(r, contig(e), dt)

    def add(self, x: Any, y: Any) -> OT: return self._binary("add", x, y)
    def sub(self, x: Any, y: Any) -> OT: return self._binary("sub", x, y)
    def mul(self, x: Any, y: Any) -> OT: return self._binary("mul", x, y)
    def div(self, x: Any, y: Any) -> OT: return self._binary("div", x, y)
    def maximum(self, x: Any, y: Any) -> OT: return self._binary("maximum", x, y)
    def minimum(self, x: Any, y: Any) -> OT: return self._binary("minimum", x, y)

    def _unary(self, op: str, x: OT) -> OT:
        if not isinstance(x, OT):
            raise OracleUnsupported(f"{op} of {x!r}")
        dt = x.dt
        a64 = x.v.astype(np.float64)
        ea = x.e
        if dt in INTS:
            if op not in ("abs", "neg", "relu"):
                raise OracleUnsupported(f"integer {op}")
            with np.errstate(all="ignore"):
                r = {"abs": np.abs, "neg": np.negative, "relu": lambda v: np.maximum(v, 0)}[op](x.v).astype(NP_INT[dt])
            return OT(r, finish(dt, r, ea, [(a64, ea)], 0), dt)
        if dt not in FLOATS:
            raise OracleUnsupported(f"{op} of {dt}")
        r32 = _f32_compute(dt, op, x.v)
        r = round_to(dt, r32) if dt != "fp32" else np.asarray(r32, np.float32)
        ideal = None
        zs: List[Tuple[np.ndarray, np.ndarray]] = []
        with np.errstate(all="ignore"):
            aa = np.abs(a64)
            if op in ("abs", "neg", "relu"):
                prop = ea
            elif op == "exp":
                ideal = np.exp(a64)
                prop = smul(ideal, np.expm1(ea))
            elif op == "log":
                prop = np.where(a64 > ea, -np.log1p(-ea / np.where(a64 == 0, 1, a64)), np.inf)
            elif op == "sqrt":
                prop = np.where(a64 > ea, ea / (np.sqrt(np.maximum(a64 - ea, 0)) + np.sqrt(aa)), np.inf)
            elif op == "rsqrt":
                prop = np.where(a64 > ea, 1 / np.sqrt(np.maximum(a64 - ea, 0)) - 1 / np.sqrt(aa), np.inf)
            elif op == "reciprocal":
                prop = np.where(aa > ea, ea / (aa * (aa - ea)), np.inf)
                prop = np.where(np.isinf(a64), 0.0, prop)
            else:
                raise OracleUnsupported(op)
            prop = np.where(ea == 0, 0.0, prop)
            if op in ("log", "sqrt", "rsqrt", "reciprocal"):
                zs = [(a64, ea)]
        e = finish(dt, r, prop, [(a64, ea)], _own(dt, op), zs, ideal)
        if op == "relu":
            e = zero_sign_unknown(e, (a64 == 0) & np.signbit(a64))
        if op in ("sqrt", "log", "rsqrt"):  # an interval reaching below 0 may give NaN
            with np.errstate(all="ignore"):
                e = np.where((ea > 0) & (a64 - ea <= 0) & (a64 != 0), np.inf, e)
        return OT(contig(r), contig(e), dt)

    def exp(self, x: OT) -> OT: return self._unary("exp", x)
    def log(self, x: OT) -> OT: return self._unary("log", x)
    def abs(self, x: OT) -> OT: return self._unary("abs", x)
    def neg(self, x: OT) -> OT: return self._unary("neg", x)
    def sqrt(self, x: OT) -> OT: return self._unary("sqrt", x)
    def rsqrt(self, x: OT) -> OT: return self._unary("rsqrt", x)
    def reciprocal(self, x: OT) -> OT: return self._unary("reciprocal", x)
    def relu(self, x: OT) -> OT: return self._unary("relu", x)

    # --- reductions ------------------------------------------------------------------------------
    def _reduce(self, op: str, x: OT, dim: int, keepdim: bool) -> OT:
        if not isinstance(x, OT):
            raise OracleUnsupported(f"{op} of {x!r}")
        dt = x.dt
        nd = len(x.shape)
        check_dim(op, nd, dim)
        ax = dim % nd
        n = x.shape[ax]
        v64 = x.v.astype(np.float64)
        e_in = x.e
        unc = np.any(np.isinf(e_in), axis=ax, keepdims=keepdim)
        with np.errstate(all="ignore"):
            if op in ("amax", "amin"):
                f = np.max if op == "amax" else np.min
                r = f(x.v, axis=ax, keepdims=keepdim)
                e = np.max(np.where(np.isinf(e_in), 0, e_in), axis=ax, keepdims=keepdim)
                if dt in FLOATS:
                    e = np.where(np.isfinite(r.astype(np.float64)), e, 0.0)
                    both = (np.any((v64 == 0) & np.signbit(v64), axis=ax, keepdims=keepdim)
                            & np.any((v64 == 0) & ~np.signbit(v64), axis=ax, keepdims=keepdim))
                    e = zero_sign_unknown(e, both & (np.asarray(r) == 0))
                return OT(contig(r), np.where(unc, np.inf, e), dt)
            # sum
            if dt in INTS:
                r = np.sum(x.v, axis=ax, keepdims=keepdim, dtype=NP_INT[dt])
                e = np.sum(e_in, axis=ax, keepdims=keepdim)
                lo, hi = IBOUNDS[dt]
                rr = r.astype(np.float64)
                e = np.where((e > 0) & ((rr + e > hi) | (rr - e < lo)), np.inf, e)
                return OT(contig(r), np.where(unc, np.inf, e), dt)
            if dt == "fp32" or not have_torch():
                r32 = np.sum(x.v, axis=ax, keepdims=keepdim, dtype=np.float32)
            else:
                import torch as T
                r32 = T.sum(T.from_numpy(np.array(x.v, np.float32)), dim=ax, keepdim=keepdim).numpy()
            r = round_to(dt, r32) if dt != "fp32" else np.asarray(r32, np.float32)
            fin_abs = np.sum(np.where(np.isfinite(v64), np.abs(v64), 0.0), axis=ax, keepdims=keepdim)
            has_nan = np.any(np.isnan(v64) & ~np.isinf(e_in), axis=ax, keepdims=keepdim)  # a certain NaN
            has_inf = np.any(np.isinf(v64), axis=ax, keepdims=keepdim)
            rr = np.asarray(r, np.float64)
            own = 2.0 * max(n - 1, 0) * U32 * fin_abs + (ulp(rr, dt) if dt != "fp32" else 0.0)
            e = np.sum(np.where(np.isfinite(v64), e_in, 0.0), axis=ax, keepdims=keepdim) + own
            order_dep = fin_abs * (1 + 2 * n * U32) >= FMAX["fp32"]  # an fp32 partial sum may overflow
            e = np.where(has_nan, 0.0, np.where(order_dep, np.inf, np.where(has_inf, 0.0, e)))
            e = np.where(np.isfinite(rr) & (e > 0) & (np.abs(rr) + e > FMAX[dt]), np.inf, e)
            return OT(contig(r), np.where(unc & ~has_nan, np.inf, e), dt)

    def amax(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._reduce("amax", x, dim, keepdim)
    def amin(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._reduce("amin", x, dim, keepdim)
    def sum(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._reduce("sum", x, dim, keepdim)

    # --- cast ------------------------------------------------------------------------------------
    def cast(self, x: OT, to: str) -> OT:
        if not isinstance(x, OT):
            raise OracleUnsupported(f"cast of {x!r}")
        fr = x.dt
        e_in = x.e
        unc = np.isinf(e_in)
        inexact = e_in > 0
        if fr == to:
            return OT(x.v.copy(), e_in.copy(), to)
        if fr in FP8S or to in FP8S:
            return self._cast_fp8(x, to)
        if fr == "bool":  # 0 / 1, exact
            r = round_to(to, x.v.astype(np.float32)) if to in FLOATS else x.v.astype(np_dtype(to))
            return OT(contig(r), np.where(unc, np.inf, 0.0), to)
        v64 = x.v.astype(np.float64)
        with np.errstate(all="ignore"):
            if to == "bool":  # x != 0 (NaN is True); undetermined where the interval reaches 0
                r = x.v != 0
                return OT(contig(r), np.where(unc | (inexact & (np.abs(v64) <= e_in)), np.inf, 0.0),
                          to)
            if to in FLOATS:
                r = round_to(to, x.v.astype(np.float32)) if fr in FLOATS else int_to_float(to, x.v)
                rr = r.astype(np.float64)
                sp = ulp(rr, to)
                e = np.where(inexact, e_in + sp, 0.0)
                fin = np.isfinite(rr)
                e = np.where(fin, e, np.where(np.isfinite(v64) & inexact, np.inf, 0.0))
                e = np.where(fin & (e > 0) & (np.abs(rr) + e > FMAX[to]), np.inf, e)
                return OT(contig(r), np.where(unc, np.inf, e), to)
            if fr in FLOATS:  # truncate (pypto.cast's default), saturate; NaN -> 0
                r = float_to_int(to, v64)
                e = np.where(inexact, np.ceil(e_in) + 1.0, 0.0)
            else:  # int -> int saturates (exact for every width)
                r = int_to_int(x.v, to)
                e = np.where(inexact, e_in, 0.0)
            return OT(contig(r), np.where(unc, np.inf, e), to)

    # --- composites (the decompositions of python/pypto/ops; 16-bit: torch's own) ---------------
    def _widen(self, x: OT) -> Tuple[OT, Optional[str]]:
        if x.dt in ("fp16", "bf16"):
            return self.cast(x, "fp32"), x.dt
        return x, None

    def _narrow(self, y: OT, dt: Optional[str]) -> OT:
        return y if dt is None else self.cast(y, dt)

    def _torch16(self, dec: OT, fn: Any, *xs: OT) -> OT:
        """16-bit composites: torch's answer, with the decomposition's error bound (+1 ulp for
        torch's own rounding). Where the two disagree beyond that, the element is ambiguous."""
        if dec.dt not in ("fp16", "bf16") or not have_torch():
            return dec
        import torch as T
        tdt = T.float16 if dec.dt == "fp16" else T.bfloat16
        ts = [T.from_numpy(np.array(x.v, np.float32)).to(tdt) for x in xs]
        with np.errstate(all="ignore"):
            tv = fn(T, *ts).float().numpy()
            t64 = tv.astype(np.float64)
            d64 = dec.v.astype(np.float64)
            e = dec.e + ulp(t64, dec.dt)
            same_class = (np.isnan(t64) == np.isnan(d64)) & ((np.isinf(t64) == np.isinf(d64)))
            same_class &= ~(np.isinf(t64) & (t64 != d64))
            close = ~np.isfinite(t64) | (np.abs(t64 - d64) <= e)
            amb = ~(same_class & close) & np.isfinite(dec.e)
        self.ambiguous += int(np.count_nonzero(amb))
        e = np.where(amb, np.inf, np.where(np.isfinite(t64), e, 0.0))
        e = np.where(np.isinf(dec.e), np.inf, e)
        return OT(contig(tv, np.float32), e, dec.dt)

    def mean(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT:
        n = x.shape[dim]
        w, dt = self._widen(x)
        dec = self._narrow(self.div(self.sum(w, dim, keepdim), n), dt)
        return self._torch16(dec, lambda T, t: T.mean(t, dim=dim, keepdim=keepdim), x)

    def _sig32(self, x: OT) -> OT:
        return self.reciprocal(self.add(self.exp(self.neg(x)), 1.0))

    def sigmoid(self, x: OT) -> OT:
        w, dt = self._widen(x)
        dec = self._narrow(self._sig32(w), dt)
        return self._torch16(dec, lambda T, t: T.sigmoid(t), x)

    def silu(self, x: OT) -> OT:
        w, dt = self._widen(x)
        dec = self._narrow(self.mul(w, self._sig32(w)), dt)
        return self._torch16(dec, lambda T, t: T.nn.functional.silu(t), x)

    def softmax(self, x: OT, dim: int = -1) -> OT:
        w, dt = self._widen(x)
        e = self.exp(self.sub(w, self.amax(w, dim, keepdim=True)))
        dec = self._narrow(self.div(e, self.sum(e, dim, keepdim=True)), dt)
        return self._torch16(dec, lambda T, t: T.softmax(t, dim=dim), x)

    def rms_norm(self, x: OT, gamma: OT, epsilon: float = 1e-6) -> OT:
        g, _ = self._widen(gamma)
        w, dt = self._widen(x)
        dec = self._narrow(self.mul(self.mul(w, self.rsqrt(self.add(self.mean(self.mul(w, w), -1, keepdim=True),
                                                                       epsilon))), g), dt)
        c = x.shape[-1]
        return self._torch16(dec, lambda T, t, gg: T.nn.functional.rms_norm(t, (c,), gg.reshape(-1), eps=epsilon),
                             x, gamma)

    def layer_norm(self, x: OT, gamma: OT, beta: OT, epsilon: float = 1e-5) -> OT:
        g, _ = self._widen(gamma)
        b, _ = self._widen(beta)
        w, dt = self._widen(x)
        xc = self.sub(w, self.mean(w, -1, keepdim=True))
        var = self.mean(self.mul(xc, xc), -1, keepdim=True)
        dec = self._narrow(self.add(self.mul(self.mul(xc, self.rsqrt(self.add(var, epsilon))), g), b), dt)
        c = x.shape[-1]
        return self._torch16(dec, lambda T, t, gg, bb: T.nn.functional.layer_norm(t, (c,), gg.reshape(-1),
                                                                                  bb.reshape(-1), eps=epsilon),
                             x, gamma, beta)


# Every op but the movement ones refuses an FP8 operand (a storage format), as pypto does.
MOVEMENT = {"cast", "transpose", "permute", "gather", "tensor", "assemble", "jit", "Tensor", "set_vec_tile_shapes",
            "loop"}
for _name in dir(Shadow):
    if not _name.startswith("_") and _name not in MOVEMENT and callable(getattr(Shadow, _name)) \
            and not isinstance(getattr(Shadow, _name), type) and not _name.isupper() and not _name.startswith("DT_"):
        setattr(Shadow, _name, refuse_storage(_name, getattr(Shadow, _name)))


S = Shadow()  # the OT operators dispatch here (its ambiguity counter is reset per program)
bounds.SHADOW = S


def exec_source(src: str, filename: str, pypto_obj: Any) -> Any:
    """Compile the program text (registered in linecache so pypto's errors show the line) with
    `import pypto` bound to pypto_obj; returns the function."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    real_import = builtins.__import__

    def imp(name: str, *a: Any, **k: Any) -> Any:
        if name == "pypto":
            return pypto_obj
        return real_import(name, *a, **k)
    b = dict(vars(builtins))
    b["__import__"] = imp
    ns: Dict[str, Any] = {"__builtins__": b, "__name__": "fuzz_program"}
    exec(compile(src, filename, "exec"), ns)
    return ns["fuzz"]


def oracle_eval(prog: Program, src: str, inputs: Dict[str, np.ndarray],
                params: Optional[List[Param]] = None) -> Tuple[List[OT], int]:
    """The oracle's outputs (out params in order, then returned values) and the ambiguity count;
    `params` gives the parameters' shapes of a later call (a dynamic dim's other size)."""
    S.ambiguous = 0
    fn = exec_source(src, prog.filename, S)
    args = []
    outs = []
    for p in prog.params if params is None else params:
        if p.role == "in":
            v = inputs[p.name].copy()
            args.append(OT(v, np.zeros(v.shape), p.dt))
        else:
            t = S.tensor(p.shape, p.dt)
            args.append(t)
            outs.append(t)
    ret = fn(*args)
    if ret is not None:
        outs += list(ret) if isinstance(ret, (tuple, list)) else [ret]
    return outs, S.ambiguous
