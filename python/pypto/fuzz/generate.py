"""Random programs: Gen builds one program's IR from (seed, index).

A program is a few parameters, vec tile shapes and chains of 2-6 steps (the backend fuses them),
either straight-line or inside pypto.loop loops over slices. A step is one op or a small idiom:
elementwise math with tensors, row/col broadcasts or Python scalars on either side; a mask
(comparisons, isnan/isinf, logical ops) and a where / multiply by the mask; clip; reductions,
scans, argmax + gather; transpose / permute (undone at the end of the chain); topk + gather."""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .common import (ALL_DTYPES, BINARY, BINARY_I, FLOATS, FP8S, IBOUNDS, INF, INTS, NAN, UINTS, have_torch,
                     wchoice as _wchoice)
from .common import bcast as _bcast
from .kinds import ProgramKinds
from .kinds_new import NewKinds
from .program import BIN_SYM, Program, V

SCALARS_NORMAL = [2.5, -1.5, 0.5, 3.0, -3.0, 0.1, 1.0, 2.0, 7.0, 1e-3, 4.0, -0.0, 0.0, 3, -2]
SCALARS_EDGE = {
    "fp32": [1e30, -1e30, 1e-30, 1e-39, 1e-40, -3e-42, 1.4e-45, 3.4e38, INF, -INF, NAN, 1e-8, 16777217],
    "fp16": [1e5, -1e5, 65504.0, 1e-5, 1e-8, 1e-40, INF, -INF, NAN, 1e30, 70000.0, 2049],
    "bf16": [1e30, -1e30, 1e-30, 1e-40, 3.4e38, INF, -INF, NAN, 0.1, 257, 1e-3],
}
INT_SCALARS_NORMAL = [0, 1, -1, 2, 3, -7, 100, 1000]
INT_SCALARS_EDGE = {"int32": [2 ** 31 - 1, -2 ** 31, 16777217, 2 ** 24 + 1, -16777217, 65536],
                    "int8": [127, -128, 100, -100, 64],
                    "int64": [2 ** 31, -2 ** 31 - 1, 2 ** 40, -2 ** 40, 16777217]}
INT_SCALARS_BAD = {"int32": [2 ** 40, -2 ** 31 - 1, 2 ** 31, 0.5], "int8": [300, -129, 128, 1000, 2.5],
                   "int64": [0.5, -2.5]}
# Unsigned dtypes (and the 64-bit scalars numpy takes exactly; beyond 2^53 they are a known bug).
UINT_SCALARS_NORMAL = [0, 1, 2, 3, 7, 100, 1000, 5]
INT_SCALARS_EDGE.update({"uint8": [255, 254, 128, 127, 200], "uint16": [65535, 32768, 257, 65534],
                         "uint32": [2 ** 32 - 1, 2 ** 31, 16777217, 2 ** 24 + 1],
                         "uint64": [2 ** 63, 2 ** 53, 2 ** 40, 16777217, 2 ** 32 - 1, 2 ** 32]})
INT_SCALARS_BAD.update({"uint8": [-1, 256, 2.5, -7], "uint16": [-1, 65536, 0.5], "uint32": [-1, 2 ** 32, 1.5],
                        "uint64": [-1, -2.5, 0.5]})
BIG_64 = {"int64": [2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 62 + 1, 2 ** 63 - 1],
          "uint64": [2 ** 64 - 1, 2 ** 63 + 4096, 2 ** 53 + 1, 2 ** 64 - 2]}
UINT_POW_EXP = [0, 1, 2, 3, 5, 7, 31, 8]
UINT_DIVISORS = [2, 3, 7, 0, 1, 100, 16, 255]
POW_EXP = [2, 3, 0.5, -1, 2.0, -2, 0, 1, 0.25, 2.5, -0.5, 10, 0.0, 1.5, INF, NAN]
POW_BASE = [2.0, 0.5, 10.0, -2.0, 1.0, 0.0, -1.5, 3, 1e-3, INF]
DIVISORS = [2.0, 3.0, -2.5, 0.5, 7, -3, 1e-3, 0.1, 1.0, 0.0, -0.0, INF, 1e-40, 1e30, NAN]
INT_POW_EXP = [0, 1, 2, 3, 5, -1, -2, 31, 7]
INT_DIVISORS = [2, 3, -7, 0, -1, 100, 1, 16]
CMP_INT_EXTRA = [2.5, -0.5, 1e10, -1e10, NAN, INF, 127.5, -128.5]
CLIP_BOUNDS = [(-1.0, 1.0), (0.0, None), (None, 0.5), (-3, 6.0), (2.0, -2.0), (0, 0), (-0.0, 0.0), (NAN, 1.0),
               (-INF, INF), (1e-40, 1e30)]
CLIP_BOUNDS_INT = [(-1, 1), (0, None), (None, 100), (-3, 6), (2, -2), (-2.5, 2.5), (-1000, 2 ** 31), (0.5, 0.7)]

UNARY_F = ["exp", "log", "abs", "neg", "sqrt", "rsqrt", "reciprocal", "relu", "sigmoid", "silu"]
UNARY_I = ["abs", "neg", "relu"]
MATH1_F = ["tanh", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2",
           "expm1", "log2", "log10", "log1p", "erf", "erfc", "cbrt", "floor", "ceil", "trunc", "round", "sign"]
MATH1_I = ["sign", "sign", "floor", "ceil", "trunc", "round", "exp2", "expm1"]
MATH2_F = ["pow", "atan2", "hypot", "copysign", "floor_div", "remainder", "fmod", "lrelu"]
MATH2_I = ["pow", "floor_div", "remainder", "fmod"]
METHODS = {"exp", "log", "abs", "neg", "sqrt", "rsqrt", "reciprocal", "relu", "sigmoid", "tanh", "sin", "cos", "tan",
           "sinh", "cosh", "asinh", "acosh", "erfc", "exp2", "expm1", "log2", "log10", "log1p", "floor", "ceil",
           "trunc", "round", "sign", "pow", "fmod", "remainder", "hypot", "lrelu", "clip", "prod", "argmax",
           "argmin", "cumsum", "var", "transpose", "permute", "topk", "gather"}
CMP = ["eq", "ne", "lt", "le", "gt", "ge"]
class Gen(NewKinds, ProgramKinds):
    """Builds one program's IR.

    `r` is the first fuzzer's random stream; every decision about a newer feature (unsigned and
    FP8 dtypes, bitwise ops, 0-d tensors, dynamic dims) is drawn from `x`, so a program that ends
    up using none of them is the one the first fuzzer generated for (seed, index)."""

    def __init__(self, seed: int, index: int, dtypes: Sequence[str]):
        self.r = random.Random(f"pypto-fuzz-{seed}-{index}")
        self.x = random.Random(f"pypto-fuzz-x-{seed}-{index}")
        self.seed, self.index = seed, index
        self.n = 0
        self.dtypes = list(dtypes)
        self.fp8 = [d for d in self.dtypes if d in FP8S]
        self.uints = [d for d in self.dtypes if d in UINTS]
        self.dyn_rows = 0  # the generated size of the dynamic dim 0 (0: no dynamic dim)
        self.dyn_reduced = False  # a reduction over the dynamic dim (its size must not be 0)
        self.expect = ""  # the UserError the program must raise ("" for none)
        self.expect_pattern = ""

    def fresh(self, shape: Tuple[int, ...], dt: str, prefix: str = "t") -> V:
        v = V(f"{prefix}{self.n}", tuple(shape), dt)
        self.n += 1
        return v

    def emit(self, body: List[Any], pool: List[V], like: V, op: str, args: List[Any], kw: Dict[str, Any], form: str,
             shape: Tuple[int, ...], dt: str) -> V:
        """Appends `out = op(args)`; out keeps the permutation of `like` (the value the step works on)."""
        out = self.fresh(shape, dt)
        out.perm = like.perm
        body.append(("op", out, op, args, kw, form))
        pool.append(out)
        return out

    # --- scalars ------------------------------------------------------------------------------
    def scalar(self, dt: str) -> Any:
        r = self.r
        if dt in INTS:
            if dt in BIG_64 and self.x.random() < 0.15:
                return self.x.choice(BIG_64[dt])
            x = r.random()
            if x < 0.04:
                return r.choice(INT_SCALARS_BAD[dt])
            if x < 0.25:
                return r.choice(INT_SCALARS_EDGE[dt])
            v = r.choice(UINT_SCALARS_NORMAL if dt in UINTS else INT_SCALARS_NORMAL)
            return max(min(v, IBOUNDS[dt][1]), IBOUNDS[dt][0])
        if r.random() < 0.22:
            return r.choice(SCALARS_EDGE[dt])
        return r.choice(SCALARS_NORMAL)

    def other(self, pool: List[V], cur: V, dt: Optional[str] = None) -> Optional[V]:
        """A pool value that broadcasts with cur (same dtype), or None."""
        dt = dt or cur.dt
        cands = [v for v in pool if v.dt == dt and v is not cur and _bcast(cur.shape, v.shape) is not None]
        return self.r.choice(cands) if cands else None

    def form(self, op: str, p_op: float = 0.0, p_method: float = 0.2) -> str:
        x = self.r.random()
        if op in BIN_SYM and x < p_op:
            return "op"
        if op in METHODS and x > 1 - p_method:
            return "method"
        return "fn"

    # --- one step -------------------------------------------------------------------------------
    def step(self, body: List[Any], pool: List[V], cur: V, allow: Dict[str, bool]) -> V:
        r = self.r
        if cur.dt in INTS and self.x.random() < 0.14:
            return self.s_bitwise(body, pool, cur)
        isf = cur.dt in FLOATS
        choices = [("unary", 12 if isf else 8), ("binary", 20), ("scalar", 18), ("math1", 16 if isf else 3),
                   ("math2", 10), ("select", 9), ("clip", 3)]
        if allow.get("reduce", True) and len(cur.shape) >= 1:
            choices += [("reduce", 8), ("reduce2", 6)]
        if isf and allow.get("composite", True) and len(cur.shape) == 2:
            choices.append(("composite", 5))
        if allow.get("cast", True):
            choices.append(("cast", 6))
        if allow.get("permute", True) and len(cur.shape) >= 2:
            choices.append(("permute", 4))
        if allow.get("topk", True) and len(cur.shape) >= 1 and cur.shape[-1] >= 2:
            choices.append(("topk", 3))
        return getattr(self, "s_" + _wchoice(r, choices))(body, pool, cur)

    def s_unary(self, body: List[Any], pool: List[V], cur: V) -> V:
        op = self.r.choice(UNARY_F if cur.dt in FLOATS else UNARY_I)
        form = "op" if op in ("neg", "abs") and self.r.random() < 0.5 else self.form(op)
        return self.emit(body, pool, cur, op, [cur], {}, form, cur.shape, cur.dt)

    def s_binary(self, body: List[Any], pool: List[V], cur: V) -> V:
        other = self.other(pool, cur)
        if other is None:
            return self.s_scalar(body, pool, cur)
        op = self.r.choice(BINARY if cur.dt in FLOATS else BINARY_I)
        args = [cur, other] if self.r.random() < 0.7 else [other, cur]
        form = "op" if op in BIN_SYM and self.r.random() < 0.6 else "fn"
        return self.emit(body, pool, cur, op, args, {}, form, _bcast(cur.shape, other.shape), cur.dt)

    def s_scalar(self, body: List[Any], pool: List[V], cur: V) -> V:
        op = self.r.choice(BINARY if cur.dt in FLOATS else BINARY_I)
        s = self.scalar(cur.dt)
        args = [s, cur] if self.r.random() < 0.35 else [cur, s]
        form = "op" if op in BIN_SYM and self.r.random() < 0.7 else "fn"
        return self.emit(body, pool, cur, op, args, {}, form, cur.shape, cur.dt)

    def s_math1(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        if cur.dt not in FLOATS:
            op = r.choice(MATH1_I)
            dt = "fp32" if op in ("exp2", "expm1") else cur.dt  # PyPTO: an integer input gives fp32
            return self.emit(body, pool, cur, op, [cur], {}, self.form(op), cur.shape, dt)
        op = r.choice(MATH1_F)
        if op in ("asin", "acos", "atanh", "acosh") and r.random() < 0.4:  # mostly inside the domain
            pre = r.choice(["tanh", "sin", "cos"]) if op != "acosh" else "cosh"
            cur = self.emit(body, pool, cur, pre, [cur], {}, self.form(pre), cur.shape, cur.dt)
        kw: Dict[str, Any] = {}
        if op == "round" and r.random() < 0.3:
            kw["decimals"] = r.choice([1, 2, -1, 3])
        return self.emit(body, pool, cur, op, [cur], kw, self.form(op), cur.shape, cur.dt)

    def s_math2(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        isf = cur.dt in FLOATS
        op = r.choice(MATH2_F if isf else MATH2_I)
        if op == "lrelu":
            args: List[Any] = [cur] + ([r.choice([0.01, 0.2, 0.0, 1.0, 3.0, 0.1])] if r.random() < 0.7 else [])
            return self.emit(body, pool, cur, op, args, {}, self.form(op), cur.shape, cur.dt)
        other = self.other(pool, cur) if r.random() < 0.45 else None
        dt = cur.dt
        if other is not None:
            args = [cur, other] if r.random() < 0.7 else [other, cur]
            shape = _bcast(cur.shape, other.shape)
        else:
            left = r.random() < 0.3
            uns = dt in UINTS
            if op == "pow":
                pool_s = (POW_BASE if left else POW_EXP) if isf else ([2, 3, -1, 0, 1] if left else INT_POW_EXP)
                if uns:
                    pool_s = [2, 3, 0, 1, 5] if left else UINT_POW_EXP
            elif op in ("floor_div", "remainder", "fmod"):
                pool_s = (SCALARS_NORMAL if left else DIVISORS) if isf else (INT_SCALARS_NORMAL if left else
                                                                            INT_DIVISORS)
                if uns:
                    pool_s = UINT_SCALARS_NORMAL if left else UINT_DIVISORS
            else:
                pool_s = SCALARS_NORMAL
            s = r.choice(pool_s) if r.random() < 0.85 else self.scalar(dt)
            if op == "pow" and not isf and not left and r.random() < 0.08:
                s = 0.5  # an integer tensor to a float power is fp32
            if op == "pow" and not isf and isinstance(s, float) and not left:
                dt = "fp32"
            args = [s, cur] if left else [cur, s]
            shape = cur.shape
        form = self.form(op, p_op=0.5 if op in ("pow", "floor_div", "remainder") else 0.0)
        if form == "method" and not isinstance(args[0], V):
            form = "fn"
        return self.emit(body, pool, cur, op, args, {}, form, shape, dt)

    def mask(self, body: List[Any], pool: List[V], cur: V) -> V:
        """A DT_BOOL value from cur: a comparison (maybe two, combined), isnan / isinf / ..."""
        r = self.r
        isf = cur.dt in FLOATS
        x = r.random()
        if isf and x < 0.15:
            op = r.choice(["isnan", "isinf", "isfinite", "signbit"])
            m = self.emit(body, pool, cur, op, [cur], {}, "fn", cur.shape, "bool")
        elif x < 0.2:
            m = self.emit(body, pool, cur, "cast", [cur], {"to": "bool"}, "fn", cur.shape, "bool")
        else:
            m = self.compare(body, pool, cur)
        y = r.random()
        if y < 0.15:
            return self.emit(body, pool, cur, "logical_not", [m], {}, "op" if r.random() < 0.5 else "fn", m.shape,
                             "bool")
        if y < 0.4:
            op = r.choice(["logical_and", "logical_or", "logical_xor"])
            if r.random() < 0.2:  # a numeric operand: non-zero is True
                m2 = cur
                form = "fn"
            else:
                m2 = self.compare(body, pool, cur)
                form = "op" if r.random() < 0.5 else "fn"
            args = [m, m2] if r.random() < 0.6 else [m2, m]
            return self.emit(body, pool, cur, op, args, {}, form, _bcast(m.shape, m2.shape) or m.shape, "bool")
        return m

    def compare(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        op = r.choice(CMP)
        other = self.other(pool, cur) if r.random() < 0.4 else None
        if other is not None:
            args: List[Any] = [cur, other] if r.random() < 0.7 else [other, cur]
            shape = _bcast(cur.shape, other.shape)
        else:
            if cur.dt in INTS:
                s = r.choice(CMP_INT_EXTRA) if r.random() < 0.3 else r.choice(INT_SCALARS_NORMAL)
            else:
                s = self.scalar(cur.dt)
            args = [s, cur] if r.random() < 0.25 else [cur, s]
            shape = cur.shape
        form = "op" if r.random() < 0.5 else "fn"
        if op == "gt" and form == "fn" and r.random() < 0.2:
            op = "greater"
        return self.emit(body, pool, cur, op, args, {}, form, shape, "bool")

    def s_select(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        m = self.mask(body, pool, cur)
        shape = _bcast(m.shape, cur.shape) or cur.shape
        x = r.random()
        isf = cur.dt in FLOATS
        if x < 0.15:  # multiply by the mask as 0 / 1
            c = self.emit(body, pool, cur, "cast", [m], {"to": cur.dt}, "fn", m.shape, cur.dt)
            args = [cur, c] if r.random() < 0.5 else [c, cur]
            return self.emit(body, pool, cur, "mul", args, {}, "op", shape, cur.dt)
        if x < 0.25:  # two scalars: an fp32 result
            a, b = r.choice([(1.0, 0.0), (0.0, 1.0), (-1.0, 2.5), (NAN, 0.0), (INF, -INF)])
            w = self.emit(body, pool, cur, "where", [m, a, b], {}, "fn", m.shape, "fp32")
            if cur.dt == "fp32":
                return self.emit(body, pool, cur, "mul", [cur, w], {}, "op", shape, cur.dt)
            return w
        other = self.other(pool, cur) if r.random() < 0.4 else None
        if other is not None:
            o: Any = other
            shape = _bcast(shape, other.shape) or shape
        elif isf:
            o = self.scalar(cur.dt) if r.random() < 0.5 else r.choice([0.0, -INF, INF, NAN, 1.0, -0.0])
        else:
            o = r.choice(UINT_SCALARS_NORMAL if cur.dt in UINTS else INT_SCALARS_NORMAL) if r.random() < 0.95 else 2.5
        args = [m, cur, o] if r.random() < 0.65 else [m, o, cur]
        return self.emit(body, pool, cur, "where", args, {}, "fn", shape, cur.dt)

    def s_clip(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        isf = cur.dt in FLOATS
        lo, hi = r.choice(CLIP_BOUNDS if isf else CLIP_BOUNDS_INT)
        shape = cur.shape
        if r.random() < 0.25:
            other = self.other(pool, cur)
            if other is not None:
                if r.random() < 0.5:
                    lo = other
                else:
                    hi = other
                shape = _bcast(cur.shape, other.shape) or shape
        x = r.random()
        if x < 0.3 and (lo is None) != (hi is None):
            kw = {"min": lo} if lo is not None else {"max": hi}
            return self.emit(body, pool, cur, "clip", [cur], kw, "fn", shape, cur.dt)
        form = "method" if x > 0.8 else "fn"
        return self.emit(body, pool, cur, "clip", [cur, lo, hi], {}, form, shape, cur.dt)

    def s_reduce(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        op = r.choice(["amax", "amin", "sum", "mean"] if cur.dt in FLOATS else ["amax", "amin", "sum"])
        nd = len(cur.shape)
        dim = r.choice([-1, -1, 0] + ([1] if nd == 3 else []))
        op, dim = self.dyn_fix(op, cur, dim)
        shape = list(cur.shape)
        shape[dim] = 1
        form = "kw" if r.random() < 0.4 else "pos"
        return self.emit(body, pool, cur, op, [cur], {"dim": dim, "keepdim": True}, form, tuple(shape), cur.dt)

    def s_reduce2(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        isf = cur.dt in FLOATS
        op = r.choice(["prod", "argmax", "argmin", "cumsum"] + (["var", "var"] if isf else []))
        nd = len(cur.shape)
        dim = r.choice([-1, 0] + ([1] if nd >= 2 else []) + ([2] if nd == 3 else []))
        dim = dim if -nd <= dim < nd else -1
        op, dim = self.dyn_fix(op, cur, dim)
        shape = list(cur.shape)
        shape[dim] = 1
        shape_t = tuple(shape)
        if op == "cumsum":
            dt = ("uint64" if cur.dt in ("uint16", "uint32", "uint64") else "int64") if cur.dt in INTS else cur.dt
            return self.emit(body, pool, cur, op, [cur, dim], {}, self.form(op), cur.shape, dt)
        if op in ("prod", "argmax", "argmin"):
            dt = "int32" if op != "prod" else cur.dt
            out = self.emit(body, pool, cur, op, [cur, dim], {"keepdim": True}, self.form(op), shape_t, dt)
            if op != "prod" and r.random() < 0.4:  # the value at the index, of cur or a value like it
                srcs = [v for v in pool if v.shape == cur.shape and v.dt != "bool"]
                src = r.choice(srcs) if srcs else cur
                out = self.emit(body, pool, cur, "gather", [src, dim, out], {}, self.form("gather", 0, 0.2),
                                shape_t, src.dt)
            return out
        # var: one dim or all of a 2-D tensor; the default correction (1) or none
        dims: Any = dim if nd != 2 or r.random() < 0.8 else [0, 1]
        if isinstance(dims, list) and self.dyn_rows and self.over_dyn(cur, 0):
            dims = dim  # (dim itself went through dyn_fix)
        kw: Dict[str, Any] = {}
        if r.random() < 0.4:
            kw["correction"] = r.choice([0, 1, 0.5])
        kw["keepdim"] = True
        vshape = tuple(1 for _ in shape) if isinstance(dims, list) else shape_t
        return self.emit(body, pool, cur, "var", [cur, dims], kw, self.form(op), vshape, cur.dt)

    def s_composite(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        opts = ["softmax"]
        gam = [v for v in pool if v.dt == cur.dt and v.shape == (1, cur.shape[1]) and v.name.startswith(("g", "c"))]
        if gam:
            opts += ["rms_norm", "layer_norm"]
        op = r.choice(opts)
        if op == "softmax":
            dim = r.choice([-1, -1, 0])
            self.dyn_fix(op, cur, dim)
            return self.emit(body, pool, cur, op, [cur], {"dim": dim}, "fn", cur.shape, cur.dt)
        kw = {}
        if r.random() < 0.4:
            kw["eps"] = r.choice([1e-6, 1e-5, 0.0, 1e-3])
        args = [cur, r.choice(gam)] if op == "rms_norm" else [cur, r.choice(gam), r.choice(gam)]
        return self.emit(body, pool, cur, op, args, kw, "fn", cur.shape, cur.dt)

    def s_cast(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        dt = cur.dt
        if dt == "fp32":
            to = _wchoice(r, [("fp16", 4), ("bf16", 4), ("int32", 1), ("int8", 1), ("int64", 1)])
        elif dt in ("fp16", "bf16"):
            to = _wchoice(r, [("fp32", 6), ("bf16" if dt == "fp16" else "fp16", 1), ("int32", 1)])
        elif dt == "int32":
            to = _wchoice(r, [("fp32", 6), ("fp16", 1), ("bf16", 1), ("int8", 1), ("int64", 1)])
        elif dt == "int64":
            to = _wchoice(r, [("fp32", 3), ("int32", 2)])
        else:
            to = _wchoice(r, [("fp32", 4), ("int32", 3), ("fp16", 1)])
        x = self.x
        if self.fp8 and dt in FLOATS and x.random() < 0.3:
            return self.fp8_roundtrip(body, pool, cur)
        if dt in UINTS:
            to = _wchoice(x, [("fp32", 4), ("int32", 2), ("int64", 1), ("int8", 1), ("fp16", 1), ("bf16", 1)]
                          + [(u, 1) for u in self.uints if u != dt])
        elif self.uints and x.random() < 0.25:
            to = x.choice(self.uints)
        return self.emit(body, pool, cur, "cast", [cur], {"to": to}, "fn", cur.shape, to)

    def s_permute(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        nd = len(cur.shape)
        if nd == 2 or r.random() < 0.5:
            a, b = r.sample(range(nd), 2)
            q = list(range(nd))
            q[a], q[b] = q[b], q[a]
            a, b = (a - nd if r.random() < 0.3 else a), b
            op, args = "transpose", [cur, a, b]
        else:
            q = list(range(nd))
            while q == list(range(nd)):
                r.shuffle(q)
            op, args = "permute", [cur, list(q)]
        base = cur.perm or tuple(range(nd))
        out = self.emit(body, pool, cur, op, args, {}, self.form(op, 0, 0.3), tuple(cur.shape[i] for i in q), cur.dt)
        out.perm = tuple(base[i] for i in q)
        return out

    def s_topk(self, body: List[Any], pool: List[V], cur: V) -> V:
        r = self.r
        if self.over_dyn(cur, -1):  # topk along the dynamic dim (of a 1-D value): mostly not
            if self.dyn_loop or self.x.random() < 0.85:
                return self.s_scalar(body, pool, cur)
            self.dyn_fix("topk", cur, -1)  # (nowhere to move it: the program's expected UserError)
        n = cur.shape[-1]
        k = r.randint(1, min(n, 8))
        args: List[Any] = [cur, k]
        kw: Dict[str, Any] = {}
        if r.random() < 0.35:
            if r.random() < 0.5:
                args.append(-1)
                args.append(False)
            else:
                kw["largest"] = False
        shape = cur.shape[:-1] + (k,)
        x = r.random()
        form = self.form("topk", 0, 0.2)
        if x < 0.5:
            return self.emit(body, pool, cur, "topk", args, dict(kw, _part=0), form, shape, cur.dt)
        idx = self.emit(body, pool, cur, "topk", args, dict(kw, _part=1), form, shape, "int32")
        if x < 0.7:
            return idx
        srcs = [v for v in pool if v.shape == cur.shape and v.dt != "bool"]
        src = r.choice(srcs) if srcs else cur
        return self.emit(body, pool, cur, "gather", [src, -1, idx], {}, "fn", shape, src.dt)

    def fit(self, body: List[Any], pool: List[V], cur: V, main: Tuple[int, ...]) -> V:
        """Undo cur's permutation, reduce dims it does not share with main (topk's k), and
        broadcast it up to main with a main-shaped value of its dtype."""
        r = self.r
        if cur.perm and cur.perm != tuple(range(len(cur.perm))):
            inv = sorted(range(len(cur.perm)), key=lambda i: cur.perm[i])
            nd = len(inv)
            if nd == 2:
                out = self.emit(body, pool, cur, "transpose", [cur, 0, 1], {}, "fn", cur.shape[::-1], cur.dt)
            else:
                out = self.emit(body, pool, cur, "permute", [cur, inv], {}, "fn", tuple(cur.shape[i] for i in inv),
                                cur.dt)
            out.perm = ()
            cur = out
        for d in range(len(main) if len(cur.shape) == len(main) else 0):  # (a 0-d value broadcasts)
            if cur.shape[d] not in (1, main[d]):
                shape = list(cur.shape)
                shape[d] = 1
                op = r.choice(["amax", "sum"]) if cur.dt != "bool" else "amax"
                cur = self.emit(body, pool, cur, op, [cur], {"dim": d, "keepdim": True}, "pos", tuple(shape), cur.dt)
        if cur.shape != main:
            mains = [v for v in pool if v.shape == main and v.dt == cur.dt and not v.perm]
            if not mains:
                src = r.choice([v for v in pool if v.shape == main and not v.perm])
                mains = [self.emit(body, pool, src, "cast", [src], {"to": cur.dt}, "fn", main, cur.dt)]
            other = r.choice(mains)
            op = r.choice(BINARY_I)
            args = [cur, other] if r.random() < 0.5 else [other, cur]
            cur = self.emit(body, pool, other, op, args, {}, "op" if op in BIN_SYM else "fn", main, cur.dt)
        return cur

    def chain(self, body: List[Any], pool: List[V], start: V, n_ops: int, main: Tuple[int, ...],
              allow: Dict[str, bool], want_dt: Optional[str] = None, final_main: bool = True) -> V:
        cur = start
        for _ in range(n_ops):
            cur = self.step(body, pool, cur, allow)
        if cur.dt == "bool":  # a mask is not a value to go on with
            cur = self.emit(body, pool, cur, "cast", [cur], {"to": want_dt or start.dt}, "fn", cur.shape,
                            want_dt or start.dt)
        if final_main:
            cur = self.fit(body, pool, cur, main)
        if want_dt is not None and cur.dt != want_dt:
            cur = self.emit(body, pool, cur, "cast", [cur], {"to": want_dt}, "fn", cur.shape, want_dt)
        return cur

    # --- whole programs -------------------------------------------------------------------------

def usable_dtypes(dtypes: Sequence[str]) -> List[str]:
    """The dtypes that can be fuzzed here (16-bit ones need torch)."""
    return [d for d in dtypes if d in ALL_DTYPES and (d not in ("fp16", "bf16") or have_torch())]


def generate(seed: int, index: int, dtypes: Sequence[str] = ALL_DTYPES) -> Program:
    dts = usable_dtypes(dtypes)
    if not dts:
        raise SystemExit("no dtype to fuzz (16-bit dtypes need torch)")
    prog = Gen(seed, index, dts).program()
    prog.dtypes = ",".join(dts)
    return prog
