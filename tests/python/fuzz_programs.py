#!/usr/bin/env python3
"""Differential fuzzer for PyPTO tensor-level programs (not a test module; see test_fuzz.py).

Program i of seed S is always the same: a random @pypto.jit function, generated as Python source
text (so a report shows the real program), over the tensor-level ops that exist today —
elementwise + - * / maximum minimum with tensors, broadcast rows/cols and Python scalars on
either side (inf, nan, subnormal, huge, integer bounds), exp log abs neg sqrt rsqrt reciprocal
relu sigmoid silu, amax amin sum mean (keepdim or not, then more ops), cast, softmax rms_norm
layer_norm, chains of 2-6 ops (fused by the backend), random vec tile shapes with tails, and
pypto.loop loops (nested, default / same / reused idx_names, siblings, slices and assemble).

Each program runs on the native backend (run_mode="cpu") and the interpreter ("interp") and is
compared with an oracle: the same source executed against a shadow `pypto` made of numpy float32
(fp32, numpy's answer op by op; ints: numpy's wrapping arithmetic) and torch (fp16/bf16: fp32
inside, one rounding per op; torch's own composites). The shadow also carries, per element, a
bound on how far a conforming implementation may be from the oracle (first-order propagation of
the allowed per-op error: 0 ulp for correctly rounded ops, a few for exp/log, n*u*sum|x| for sums),
and marks elements whose class (NaN / inf / finite) is not determined by the contract
("uncertain": e.g. an overflow decided by an approximate exp). NaN positions and infinities
must match exactly; -0.0 == +0.0; cpu and interp must agree bit for bit where the oracle is
exact. The contract is docs/numerics.md.

    python tests/python/fuzz_programs.py --count 5000 --seed 1 [--dtypes fp32,fp16,bf16,int32,int8]
        [--modes cpu,interp] [--jobs 2] [--start 0] [--shrink 20] [--report out.md]
    python tests/python/fuzz_programs.py --seed 1 --index 17 --show    # program, inputs, results
    python tests/python/fuzz_programs.py --seed 1 --index 17 --emit    # a standalone repro script
    python tests/python/fuzz_programs.py --seed 1 --indices 155,989      # just these programs

--shrink N greedily minimizes up to N mismatches (one per signature: drops ops, retargets outputs,
drops edge inputs and edge scalars). Self-tests of the harness: PYPTO_FUZZ_INJECT=nan|ulp|inf
corrupts the cpu results (every such run must report mismatches), --pass-option
reciprocal_division=1 compiles with the documented fast path (mismatches for subnormal divisors),
PYPTO_FUZZ_CRASH_AT=<index> aborts the worker on that program (reported as a crash). Programs
run in --jobs worker processes, so a crash or a hang (--timeout) is recorded, not fatal.

Exit status: 0 when there is no mismatch (and no crash / hang / fuzzer error), 1 otherwise.
"""

from __future__ import annotations

import argparse
import base64
import builtins
import json
import linecache
import math
import os
import random
import select
import subprocess
import sys
import time
import traceback
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

ALL_DTYPES = ("fp32", "fp16", "bf16", "int32", "int8")
FLOATS = ("fp32", "fp16", "bf16")
INTS = ("int32", "int8")
DT_WEIGHTS = {"fp32": 55, "fp16": 13, "bf16": 12, "int32": 12, "int8": 8}
PDT = {"fp32": "DT_FP32", "fp16": "DT_FP16", "bf16": "DT_BF16", "int32": "DT_INT32", "int8": "DT_INT8"}
PREC = {"fp32": (24, -126), "fp16": (11, -14), "bf16": (8, -126)}  # significand bits, min exponent
FMAX = {"fp32": float(np.finfo(np.float32).max), "fp16": 65504.0, "bf16": 3.3895313892515355e38}
IBOUNDS = {"int32": (-2 ** 31, 2 ** 31 - 1), "int8": (-128, 127)}
NP_INT = {"int32": np.int32, "int8": np.int8}
U32 = 2.0 ** -24  # fp32 unit roundoff (sums accumulate in fp32 for every float dtype)
INF = float("inf")
NAN = float("nan")

EDGE = {
    "fp32": [NAN, INF, -INF, 0.0, -0.0, 1e-40, -3e-42, 1.4e-45, FMAX["fp32"], -FMAX["fp32"], 1.1754944e-38,
             1e30, -1e-30],
    "fp16": [NAN, INF, -INF, 0.0, -0.0, 65504.0, -65504.0, 6.1035156e-05, 5.9604645e-08, -1e-5, 1e4],
    "bf16": [NAN, INF, -INF, 0.0, -0.0, FMAX["bf16"], -FMAX["bf16"], 1.1754944e-38, 9.2e-41, 1e30, -1e-40],
    "int32": [-2 ** 31, 2 ** 31 - 1, 0, -1, 1, 2 ** 24 + 1, -(2 ** 24 + 1)],
    "int8": [-128, 127, 0, -1, 1],
}

SCALARS_NORMAL = [2.5, -1.5, 0.5, 3.0, -3.0, 0.1, 1.0, 2.0, 7.0, 1e-3, 4.0, -0.0, 0.0, 3, -2]
SCALARS_EDGE = {
    "fp32": [1e30, -1e30, 1e-30, 1e-39, 1e-40, -3e-42, 1.4e-45, 3.4e38, INF, -INF, NAN, 1e-8, 16777217],
    "fp16": [1e5, -1e5, 65504.0, 1e-5, 1e-8, 1e-40, INF, -INF, NAN, 1e30, 70000.0, 2049],
    "bf16": [1e30, -1e30, 1e-30, 1e-40, 3.4e38, INF, -INF, NAN, 0.1, 257, 1e-3],
}
INT_SCALARS_NORMAL = [0, 1, -1, 2, 3, -7, 100, 1000]
INT_SCALARS_EDGE = {"int32": [2 ** 31 - 1, -2 ** 31, 16777217, 2 ** 24 + 1, -16777217, 65536],
                    "int8": [127, -128, 100, -100, 64]}
INT_SCALARS_BAD = {"int32": [2 ** 40, -2 ** 31 - 1, 2 ** 31, 0.5], "int8": [300, -129, 128, 1000, 2.5]}

SENTINEL = {"fp32": -7777.0, "fp16": -777.0, "bf16": -7776.0, "int32": -7777, "int8": -77}

try:  # torch is the 16-bit oracle; without it 16-bit programs are skipped
    import torch  # noqa: F401
    HAVE_TORCH = True
except Exception:  # pragma: no cover
    HAVE_TORCH = False


def bf16_round(a: np.ndarray) -> np.ndarray:
    """float32 array -> float32 values rounded to bf16 (nearest even; NaN stays NaN)."""
    f = np.ascontiguousarray(a, np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    r = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32).copy()
    out[np.isnan(f)] = np.nan
    return out


def round_to(dt: str, a: Any) -> np.ndarray:
    """float32 array -> float32 array of values representable in dt (nearest even)."""
    a = np.asarray(a, np.float32)
    with np.errstate(all="ignore"):
        if dt == "fp32":
            return a
        if dt == "fp16":
            return a.astype(np.float16).astype(np.float32)
        if dt == "bf16":
            return bf16_round(a)
    raise ValueError(dt)


def round64_to(dt: str, a64: np.ndarray) -> np.ndarray:
    """float64 -> float32 array of values of dt, rounded once (for int -> float casts)."""
    a64 = np.asarray(a64, np.float64)
    with np.errstate(all="ignore"):
        if dt == "fp32":
            return a64.astype(np.float32)
        if dt == "fp16":
            return a64.astype(np.float16).astype(np.float32)
        # bf16: 8 significant bits, rounded once from the exact value
        m, e = np.frexp(a64)
        scale = np.ldexp(1.0, (e - 8).astype(np.int64))
        r = np.where(a64 == 0, a64, np.rint(a64 / np.where(a64 == 0, 1.0, scale)) * scale)
        r = np.where(np.abs(r) > FMAX["bf16"], np.copysign(np.inf, r), r)
        return r.astype(np.float32)


def ulp(x: Any, dt: str) -> np.ndarray:
    """Spacing of dt at |x| (float64; subnormal spacing below the normal range)."""
    p, emin = PREC[dt]
    ax = np.abs(np.asarray(x, np.float64))
    ax = np.where(np.isfinite(ax), ax, 0.0)
    _, e = np.frexp(ax)
    ex = np.where(ax == 0, emin, np.maximum(e - 1, emin))
    return np.ldexp(1.0, (ex - (p - 1)).astype(np.int64))


def to_storage(dt: str, v32: np.ndarray) -> np.ndarray:
    """Oracle values (float32 / int) -> the array a pypto parameter of dtype dt takes."""
    if dt == "fp32":
        return np.ascontiguousarray(v32, np.float32)
    if dt == "fp16":
        with np.errstate(all="ignore"):
            return np.ascontiguousarray(v32, np.float32).astype(np.float16)
    if dt == "bf16":
        bits = np.ascontiguousarray(bf16_round(v32), np.float32).view(np.uint32)
        return (bits >> 16).astype(np.uint16)
    return np.ascontiguousarray(v32, NP_INT[dt])


def from_storage(dt: str, a: np.ndarray) -> np.ndarray:
    """A pypto result array -> float32 values (floats) or int64 (ints)."""
    a = np.asarray(a)
    if dt == "bf16":
        if a.dtype == np.uint16:
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32)
    if dt in FLOATS:
        return a.astype(np.float32)
    return a.astype(np.int64)


def storage_dtype(dt: str) -> Any:
    return {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16, "int32": np.int32, "int8": np.int8}[dt]


# --------------------------------------------------------------------------------------------
# program IR (rendered to Python source)
# --------------------------------------------------------------------------------------------

@dataclass
class V:
    name: str
    shape: Tuple[int, ...]
    dt: str


@dataclass
class Param:
    name: str
    shape: Tuple[int, ...]
    dt: str
    role: str  # "in" | "out"
    style: str = "normal"
    edges: bool = False


@dataclass
class Program:
    seed: int
    index: int
    dtype: str
    kind: str
    params: List[Param]
    body: List[Any]
    note: str = ""
    shrunk: bool = False
    dtypes: str = ",".join(ALL_DTYPES)  # the --dtypes it was generated with (part of its identity)

    @property
    def filename(self) -> str:
        return f"fuzz_s{self.seed}_i{self.index}{'_min' if self.shrunk else ''}.py"

    @property
    def category(self) -> str:
        return f"{self.dtype}/{self.kind}"


def lit(s: Any) -> str:
    if isinstance(s, float):
        if math.isnan(s):
            return 'float("nan")'
        if math.isinf(s):
            return 'float("inf")' if s > 0 else 'float("-inf")'
        return repr(s)
    return repr(int(s))


BIN_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def render_expr(op: str, args: List[Any], kw: Dict[str, Any], form: str) -> str:
    def a(x: Any) -> str:
        return x.name if isinstance(x, V) else lit(x)
    if op in BIN_SYM:
        if form == "op":
            return f"{a(args[0])} {BIN_SYM[op]} {a(args[1])}"
        return f"pypto.{op}({a(args[0])}, {a(args[1])})"
    if op in ("maximum", "minimum"):
        return f"pypto.{op}({a(args[0])}, {a(args[1])})"
    if op == "neg" and form == "op":
        return f"-{a(args[0])}"
    if op == "abs" and form == "op":
        return f"abs({a(args[0])})"
    if op in ("amax", "amin", "sum", "mean"):
        if form == "kw":
            return f"pypto.{op}({a(args[0])}, dim={kw['dim']}, keepdim={kw['keepdim']})"
        return f"pypto.{op}({a(args[0])}, {kw['dim']}, keepdim={kw['keepdim']})"
    if op == "cast":
        return f"pypto.cast({a(args[0])}, pypto.{PDT[kw['to']]})"
    if op == "softmax":
        return f"pypto.softmax({a(args[0])}, {kw['dim']})"
    if op in ("rms_norm", "layer_norm"):
        extra = f", {lit(kw['eps'])}" if "eps" in kw else ""
        return f"pypto.{op}({', '.join(a(x) for x in args)}{extra})"
    return f"pypto.{op}({a(args[0])})"


# Statements: ("tile", dims) ("op", V, op, args, kw, form) ("bind", V, text) ("tensor", V)
# ("store", target_text, V, form, assemble_text) ("loop", var, args_text, body) ("return", [V])

def render(prog: Program) -> str:
    sig = ", ".join(f"{p.name}: pypto.Tensor({tuple(p.shape)!r}, pypto.{PDT[p.dt]})" for p in prog.params)
    lines = ["import pypto", "", "", "@pypto.jit", f"def fuzz({sig}):"]

    def emit(body: List[Any], ind: str) -> None:
        for st in body:
            k = st[0]
            if k == "tile":
                lines.append(f"{ind}pypto.set_vec_tile_shapes({', '.join(map(str, st[1]))})")
            elif k == "op":
                _, out, op, args, kw, form = st
                lines.append(f"{ind}{out.name} = {render_expr(op, args, kw, form)}")
            elif k == "bind":
                lines.append(f"{ind}{st[1].name} = {st[2]}")
            elif k == "tensor":
                v = st[1]
                lines.append(f"{ind}{v.name} = pypto.tensor({tuple(v.shape)!r}, pypto.{PDT[v.dt]})")
            elif k == "store":
                _, target, v, form, asm = st
                if form == "assemble":
                    lines.append(f"{ind}pypto.assemble({v.name}, {asm})")
                else:
                    lines.append(f"{ind}{target} = {v.name}")
            elif k == "loop":
                _, var, args_text, inner = st
                lines.append(f"{ind}for {var} in pypto.loop({args_text}):")
                emit(inner, ind + "    ")
            elif k == "return":
                lines.append(f"{ind}return {', '.join(v.name for v in st[1])}")
            else:
                raise ValueError(k)
    emit(prog.body, "    ")
    return "\n".join(lines) + "\n"


def outputs_of(prog: Program) -> Tuple[List[Param], int]:
    """(out params, number of returned values)."""
    outs = [p for p in prog.params if p.role == "out"]
    nret = 0
    for st in prog.body:
        if st[0] == "return":
            nret = len(st[1])
    return outs, nret


# --------------------------------------------------------------------------------------------
# generator
# --------------------------------------------------------------------------------------------

SHAPES_2D = [(5, 33), (8, 64), (13, 20), (3, 100), (4, 7), (1, 37), (8, 16), (6, 48), (13, 100), (7, 1),
             (16, 9), (2, 130)]
TILE_R = [1, 2, 4, 8, 16]
TILE_C = [4, 8, 16, 32, 64, 128]
SHAPES_ND = [((2, 3, 20), (1, 2, 8)), ((3, 5, 9), (2, 2, 4)), ((37,), (16,)), ((100,), (32,)), ((4, 2, 33), (4, 1, 16))]
UNARY_F = ["exp", "log", "abs", "neg", "sqrt", "rsqrt", "reciprocal", "relu", "sigmoid", "silu"]
UNARY_I = ["abs", "neg", "relu"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum"]
BINARY_I = ["add", "sub", "mul", "maximum", "minimum"]
KIND_WEIGHTS = [("chain", 40), ("multi_out", 6), ("tail_reduce", 7), ("nd", 6), ("loop_rows", 14), ("nested", 12),
                ("siblings", 9), ("two_phase", 6)]


def _wchoice(r: random.Random, items: Sequence[Tuple[Any, int]]) -> Any:
    tot = sum(w for _, w in items)
    x = r.uniform(0, tot)
    for it, w in items:
        x -= w
        if x <= 0:
            return it
    return items[-1][0]


def _bcast(s1: Tuple[int, ...], s2: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
    if len(s1) != len(s2):
        return None
    out = []
    for a, b in zip(s1, s2):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            return None
    return tuple(out)


class Gen:
    """Builds one program's IR."""

    def __init__(self, seed: int, index: int, dtypes: Sequence[str]):
        self.r = random.Random(f"pypto-fuzz-{seed}-{index}")
        self.seed, self.index = seed, index
        self.n = 0
        self.dtypes = list(dtypes)

    def fresh(self, shape: Tuple[int, ...], dt: str, prefix: str = "t") -> V:
        v = V(f"{prefix}{self.n}", tuple(shape), dt)
        self.n += 1
        return v

    # --- scalars ------------------------------------------------------------------------------
    def scalar(self, dt: str) -> Any:
        r = self.r
        if dt in INTS:
            x = r.random()
            if x < 0.04:
                return r.choice(INT_SCALARS_BAD[dt])
            if x < 0.25:
                return r.choice(INT_SCALARS_EDGE[dt])
            v = r.choice(INT_SCALARS_NORMAL)
            return max(min(v, IBOUNDS[dt][1]), IBOUNDS[dt][0])
        if r.random() < 0.22:
            return r.choice(SCALARS_EDGE[dt])
        return r.choice(SCALARS_NORMAL)

    # --- one op ---------------------------------------------------------------------------------
    def pick_op(self, cur: V, pool: List[V], allow: Dict[str, bool]) -> Optional[Tuple[str, List[Any], Dict, str, Tuple, str]]:
        """(op, args, kw, form, out_shape, out_dt) applied to cur (and maybe one pool value)."""
        r = self.r
        dt = cur.dt
        isf = dt in FLOATS
        choices = [("unary", 22 if isf else 12), ("binary", 26), ("scalar", 26)]
        if allow.get("reduce", True) and len(cur.shape) >= 1:
            choices.append(("reduce", 11))
        if isf and allow.get("composite", True) and len(cur.shape) == 2:
            choices.append(("composite", 6))
        if allow.get("cast", True):
            choices.append(("cast", 7))
        kind = _wchoice(r, choices)
        if kind == "unary":
            op = r.choice(UNARY_F if isf else UNARY_I)
            form = "op" if op in ("neg", "abs") and r.random() < 0.5 else "fn"
            return op, [cur], {}, form, cur.shape, dt
        if kind == "binary":
            cands = [v for v in pool if v.dt == dt and v is not cur and _bcast(cur.shape, v.shape) is not None]
            if not cands:
                kind = "scalar"
            else:
                # prefer same-shape or broadcast (row/col) operands
                other = r.choice(cands)
                op = r.choice(BINARY if isf else BINARY_I)
                args = [cur, other] if r.random() < 0.7 else [other, cur]
                form = "op" if op in BIN_SYM and r.random() < 0.6 else "fn"
                return op, args, {}, form, _bcast(cur.shape, other.shape), dt
        if kind == "scalar":
            op = r.choice(BINARY if isf else BINARY_I)
            s = self.scalar(dt)
            left = r.random() < 0.35
            args = [s, cur] if left else [cur, s]
            form = "op" if op in BIN_SYM and r.random() < 0.7 else "fn"
            return op, args, {}, form, cur.shape, dt
        if kind == "reduce":
            ops = ["amax", "amin", "sum", "mean"] if isf else ["amax", "amin", "sum"]
            op = r.choice(ops)
            nd = len(cur.shape)
            dim = r.choice([-1, -1, 0] + ([1] if nd == 3 else []))
            shape = list(cur.shape)
            shape[dim] = 1
            form = "kw" if r.random() < 0.4 else "pos"
            return op, [cur], {"dim": dim, "keepdim": True}, form, tuple(shape), dt
        if kind == "composite":
            opts = ["softmax"]
            gam = [v for v in pool if v.dt == dt and v.shape == (1, cur.shape[1]) and v.name.startswith(("g", "c"))]
            if gam:
                opts += ["rms_norm", "layer_norm"]
            op = r.choice(opts)
            if op == "softmax":
                return op, [cur], {"dim": r.choice([-1, -1, 0])}, "fn", cur.shape, dt
            kw = {}
            if r.random() < 0.4:
                kw["eps"] = r.choice([1e-6, 1e-5, 0.0, 1e-3])
            if op == "rms_norm":
                return op, [cur, r.choice(gam)], kw, "fn", cur.shape, dt
            return op, [cur, r.choice(gam), r.choice(gam)], kw, "fn", cur.shape, dt
        # cast
        if dt == "fp32":
            to = _wchoice(r, [("fp16", 4), ("bf16", 4), ("int32", 1), ("int8", 1)])
        elif dt in ("fp16", "bf16"):
            to = _wchoice(r, [("fp32", 6), ("bf16" if dt == "fp16" else "fp16", 1), ("int32", 1)])
        elif dt == "int32":
            to = _wchoice(r, [("fp32", 6), ("fp16", 1), ("bf16", 1), ("int8", 1)])
        else:
            to = _wchoice(r, [("fp32", 4), ("int32", 3), ("fp16", 1)])
        return "cast", [cur], {"to": to}, "fn", cur.shape, to

    def chain(self, body: List[Any], pool: List[V], start: V, n_ops: int, main: Tuple[int, ...],
              allow: Dict[str, bool], want_dt: Optional[str] = None, final_main: bool = True) -> V:
        cur = start
        for _ in range(n_ops):
            op, args, kw, form, shape, dt = self.pick_op(cur, pool, allow)
            out = self.fresh(shape, dt)
            body.append(("op", out, op, args, kw, form))
            pool.append(out)
            cur = out
        if final_main and cur.shape != main:
            # broadcast back up to the main shape with a main-shaped value of this dtype
            mains = [v for v in pool if v.shape == main and v.dt == cur.dt]
            if not mains:
                src = self.r.choice([v for v in pool if v.shape == main])
                c = self.fresh(main, cur.dt)
                body.append(("op", c, "cast", [src], {"to": cur.dt}, "fn"))
                mains = [c]
            other = self.r.choice(mains)
            op = self.r.choice(BINARY_I)
            out = self.fresh(main, cur.dt)
            args = [cur, other] if self.r.random() < 0.5 else [other, cur]
            body.append(("op", out, op, args, {}, "op" if op in BIN_SYM else "fn"))
            pool.append(out)
            cur = out
        if want_dt is not None and cur.dt != want_dt:
            out = self.fresh(cur.shape, want_dt)
            body.append(("op", out, "cast", [cur], {"to": want_dt}, "fn"))
            pool.append(out)
            cur = out
        return cur

    # --- whole programs -------------------------------------------------------------------------
    def data_style(self, dt: str) -> Tuple[str, bool]:
        r = self.r
        if dt in INTS:
            style = r.choice(["int_small", "int_small", "int_wide"])
        else:
            style = _wchoice(r, [("normal", 5), ("positive", 2), ("wide", 2), ("small", 1)])
        return style, r.random() < 0.6

    def param(self, name: str, shape: Tuple[int, ...], dt: str, role: str = "in") -> Param:
        style, edges = self.data_style(dt) if role == "in" else ("", False)
        return Param(name, tuple(shape), dt, role, style, edges)

    def tile2(self, shape: Tuple[int, ...], rows: Optional[int] = None) -> Tuple[int, int]:
        r = self.r
        tr = rows if rows is not None else r.choice(TILE_R)
        return tr, r.choice(TILE_C)

    def program(self) -> Program:
        r = self.r
        dt = _wchoice(r, [(d, DT_WEIGHTS[d]) for d in self.dtypes])
        kind = _wchoice(r, KIND_WEIGHTS)
        fn = getattr(self, "k_" + kind)
        params, body = fn(dt)
        return Program(self.seed, self.index, dt, kind, params, body)

    def _inputs2(self, dt: str, R: int, C: int, loop: bool = False) -> Tuple[List[Param], Dict[str, str]]:
        """x0 (R,C) plus optional x1 (R,C), r0 (R,1), g0/b0 (1,C) parameters."""
        r = self.r
        ps = [self.param("x0", (R, C), dt)]
        roles = {"x0": "main"}
        if r.random() < 0.5:
            ps.append(self.param("x1", (R, C), dt))
            roles["x1"] = "main"
        if r.random() < 0.45:
            ps.append(self.param("r0", (R, 1), dt))
            roles["r0"] = "row"
        if r.random() < 0.5:
            ps.append(self.param("g0", (1, C), dt))
            roles["g0"] = "col"
            if r.random() < 0.6:
                ps.append(self.param("g1", (1, C), dt))
                roles["g1"] = "col"
        return ps, roles

    def _allow(self) -> Dict[str, bool]:
        r = self.r
        return {"reduce": r.random() < 0.8, "composite": r.random() < 0.7, "cast": r.random() < 0.6}

    def _finish_out(self, body: List[Any], params: List[Param], vals: List[V], ret: bool) -> None:
        if ret:
            body.append(("return", list(vals)))
        else:
            for k, v in enumerate(vals):
                params.append(Param(f"out{k}", v.shape, v.dt, "out"))
                body.append(("store", f"out{k}[:]", v, "setitem", ""))

    def k_chain(self, dt: str, multi: bool = False) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice(SHAPES_2D)
        params, _ = self._inputs2(dt, R, C)
        body: List[Any] = [("tile", self.tile2((R, C)))]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        start = pool[0] if r.random() < 0.8 else r.choice(pool)
        cur = self.chain(body, pool, start, r.randint(2, 6), (R, C), self._allow(), final_main=r.random() < 0.5)
        outs = [cur]
        if multi:
            extra = [v for v in pool if v is not cur and not v.name.startswith(("x", "r", "g"))]
            if extra:
                outs.append(r.choice(extra))
            else:
                e = self.fresh((R, 1), cur.dt)
                body.append(("op", e, "sum", [cur if cur.shape == (R, C) else pool[0]], {"dim": -1, "keepdim": True},
                             "pos"))
                outs.append(e)
            if r.random() < 0.5:
                outs.reverse()
        self._finish_out(body, params, outs, ret=r.random() < 0.5)
        return params, body

    def k_multi_out(self, dt: str) -> Tuple[List[Param], List[Any]]:
        return self.k_chain(dt, multi=True)

    def k_nd(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        shape, tile = r.choice(SHAPES_ND)
        params = [self.param("x0", shape, dt)]
        if r.random() < 0.6:
            params.append(self.param("x1", shape, dt))
        if len(shape) == 3 and r.random() < 0.5:
            params.append(self.param("r0", (shape[0], shape[1], 1), dt))
        body: List[Any] = [("tile", tile)]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        allow = {"reduce": r.random() < 0.7, "composite": False, "cast": r.random() < 0.5}
        cur = self.chain(body, pool, pool[0], r.randint(2, 5), shape, allow, final_main=r.random() < 0.6)
        self._finish_out(body, params, [cur], ret=r.random() < 0.5)
        return params, body

    def k_tail_reduce(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice(SHAPES_2D)
        params, _ = self._inputs2(dt, R, C)
        tr, tc = self.tile2((R, C))
        body: List[Any] = [("tile", (tr, tc))]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        cur = self.chain(body, pool, pool[0], r.randint(1, 4), (R, C), self._allow(), final_main=True)
        isf = cur.dt in FLOATS
        op = r.choice(["amax", "amin", "sum", "mean"] if isf else ["amax", "amin", "sum"])
        dim = r.choice([-1, 0, 1])
        keep = (C,) if dim == 0 else (R,)
        red = self.fresh(keep, cur.dt)
        body.append(("op", red, op, [cur], {"dim": dim, "keepdim": False}, r.choice(["pos", "kw"])))
        cur = red
        n_more = r.randint(0, 2)
        ret = r.random() < 0.5
        if n_more or not ret or r.random() < 0.5:  # a returned reduction may keep the rank-2 tile
            body.append(("tile", ((tc if dim == 0 else tr),)))
        for _ in range(n_more):
            opn = r.choice(BINARY if isf else BINARY_I)
            s = self.scalar(cur.dt)
            out = self.fresh(keep, cur.dt)
            body.append(("op", out, opn, [cur, s] if r.random() < 0.6 else [s, cur], {},
                         "op" if opn in BIN_SYM else "fn"))
            cur = out
        self._finish_out(body, params, [cur], ret=ret)
        return params, body

    # --- loops ----------------------------------------------------------------------------------
    def _loop_args(self, n_or_range: Tuple[int, int, int], style: str, idx_name: str, lname: str = "") -> str:
        start, stop, step = n_or_range
        kw = []
        if lname:
            kw.append(f'name="{lname}"')
        if idx_name:
            kw.append(f'idx_name="{idx_name}"')
        if style == "short" and start == 0 and step == 1:
            pos = f"{stop}"
        elif style == "two" and step == 1:
            pos = f"{start}, {stop}"
        else:
            pos = f"{start}, {stop}, {step}"
        return ", ".join([pos] + kw)

    def _loop_body(self, dt: str, params: List[Param], roles: Dict[str, str], rows: str, cols: str,
                   bshape: Tuple[int, int], n_ops: int, allow: Dict[str, bool], want_dt: Optional[str],
                   extra_src: Optional[List[Tuple[str, str]]] = None) -> Tuple[List[Any], V]:
        """Bind slices of the parameters (rows/cols are slice texts), run a chain, return (body, value)."""
        r = self.r
        body: List[Any] = []
        pool: List[V] = []
        k = 0
        srcs = [(p.name, roles[p.name]) for p in params if p.role == "in" and p.name in roles]
        if extra_src:
            srcs = extra_src + srcs
        for name, role in srcs:
            if role == "main":
                v = V(f"a{k}", bshape, dt)
                body.append(("bind", v, f"{name}[{rows}, {cols}]"))
            elif role == "row":
                v = V(f"a{k}", (bshape[0], 1), dt)
                body.append(("bind", v, f"{name}[{rows}, :]"))
            else:  # col
                v = V(f"c{k}", (1, bshape[1]), dt)
                body.append(("bind", v, f"{name}[:, {cols}]" if cols != ":" else name))
            k += 1
            pool.append(v)
        start = pool[0]
        cur = self.chain(body, pool, start, n_ops, bshape, allow, want_dt=want_dt, final_main=True)
        return body, cur

    def _out_target(self, dt_out: str, R: int, C: int, params: List[Param], body: List[Any], ret: bool) -> str:
        if ret:
            body.append(("tensor", V("out", (R, C), dt_out)))
            return "out"
        params.append(Param("out0", (R, C), dt_out, "out"))
        return "out0"

    def _store(self, target: str, v: V, rows: str, cols: str, offs: str) -> Tuple:
        if self.r.random() < 0.35:
            return ("store", "", v, "assemble", f"[{offs}], {target}")
        return ("store", f"{target}[{rows}, {cols}]", v, "setitem", "")

    def k_loop_rows(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice([s for s in SHAPES_2D if s[0] > 1])
        params, roles = self._inputs2(dt, R, C)
        b = r.choice([d for d in (1, 2, 4) if R % d == 0])
        tc = r.choice(TILE_C)
        idx = r.choice(["", "", "r", "i", "row"])
        lname = r.choice(["", "", "L0"])
        if b == 1 or r.random() < 0.5:
            rng_ = (0, R, b)
            rows = f"i:i + {b}"
            offs = "i, 0"
        else:
            rng_ = (0, R // b, 1)
            rows = f"i * {b}:(i + 1) * {b}"
            offs = f"i * {b}, 0"
        lbody, cur = self._loop_body(dt, params, roles, rows, ":", (b, C), r.randint(2, 5), self._allow(), None)
        ret = r.random() < 0.4
        body: List[Any] = [("tile", (r.choice([b, b, 2, 8]), tc))]
        target = self._out_target(cur.dt, R, C, params, body, ret)
        lbody.append(self._store(target, cur, rows, ":", offs))
        body.append(("loop", "i", self._loop_args(rng_, r.choice(["short", "two", "three"]), idx, lname), lbody))
        if ret:
            body.append(("return", [V("out", (R, C), cur.dt)]))
        return params, body

    def k_nested(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        names = r.choice([("", ""), ("k", "k"), ("i", "i"), ("i", "j"), ("", "i"), ("r", "")])
        if r.random() < 0.5:  # rows split into A x B
            A, B = r.choice([(2, 3), (2, 4), (3, 2), (2, 2)])
            R, C = A * B, r.choice([7, 16, 33, 64])
            params, roles = self._inputs2(dt, R, C)
            rows = f"i * {B} + j:i * {B} + j + 1"
            cols, offs, bshape = ":", f"i * {B} + j, 0", (1, C)
        else:  # rows x column blocks
            A, B = r.choice([(3, 3), (2, 2), (4, 2), (1, 3)])
            w = r.choice([8, 16, 20])
            R, C = A, B * w
            params, roles = self._inputs2(dt, R, C)
            rows = "i:i + 1"
            cols, offs, bshape = f"j * {w}:(j + 1) * {w}", f"i, j * {w}", (1, w)
        lbody, cur = self._loop_body(dt, params, roles, rows, cols, bshape, r.randint(2, 5), self._allow(), None)
        ret = r.random() < 0.4
        body: List[Any] = [("tile", (1, r.choice(TILE_C)))]
        target = self._out_target(cur.dt, R, C, params, body, ret)
        lbody.append(self._store(target, cur, rows, cols, offs))
        inner = ("loop", "j", self._loop_args((0, B, 1), r.choice(["short", "two"]), names[1]), lbody)
        body.append(("loop", "i", self._loop_args((0, A, 1), r.choice(["short", "two"]), names[0]), [inner]))
        if ret:
            body.append(("return", [V("out", (R, C), cur.dt)]))
        return params, body

    def k_siblings(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice([s for s in SHAPES_2D if s[0] > 2])
        params, roles = self._inputs2(dt, R, C)
        h = r.randint(1, R - 1)
        idx = r.choice(["", "r", "i"])
        allow = self._allow()
        b1, cur1 = self._loop_body(dt, params, roles, "i:i + 1", ":", (1, C), r.randint(2, 4), allow, None)
        b2, cur2 = self._loop_body(dt, params, roles, "i:i + 1", ":", (1, C), r.randint(2, 4), allow, cur1.dt)
        ret = r.random() < 0.4
        body: List[Any] = [("tile", (1, r.choice(TILE_C)))]
        target = self._out_target(cur1.dt, R, C, params, body, ret)
        b1.append(self._store(target, cur1, "i:i + 1", ":", "i, 0"))
        b2.append(self._store(target, cur2, "i:i + 1", ":", "i, 0"))
        body.append(("loop", "i", self._loop_args((0, h, 1), r.choice(["short", "two"]), idx), b1))
        body.append(("loop", "i", self._loop_args((h, R, 1), "two", idx), b2))
        if ret:
            body.append(("return", [V("out", (R, C), cur1.dt)]))
        return params, body

    def k_two_phase(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice([s for s in SHAPES_2D if s[0] > 1])
        params, roles = self._inputs2(dt, R, C)
        idx = r.choice(["", "r"])
        allow = self._allow()
        b1, cur1 = self._loop_body(dt, params, roles, "i:i + 1", ":", (1, C), r.randint(1, 3), allow, None)
        body: List[Any] = [("tile", (1, r.choice(TILE_C))), ("tensor", V("tmp", (R, C), cur1.dt))]
        b1.append(self._store("tmp", cur1, "i:i + 1", ":", "i, 0"))
        # the second loop reads tmp rows (in the tmp dtype) and the inputs
        mid_dt = cur1.dt
        sub_params = [p for p in params if p.dt == mid_dt] if mid_dt != dt else params
        b2, cur2 = self._loop_body(mid_dt, sub_params, roles, "i:i + 1", ":", (1, C), r.randint(1, 3), allow, None,
                                   extra_src=[("tmp", "main")])
        ret = r.random() < 0.4
        target = self._out_target(cur2.dt, R, C, params, body, ret)
        b2.append(self._store(target, cur2, "i:i + 1", ":", "i, 0"))
        body.append(("loop", "i", self._loop_args((0, R, 1), "short", idx), b1))
        body.append(("loop", "i", self._loop_args((0, R, 1), r.choice(["short", "two"]), idx), b2))
        if ret:
            body.append(("return", [V("out", (R, C), cur2.dt)]))
        return params, body


def generate(seed: int, index: int, dtypes: Sequence[str] = ALL_DTYPES) -> Program:
    dts = [d for d in dtypes if d in ALL_DTYPES and (HAVE_TORCH or d not in ("fp16", "bf16"))]
    if not dts:
        raise SystemExit("no dtype to fuzz (16-bit dtypes need torch)")
    prog = Gen(seed, index, dts).program()
    prog.dtypes = ",".join(dts)
    return prog


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------

def make_input(seed: int, index: int, p: Param) -> np.ndarray:
    """Oracle values (float32 for floats, ints) of an input parameter: deterministic in
    (seed, index, parameter name, shape, dtype, style, edges)."""
    key = zlib.crc32(repr((p.name, tuple(p.shape), p.dt, p.style, p.edges)).encode())
    g = np.random.default_rng([seed, index, key])
    shape = tuple(p.shape)
    n = int(np.prod(shape))
    if p.dt in INTS:
        lo, hi = IBOUNDS[p.dt]
        if p.style == "int_wide":
            a = g.integers(lo, hi, size=n, endpoint=True)
        else:
            a = g.integers(max(lo, -1000), min(hi, 1000), size=n, endpoint=True)
        a = a.astype(np.int64)
    else:
        a = g.standard_normal(n)
        if p.style == "positive":
            a = np.abs(a) + 0.01
        elif p.style == "wide":
            a = a * 10.0 ** g.uniform(-3 if p.dt == "fp16" else -6, 3 if p.dt == "fp16" else 6, n)
        elif p.style == "small":
            a = a * 1e-3
        else:
            a = a * g.choice([1.0, 3.0])
    if p.edges and n > 0:
        k = int(min(n, 1 + g.geometric(0.5) + n // 40 * int(g.random() < 0.3)))
        pos = g.choice(n, size=k, replace=False)
        vals = EDGE[p.dt]
        for q in pos:
            a[q] = vals[int(g.integers(0, len(vals)))]
    if p.dt in INTS:
        return a.astype(NP_INT[p.dt]).reshape(shape)
    with np.errstate(all="ignore"):
        return round_to(p.dt, a.astype(np.float32)).reshape(shape)


def make_inputs(prog: Program) -> Dict[str, np.ndarray]:
    return {p.name: make_input(prog.seed, prog.index, p) for p in prog.params if p.role == "in"}


# --------------------------------------------------------------------------------------------
# the oracle: a shadow `pypto` over numpy (fp32, ints) and torch (fp16/bf16), with error bounds
# --------------------------------------------------------------------------------------------

class ExpectedUserError(Exception):
    """The contract says pypto must refuse this program with a UserError at trace time."""


class OracleUnsupported(Exception):
    """The generator produced something the oracle does not model (a fuzzer bug)."""


OWN_ULPS = {  # allowed own error in ulps of the result when the inputs are exact
    "fp32": {"add": 0, "sub": 0, "mul": 0, "maximum": 0, "minimum": 0, "neg": 0, "abs": 0, "relu": 0,
             "div": 1, "reciprocal": 1, "sqrt": 1, "rsqrt": 1, "exp": 4, "log": 4},
    "16": {"add": 0, "sub": 0, "mul": 0, "maximum": 0, "minimum": 0, "neg": 0, "abs": 0, "relu": 0,
           "div": 1, "reciprocal": 1, "sqrt": 1, "rsqrt": 1, "exp": 1, "log": 1},
}


def _own(dt: str, op: str) -> int:
    return OWN_ULPS["fp32" if dt == "fp32" else "16"][op]


def _smul(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """x * e with 0 where e == 0 (so inf * 0 is 0: an exact operand adds no error)."""
    with np.errstate(all="ignore"):
        return np.where(e == 0, 0.0, np.abs(x) * e)


class OT:
    """A shadow tensor: values (float32 for floats, the int dtype for ints), an error bound
    (float64, inf = not determined by the contract) and the pypto dtype name."""

    __slots__ = ("v", "e", "dt")

    def __init__(self, v: np.ndarray, e: np.ndarray, dt: str):
        self.v = v
        self.e = e
        self.dt = dt

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.v.shape)

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

    def __add__(self, o: Any) -> "OT": return S.add(self, o)
    def __radd__(self, o: Any) -> "OT": return S.add(o, self)
    def __sub__(self, o: Any) -> "OT": return S.sub(self, o)
    def __rsub__(self, o: Any) -> "OT": return S.sub(o, self)
    def __mul__(self, o: Any) -> "OT": return S.mul(self, o)
    def __rmul__(self, o: Any) -> "OT": return S.mul(o, self)
    def __truediv__(self, o: Any) -> "OT": return S.div(self, o)
    def __rtruediv__(self, o: Any) -> "OT": return S.div(o, self)
    def __neg__(self) -> "OT": return S.neg(self)
    def __abs__(self) -> "OT": return S.abs(self)


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
        if dt == "fp32" or not HAVE_TORCH:
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


def _finish(dt: str, r: np.ndarray, prop: np.ndarray, ins: List[Tuple[np.ndarray, np.ndarray]], own_ulps: int,
            zero_sens: Sequence[Tuple[np.ndarray, np.ndarray]] = (), ideal: Optional[np.ndarray] = None) -> np.ndarray:
    """The error bound of an elementwise result r (see the module docstring)."""
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
        err = np.where(inexact, prop + sp, 0.0) + own_ulps * sp
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


def _zero_sign_unknown(e: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Which zero max/min/relu/amax/amin return for +0 against -0 is not pinned down: numpy's own
    SIMD loops return the second operand (np.maximum(0.0, -0.0) is -0.0 here), the interpreter the
    first (docs/numerics.md). A tiny error bound keeps the value compared (0 == -0) but makes a
    later division by it, or inf * it, uncertain."""
    return np.where(mask & (e == 0), ZERO_SIGN, e)


def _check_int_scalar(s: Any, dt: str, op: str) -> int:
    lo, hi = IBOUNDS[dt]
    if isinstance(s, float) and not (math.isfinite(s) and s.is_integer()):
        raise ExpectedUserError(f"pypto.{op}: the scalar {s!r} is not an integer but the tensor is {dt}")
    si = int(s)
    if not lo <= si <= hi:
        raise ExpectedUserError(f"pypto.{op}: the scalar {s!r} is out of the range of {dt}")
    return si


class Shadow:
    """The `pypto` a program sees when it is evaluated by the oracle."""

    DT_FP32, DT_FP16, DT_BF16, DT_INT32, DT_INT8 = "fp32", "fp16", "bf16", "int32", "int8"
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
        v = np.zeros(shape, np.float32 if dtype in FLOATS else NP_INT[dtype])
        return OT(v, np.full(shape, np.inf), dtype)

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
            return np.array(_check_int_scalar(x, dt, op), NP_INT[dt]), np.zeros(())
        with np.errstate(all="ignore"):
            return np.array(np.float32(x)), np.zeros(())  # Python scalars are rounded to fp32 once

    def _binary(self, op: str, x: Any, y: Any) -> OT:
        t = x if isinstance(x, OT) else y
        if not isinstance(t, OT):
            raise OracleUnsupported(f"{op} of two scalars")
        dt = t.dt
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
        r = np.ascontiguousarray(np.broadcast_to(r, shape))
        a64 = np.broadcast_to(np.asarray(a, np.float64), shape)
        b64 = np.broadcast_to(np.asarray(b, np.float64), shape)
        ea = np.broadcast_to(ea, shape)
        eb = np.broadcast_to(eb, shape)
        zs: List[Tuple[np.ndarray, np.ndarray]] = []
        with np.errstate(all="ignore"):
            if op in ("add", "sub"):
                prop = ea + eb
            elif op == "mul":
                prop = _smul(a64, eb) + _smul(b64, ea) + ea * eb
                zs = [(a64, ea), (b64, eb)]
            elif op == "div":
                num = _smul(a64, eb) + _smul(b64, ea)
                den = np.abs(b64) * (np.abs(b64) - eb)
                prop = np.where(np.abs(b64) > eb, num / den, np.inf)
                prop = np.where(np.isinf(b64) & (eb == 0), 0.0, prop)
                zs = [(b64, eb), (a64, ea)]
            else:  # maximum, minimum
                prop = np.maximum(ea, eb)
        e = _finish(dt, r, prop, [(a64, ea), (b64, eb)], 0 if dt in INTS else _own(dt, op), zs)
        if op in ("maximum", "minimum") and dt in FLOATS:
            e = _zero_sign_unknown(e, (a64 == 0) & (b64 == 0) & (np.signbit(a64) != np.signbit(b64)))
        return OT(r, np.ascontiguousarray(e), dt)

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
            return OT(r, _finish(dt, r, ea, [(a64, ea)], 0), dt)
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
                prop = _smul(ideal, np.expm1(ea))
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
        e = _finish(dt, r, prop, [(a64, ea)], _own(dt, op), zs, ideal)
        if op == "relu":
            e = _zero_sign_unknown(e, (a64 == 0) & np.signbit(a64))
        if op in ("sqrt", "log", "rsqrt"):  # an interval reaching below 0 may give NaN
            with np.errstate(all="ignore"):
                e = np.where((ea > 0) & (a64 - ea <= 0) & (a64 != 0), np.inf, e)
        return OT(np.ascontiguousarray(r), np.ascontiguousarray(e), dt)

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
        if not -nd <= dim < nd:
            raise OracleUnsupported(f"{op} dim {dim} of rank {nd}")
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
                    e = _zero_sign_unknown(e, both & (np.asarray(r) == 0))
                return OT(np.ascontiguousarray(r), np.where(unc, np.inf, e), dt)
            # sum
            if dt in INTS:
                r = np.sum(x.v, axis=ax, keepdims=keepdim, dtype=NP_INT[dt])
                e = np.sum(e_in, axis=ax, keepdims=keepdim)
                lo, hi = IBOUNDS[dt]
                rr = r.astype(np.float64)
                e = np.where((e > 0) & ((rr + e > hi) | (rr - e < lo)), np.inf, e)
                return OT(np.ascontiguousarray(r), np.where(unc, np.inf, e), dt)
            if dt == "fp32" or not HAVE_TORCH:
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
            return OT(np.ascontiguousarray(r), np.where(unc & ~has_nan, np.inf, e), dt)

    def amax(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._reduce("amax", x, dim, keepdim)
    def amin(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._reduce("amin", x, dim, keepdim)
    def sum(self, x: OT, dim: int = -1, keepdim: bool = False) -> OT: return self._reduce("sum", x, dim, keepdim)

    # --- cast ------------------------------------------------------------------------------------
    def cast(self, x: OT, to: str) -> OT:
        if not isinstance(x, OT):
            raise OracleUnsupported(f"cast of {x!r}")
        fr = x.dt
        v64 = x.v.astype(np.float64)
        e_in = x.e
        unc = np.isinf(e_in)
        inexact = e_in > 0
        with np.errstate(all="ignore"):
            if to in FLOATS:
                if fr in FLOATS:
                    r = round_to(to, x.v.astype(np.float32))
                else:
                    r = round64_to(to, v64)
                rr = r.astype(np.float64)
                sp = ulp(rr, to)
                e = np.where(inexact, e_in + sp, 0.0)
                fin = np.isfinite(rr)
                e = np.where(fin, e, np.where(np.isfinite(v64) & inexact, np.inf, 0.0))
                e = np.where(fin & (e > 0) & (np.abs(rr) + e > FMAX[to]), np.inf, e)
                if fr in INTS and to != "fp32":  # int -> 16-bit: rounded once, from the integer
                    pass
                return OT(np.ascontiguousarray(r), np.where(unc, np.inf, e), to)
            lo, hi = IBOUNDS[to]
            if fr in FLOATS:  # round to nearest even, saturate; NaN -> 0 (docs/isa.md TCVT)
                q = np.where(np.isnan(v64), 0.0, np.clip(np.rint(v64), lo, hi))
                e = np.where(inexact, np.ceil(e_in) + 1.0, 0.0)
            else:  # int -> int saturates
                q = np.clip(v64, lo, hi)
                e = np.where(inexact, e_in, 0.0)
            r = q.astype(NP_INT[to])
            return OT(np.ascontiguousarray(r), np.where(unc, np.inf, e), to)

    # --- composites (the decompositions of python/pypto/ops.py; 16-bit: torch's own) ------------
    def _widen(self, x: OT) -> Tuple[OT, Optional[str]]:
        if x.dt in ("fp16", "bf16"):
            return self.cast(x, "fp32"), x.dt
        return x, None

    def _narrow(self, y: OT, dt: Optional[str]) -> OT:
        return y if dt is None else self.cast(y, dt)

    def _torch16(self, dec: OT, fn: Any, *xs: OT) -> OT:
        """16-bit composites: torch's answer, with the decomposition's error bound (+1 ulp for
        torch's own rounding). Where the two disagree beyond that, the element is ambiguous."""
        if dec.dt not in ("fp16", "bf16") or not HAVE_TORCH:
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
        return OT(np.ascontiguousarray(tv, np.float32), e, dec.dt)

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


S = Shadow()  # the OT operators dispatch here (its ambiguity counter is reset per program)


def _exec_source(src: str, filename: str, pypto_obj: Any) -> Any:
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


def oracle_eval(prog: Program, src: str, inputs: Dict[str, np.ndarray]) -> Tuple[List[OT], int]:
    """The oracle's outputs (out params in order, then returned values) and the ambiguity count."""
    S.ambiguous = 0
    fn = _exec_source(src, prog.filename, S)
    args = []
    outs = []
    for p in prog.params:
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


# --------------------------------------------------------------------------------------------
# running pypto and comparing
# --------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    status: str  # ok | mismatch | expected_error | unsupported | fuzz_error
    flags: List[str] = field(default_factory=list)
    modes: List[str] = field(default_factory=list)
    detail: str = ""
    checked: int = 0
    uncertain: int = 0
    ambiguous: int = 0
    message: str = ""
    coverage: Dict[str, int] = field(default_factory=dict)  # checked NaN / inf / subnormal / zero elements


def run_pypto(prog: Program, src: str, inputs: Dict[str, np.ndarray], modes: Sequence[str]) -> Dict[str, Any]:
    """{mode: ("ok", [outputs as float32/int64 arrays], inputs_modified) | ("usererror", msg) |
    ("exception", msg)}."""
    import pypto
    fn = _exec_source(src, prog.filename, pypto)
    res: Dict[str, Any] = {}
    for mode in modes:
        args = []
        outs_idx = []
        for k, p in enumerate(prog.params):
            if p.role == "in":
                args.append(to_storage(p.dt, inputs[p.name]))
            else:
                args.append(to_storage(p.dt, np.full(p.shape, SENTINEL[p.dt],
                                                     np.float32 if p.dt in FLOATS else NP_INT[p.dt])))
                outs_idx.append(k)
        before = [a.copy() for a in args]
        pypto.set_runtime_options(run_mode=mode)
        try:
            ret = fn(*args)
        except pypto.UserError as e:
            res[mode] = ("usererror", str(e))
            continue
        except Exception as e:  # noqa: BLE001 - everything else is a finding
            res[mode] = ("exception", f"{type(e).__name__}: {e}")
            continue
        finally:
            pypto.set_runtime_options(run_mode="cpu")
        outs = [(prog.params[k].dt, args[k]) for k in outs_idx]
        if ret is not None and not outs_idx:
            rets = list(ret) if isinstance(ret, tuple) else [ret]
            outs += [(None, np.asarray(x)) for x in rets]
        if INJECT and mode == "cpu":
            outs = [(d, _inject(INJECT, a)) for d, a in outs]
        modified = [p.name for k, p in enumerate(prog.params)
                    if p.role == "in" and not np.array_equal(before[k].view(np.uint8), args[k].view(np.uint8))]
        res[mode] = ("ok", outs, modified)
    return res


INJECT = os.environ.get("PYPTO_FUZZ_INJECT", "")  # self-test of the oracle: corrupt cpu results


def _inject(kind: str, a: np.ndarray) -> np.ndarray:
    """A deliberately wrong result (to check that the comparison catches it): "nan" turns NaNs
    into 0, "ulp" moves the first nonzero finite element by one unit of its last place, "inf"
    turns +inf into the largest finite value."""
    a = a.copy()
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        if kind == "nan":
            flat[np.isnan(flat)] = 0
        elif kind == "ulp":
            nz = np.flatnonzero(np.isfinite(flat) & (flat != 0))
            if nz.size:
                flat[nz[0]] = np.nextafter(flat[nz[0]], np.asarray(np.inf, a.dtype))
        elif kind == "inf":
            flat[np.isposinf(flat)] = np.finfo(a.dtype).max
    elif a.dtype == np.uint16:  # bf16 bits
        f = (flat.astype(np.uint32) << 16).view(np.float32)
        if kind == "nan":
            flat[np.isnan(f)] = 0
        elif kind == "ulp":
            nz = np.flatnonzero(np.isfinite(f) & (f != 0))
            if nz.size:
                flat[nz[0]] += 1
        elif kind == "inf":
            flat[np.isposinf(f)] = 0x7F7F
    elif kind == "ulp":
        flat[0] += 1
    return a


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.9g}"
    return str(x)


def compare(prog: Program, oracle: List[OT], res: Dict[str, Any], inputs: Dict[str, np.ndarray],
            max_elems: int = 6) -> Outcome:
    modes = list(res)
    flags: List[str] = []
    bad_modes: List[str] = []
    lines: List[str] = []
    checked = uncertain = 0
    got_all: Dict[str, List[np.ndarray]] = {}
    for mode in modes:
        st = res[mode]
        if st[0] != "ok":
            continue
        _, outs, modified = st
        if modified:
            flags.append("input-modified")
            bad_modes.append(mode)
            lines.append(f"[{mode}] inputs modified: {modified}")
        if len(outs) != len(oracle):
            flags.append("output-count")
            bad_modes.append(mode)
            lines.append(f"[{mode}] {len(outs)} outputs, expected {len(oracle)}")
            continue
        gl = []
        for k, ((dt_hint, arr), want) in enumerate(zip(outs, oracle)):
            dt = want.dt
            exp_np = storage_dtype(dt)
            if arr.dtype != np.dtype(exp_np):
                flags.append("dtype")
                bad_modes.append(mode)
                lines.append(f"[{mode}] output {k}: dtype {arr.dtype}, expected {np.dtype(exp_np)} ({dt})")
                gl.append(None)
                continue
            if tuple(arr.shape) != want.shape:
                flags.append("shape")
                bad_modes.append(mode)
                lines.append(f"[{mode}] output {k}: shape {arr.shape}, expected {want.shape}")
                gl.append(None)
                continue
            gl.append(from_storage(dt, arr))
        got_all[mode] = gl

    elem_lines: List[str] = []
    cov: Counter = Counter()
    for k, want in enumerate(oracle):
        dt = want.dt
        w = want.v.astype(np.float64)
        e = want.e
        skip = np.isinf(e)
        checked += int(np.count_nonzero(~skip))
        uncertain += int(np.count_nonzero(skip))
        with np.errstate(all="ignore"):
            cov["nan"] += int(np.count_nonzero(np.isnan(w) & ~skip))
            cov["inf"] += int(np.count_nonzero(np.isinf(w) & ~skip))
            if dt in FLOATS:
                tiny = np.ldexp(1.0, PREC[dt][1])
                cov["subnormal"] += int(np.count_nonzero((w != 0) & (np.abs(w) < tiny) & ~skip))
            cov["zero"] += int(np.count_nonzero((w == 0) & ~skip))
        bad_any = np.zeros(want.shape, bool)
        per_mode_bad = {}
        for mode, gl in got_all.items():
            if k >= len(gl) or gl[k] is None:
                continue
            g = gl[k].astype(np.float64)
            with np.errstate(all="ignore"):
                gn, wn = np.isnan(g), np.isnan(w)
                nan_missing = wn & ~gn
                nan_extra = gn & ~wn
                winf = np.isinf(w)
                inf_bad = winf & ~gn & (g != w)
                nonfin_got = ~wn & ~winf & ~np.isfinite(g)
                fin = np.isfinite(w) & np.isfinite(g)
                val_bad = fin & (np.abs(g - w) > e)
                sentinel = fin & (g == SENTINEL[dt]) & (w != SENTINEL[dt])
            bad = (nan_missing | nan_extra | inf_bad | nonfin_got | val_bad) & ~skip
            for nm, m in (("nan-missing", nan_missing), ("nan-extra", nan_extra), ("inf-mismatch", inf_bad),
                          ("got-nonfinite", nonfin_got), ("value", val_bad & ~sentinel), ("unwritten", sentinel)):
                if np.any(m & ~skip):
                    flags.append(nm)
            if np.any(bad):
                bad_modes.append(mode)
            per_mode_bad[mode] = bad
            bad_any |= bad
        # cpu vs interp: bit for bit where the oracle is exact
        if "cpu" in got_all and "interp" in got_all and k < len(got_all["cpu"]) and k < len(got_all["interp"]):
            gc, gi = got_all["cpu"][k], got_all["interp"][k]
            if gc is not None and gi is not None:
                with np.errstate(all="ignore"):
                    differ = ~((gc == gi) | (np.isnan(gc.astype(np.float64)) & np.isnan(gi.astype(np.float64))))
                d = differ & (e == 0)
                if np.any(d):
                    flags.append("cpu!=interp")  # not a failing mode by itself: see `modes`
                    bad_any |= d
        if np.any(bad_any):
            idxs = np.argwhere(bad_any)
            elem_lines.append(f"output {k} ({dt}{list(want.shape)}): {len(idxs)} bad of {bad_any.size}")
            for idx in idxs[:max_elems]:
                t = tuple(int(i) for i in idx)
                parts = [f"  [{', '.join(map(str, t))}]"]
                for mode in modes:
                    gl = got_all.get(mode)
                    if gl and k < len(gl) and gl[k] is not None:
                        parts.append(f"{mode}={_fmt(gl[k][t])}")
                    else:
                        parts.append(f"{mode}=<{res[mode][0]}>")
                parts.append(f"expected={_fmt(want.v[t])}")
                parts.append(f"tol={_fmt(e[t])}")
                ins = []
                for p in prog.params:
                    if p.role == "in":
                        a = inputs[p.name]
                        if a.ndim == len(t):
                            it = tuple(min(i, s - 1) for i, s in zip(t, a.shape))
                            ins.append(f"{p.name}{list(it)}={_fmt(a[it])}")
                if ins:
                    parts.append("inputs: " + " ".join(ins))
                elem_lines.append(" ".join(parts))
    flags = sorted(set(flags))
    bad_modes = sorted(set(bad_modes))
    if flags:
        out = Outcome("mismatch", flags, bad_modes, "\n".join(lines + elem_lines), checked, uncertain)
    else:
        out = Outcome("ok", [], [], "", checked, uncertain)
    out.coverage = dict(cov)
    return out


def evaluate(prog: Program, modes: Sequence[str]) -> Tuple[Outcome, str, Dict[str, np.ndarray], Any, Any]:
    """Run one program: (outcome, source, inputs, oracle outputs or None, pypto results)."""
    src = render(prog)
    inputs = make_inputs(prog)
    expect: Optional[str] = None
    oracle: Optional[List[OT]] = None
    amb = 0
    try:
        oracle, amb = oracle_eval(prog, src, inputs)
    except ExpectedUserError as e:
        expect = str(e)
    except Exception:  # noqa: BLE001
        return Outcome("fuzz_error", ["oracle"], [], traceback.format_exc()), src, inputs, None, None
    res = run_pypto(prog, src, inputs, modes)
    kinds = {m: res[m][0] for m in modes}
    if expect is not None:
        if all(k == "usererror" for k in kinds.values()):
            msg = res[modes[0]][1]
            # it should name the program's line
            flags = [] if prog.filename in msg else ["error-without-line"]
            return Outcome("expected_error", flags, [], msg.splitlines()[0][:200], message=expect), src, inputs, None, res
        bad = [m for m, k in kinds.items() if k != "usererror"]
        detail = f"expected a pypto.UserError ({expect}); got " + ", ".join(
            f"{m}: {kinds[m]}" + (f" ({res[m][1].splitlines()[0][:200]})" if kinds[m] != "ok" else "") for m in modes)
        flags = ["missing-error" if any(kinds[m] == "ok" for m in bad) else "wrong-exception"]
        return Outcome("mismatch", flags, bad, detail, message=expect), src, inputs, None, res
    exc = [m for m, k in kinds.items() if k == "exception"]
    uerr = [m for m, k in kinds.items() if k == "usererror"]
    if exc:
        detail = "\n".join(f"[{m}] {res[m][1][:1500]}" for m in exc)
        first = res[exc[0]][1].splitlines()[0] if res[exc[0]][1] else ""
        return Outcome("mismatch", ["exception"], exc, detail, message=first[:160]), src, inputs, oracle, res
    if uerr:
        msg = res[uerr[0]][1].splitlines()[0][:200]
        if len(uerr) == len(modes):
            return Outcome("unsupported", [], [], msg, message=msg), src, inputs, oracle, res
        return Outcome("mismatch", ["usererror-one-mode"], uerr, msg, message=msg), src, inputs, oracle, res
    assert oracle is not None
    out = compare(prog, oracle, res, inputs)
    out.ambiguous = amb
    return out, src, inputs, oracle, res


def signature(prog: Program, out: Outcome) -> str:
    """Groups mismatches: failing modes, what went wrong, the output dtype(s)."""
    if out.status == "mismatch" and "exception" in out.flags:
        short = out.message.split(":")[0]
        return f"{'+'.join(out.modes)}|exception:{short}|{prog.dtype}"
    return f"{'+'.join(out.modes) or 'cpu-vs-interp'}|{','.join(out.flags)}|{prog.dtype}"


def ops_of(prog: Program) -> List[str]:
    ops: List[str] = []

    def walk(body: List[Any]) -> None:
        for st in body:
            if st[0] == "op":
                ops.append(st[2])
            elif st[0] == "loop":
                walk(st[3])
    walk(prog.body)
    return ops


# --------------------------------------------------------------------------------------------
# shrinking (IR-level: drop ops, retarget outputs, drop edge data / edge scalars)
# --------------------------------------------------------------------------------------------

def _uses(body: List[Any], name: str) -> bool:
    for st in body:
        k = st[0]
        if k == "op" and any(isinstance(a, V) and a.name == name for a in st[3]):
            return True
        if k == "store" and st[2].name == name:
            return True
        if k == "return" and any(v.name == name for v in st[1]):
            return True
        if k == "loop" and _uses(st[3], name):
            return True
    return False


def _replace(body: List[Any], old: str, new: V) -> List[Any]:
    out = []
    for st in body:
        k = st[0]
        if k == "op":
            args = [new if isinstance(a, V) and a.name == old else a for a in st[3]]
            out.append(("op", st[1], st[2], args, st[4], st[5]))
        elif k == "store":
            out.append(("store", st[1], new if st[2].name == old else st[2], st[3], st[4]))
        elif k == "return":
            out.append(("return", [new if v.name == old else v for v in st[1]]))
        elif k == "loop":
            out.append(("loop", st[1], st[2], _replace(st[3], old, new)))
        else:
            out.append(st)
    return out


def _dce(prog: Program) -> Program:
    """Drop ops and binds whose value is unused, and input parameters nothing reads."""
    body = prog.body

    def sweep(b: List[Any], full: List[Any]) -> Tuple[List[Any], bool]:
        changed = False
        out = []
        for st in b:
            if st[0] in ("op", "bind") and not _uses(full, st[1].name):
                changed = True
                continue
            if st[0] == "loop":
                inner, ch = sweep(st[3], full)
                changed |= ch
                st = ("loop", st[1], st[2], inner)
            out.append(st)
        return out, changed
    while True:
        nb, ch = sweep(body, body)
        body = nb
        if not ch:
            break
    src_text = render(Program(prog.seed, prog.index, prog.dtype, prog.kind, prog.params, body))
    body_text = src_text.split("):\n", 1)[1]
    params = [p for p in prog.params if p.role == "out" or _mentions(body_text, p.name)]
    return Program(prog.seed, prog.index, prog.dtype, prog.kind, params, body, prog.note, True, prog.dtypes)


def _mentions(text: str, name: str) -> bool:
    import re
    return re.search(rf"\b{name}\b", text) is not None


def _variants(prog: Program) -> List[Program]:
    """Smaller neighbours of prog."""
    out: List[Program] = []
    P = lambda body, params=None: Program(prog.seed, prog.index, prog.dtype, prog.kind,  # noqa: E731
                                          params if params is not None else prog.params, body, prog.note, True,
                                          prog.dtypes)

    def ops_in(body: List[Any], path: Tuple[int, ...] = ()) -> List[Tuple[Tuple[int, ...], Any]]:
        res = []
        for i, st in enumerate(body):
            if st[0] == "op":
                res.append((path + (i,), st))
            elif st[0] == "loop":
                res += ops_in(st[3], path + (i,))
        return res

    def remove_at(body: List[Any], path: Tuple[int, ...]) -> List[Any]:
        if len(path) == 1:
            return body[:path[0]] + body[path[0] + 1:]
        st = body[path[0]]
        return body[:path[0]] + [("loop", st[1], st[2], remove_at(st[3], path[1:]))] + body[path[0] + 1:]

    # 1. bypass an op (its result replaced by an operand of the same shape and dtype)
    for path, st in reversed(ops_in(prog.body)):
        outv = st[1]
        for a in st[3]:
            if isinstance(a, V) and a.shape == outv.shape and a.dt == outv.dt:
                out.append(P(_replace(remove_at(prog.body, path), outv.name, a)))
                break
    # 2. retarget an output to an earlier value
    for i, st in enumerate(prog.body):
        if st[0] == "return" and len(st[1]) > 1:
            for k in range(len(st[1])):
                out.append(P(prog.body[:i] + [("return", [st[1][k]])] + prog.body[i + 1:]))
        if st[0] == "store" and st[3] == "setitem" and st[1].endswith("[:]"):
            stores = [s for s in prog.body if s[0] == "store"]
            if len(stores) > 1:
                pname = st[1][:-3]
                params = [p for p in prog.params if p.name != pname]
                out.append(P(prog.body[:i] + prog.body[i + 1:], params))
    for path, st in ops_in(prog.body):
        if len(path) != 1:
            continue
        v = st[1]
        for i, s2 in enumerate(prog.body):
            if s2[0] == "return" and len(s2[1]) == 1 and s2[1][0].name != v.name and path[0] < i:
                out.append(P(prog.body[:i] + [("return", [v])] + prog.body[i + 1:]))
            if s2[0] == "store" and s2[1].endswith("[:]") and s2[2].name != v.name and path[0] < i:
                pname = s2[1][:-3]
                params = [Param(p.name, v.shape, v.dt, "out") if p.name == pname else p for p in prog.params]
                out.append(P(prog.body[:i] + [("store", s2[1], v, s2[3], s2[4])] + prog.body[i + 1:], params))
    # 3. inputs without edge values
    for k, p in enumerate(prog.params):
        if p.role == "in" and p.edges:
            params = list(prog.params)
            params[k] = Param(p.name, p.shape, p.dt, p.role, p.style, False)
            out.append(P(prog.body, params))
    # 4. plain scalars instead of edge ones
    for path, st in ops_in(prog.body):
        for j, a in enumerate(st[3]):
            if not isinstance(a, V) and a not in (2.0, 2):
                args = list(st[3])
                args[j] = 2 if st[1].dt in INTS else 2.0
                new = ("op", st[1], st[2], args, st[4], st[5])

                def put(body: List[Any], pth: Tuple[int, ...]) -> List[Any]:
                    if len(pth) == 1:
                        return body[:pth[0]] + [new] + body[pth[0] + 1:]
                    s = body[pth[0]]
                    return body[:pth[0]] + [("loop", s[1], s[2], put(s[3], pth[1:]))] + body[pth[0] + 1:]
                out.append(P(put(prog.body, path)))
    return [_dce(v) for v in out]


def shrink(prog: Program, modes: Sequence[str], out0: Outcome, budget_s: float = 90.0) -> Tuple[Program, Outcome]:
    """Greedy: take the first smaller variant that still fails with the same flags and modes."""
    key = (tuple(out0.flags), tuple(out0.modes))
    best, best_out = prog, out0
    t0 = time.time()
    improved = True
    tried = set()
    while improved and time.time() - t0 < budget_s:
        improved = False
        for cand in _variants(best):
            src = render(cand)
            if src in tried:
                continue
            tried.add(src)
            if time.time() - t0 > budget_s:
                break
            try:
                o = evaluate(cand, modes)[0]
            except Exception:  # noqa: BLE001
                continue
            if o.status == out0.status and (tuple(o.flags), tuple(o.modes)) == key:
                best, best_out = cand, o
                improved = True
                break
    return best, best_out


# --------------------------------------------------------------------------------------------
# reports and repro scripts
# --------------------------------------------------------------------------------------------

def standalone(prog: Program, src: str, inputs: Dict[str, np.ndarray], oracle: Optional[List[OT]]) -> str:
    """A self-contained script: the program, its inputs (exact bytes) and the oracle's outputs."""
    lines = ["# Reproducer from tests/python/fuzz_programs.py "
             f"(seed {prog.seed}, program {prog.index}{', shrunk' if prog.shrunk else ''})",
             "import base64, numpy as np", src.replace("import pypto\n", "import pypto\n", 1), ""]
    lines.append("def arr(b64, dtype, shape):")
    lines.append("    return np.frombuffer(base64.b64decode(b64), dtype).reshape(shape).copy()")
    lines.append("")
    args = []
    for p in prog.params:
        if p.role == "in":
            st = to_storage(p.dt, inputs[p.name])
            lines.append(f"{p.name} = arr({base64.b64encode(st.tobytes()).decode()!r}, np.{st.dtype.name}, "
                         f"{tuple(st.shape)!r})  # {p.dt}")
        else:
            st = to_storage(p.dt, np.zeros(p.shape, np.float32 if p.dt in FLOATS else NP_INT[p.dt]))
            lines.append(f"{p.name} = np.zeros({tuple(st.shape)!r}, np.{st.dtype.name})  # {p.dt} output")
        args.append(p.name)
    lines.append("for mode in ('cpu', 'interp'):")
    lines.append("    pypto.set_runtime_options(run_mode=mode)")
    lines.append(f"    res = fuzz({', '.join(args)})")
    outs = [p.name for p in prog.params if p.role == "out"]
    if outs:
        lines.append(f"    res = ({', '.join(outs)},)")
    else:
        lines.append("    res = res if isinstance(res, tuple) else (res,)")
    lines.append("    for k, r in enumerate(res):")
    lines.append("        r = (r.astype(np.uint32) << 16).view(np.float32) if r.dtype == np.uint16 else r")
    lines.append("        print(mode, k, np.array2string(np.asarray(r), threshold=64, precision=9))")
    if oracle is not None:
        for k, o in enumerate(oracle):
            vals = " ".join(np.array2string(o.v.reshape(-1)[:16], precision=9).split())
            lines.append(f"# expected output {k} ({o.dt}), first values: {vals}")
    return "\n".join(lines) + "\n"


def describe(prog: Program, out: Outcome, src: str) -> str:
    head = (f"=== {out.status.upper()} seed {prog.seed} program {prog.index} [{prog.category}] "
            f"flags={','.join(out.flags)} modes={','.join(out.modes)}")
    regen = (f"regenerate: python tests/python/fuzz_programs.py --seed {prog.seed} --index {prog.index} "
             f"--dtypes {prog.dtypes} --show")
    data = ", ".join(f"{p.name}: {p.dt}{list(p.shape)} {p.style}{' +edges' if p.edges else ''}"
                     for p in prog.params if p.role == "in")
    return "\n".join([head, src.rstrip(), f"# inputs: {data}", out.detail, regen if not prog.shrunk else
                      "(shrunk program; inputs are those of the original with the same parameter names; "
                      "use --emit on the original or the repro script)", ""])


# --------------------------------------------------------------------------------------------
# workers and the driver
# --------------------------------------------------------------------------------------------

MARK = "@@FUZZ@@ "


def _apply_pass_options() -> None:
    """PYPTO_FUZZ_PASS_OPTIONS="k=v;k=v" -> pypto.set_pass_options (inherited by the workers)."""
    spec = os.environ.get("PYPTO_FUZZ_PASS_OPTIONS", "")
    if not spec:
        return
    import pypto
    opts: Dict[str, Any] = {}
    for kv in spec.split(";"):
        k, _, v = kv.partition("=")
        opts[k.strip()] = {"1": True, "true": True, "0": False, "false": False}.get(v.strip().lower(), v.strip())
    pypto.set_pass_options(**opts)


def run_one(seed: int, index: int, dtypes: Sequence[str], modes: Sequence[str], want_shrink: bool = False) -> Dict[str, Any]:
    t0 = time.time()
    prog = generate(seed, index, dtypes)
    try:
        out, src, inputs, oracle, _ = evaluate(prog, modes)
    except Exception:  # noqa: BLE001
        out, src = Outcome("fuzz_error", ["driver"], [], traceback.format_exc()), render(prog)
    rec: Dict[str, Any] = {"index": index, "category": prog.category, "dtype": prog.dtype, "kind": prog.kind,
                           "status": out.status, "flags": out.flags, "modes": out.modes,
                           "checked": out.checked, "uncertain": out.uncertain, "ambiguous": out.ambiguous,
                           "message": out.message, "ops": sorted(set(ops_of(prog))), "time": 0.0,
                           "coverage": out.coverage}
    if out.status in ("mismatch", "fuzz_error"):
        rec["signature"] = signature(prog, out)
        rec["report"] = describe(prog, out, src)
        if want_shrink and out.status == "mismatch":
            small, sout = shrink(prog, modes, out)
            ssrc = render(small)
            rec["shrunk"] = describe(small, sout, ssrc)
            rec["shrunk_ops"] = sorted(set(ops_of(small)))
            rec["shrunk_script"] = standalone(small, ssrc, make_inputs(small),
                                              _safe_oracle(small, ssrc))
    elif out.status in ("unsupported", "expected_error"):
        import re
        rec["signature"] = (re.sub(r"\d+", "N", out.detail[:160]) if out.status == "unsupported"
                            else out.message[:120])
    rec["time"] = time.time() - t0
    return rec


def _safe_oracle(prog: Program, src: str) -> Optional[List[OT]]:
    try:
        return oracle_eval(prog, src, make_inputs(prog))[0]
    except Exception:  # noqa: BLE001
        return None


def worker_main(args: argparse.Namespace) -> None:
    """Reads commands (JSON lines) on stdin, writes results marked with MARK on stdout."""
    dtypes = args.dtypes.split(",")
    modes = args.modes.split(",")
    import pypto  # noqa: F401 - import once, before the first program
    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        if os.environ.get("PYPTO_FUZZ_CRASH_AT") == str(cmd["index"]):  # self-test of the crash handling
            os.abort()
        rec = run_one(args.seed, int(cmd["index"]), dtypes, modes, bool(cmd.get("shrink")))
        out.write(MARK + json.dumps(rec) + "\n")
        out.flush()


class Pool:
    """`jobs` worker subprocesses; a crashed or hung worker is recorded and replaced."""

    def __init__(self, jobs: int, seed: int, dtypes: str, modes: str, timeout: float, log_dir: str):
        self.jobs, self.seed, self.dtypes, self.modes, self.timeout = jobs, seed, dtypes, modes, timeout
        self.log_dir = log_dir
        self.procs: List[Optional[subprocess.Popen]] = [None] * jobs
        self.busy: List[Optional[Tuple[Dict[str, Any], float]]] = [None] * jobs
        self.bufs: List[bytes] = [b""] * jobs
        self.logs: List[str] = [""] * jobs
        self.nstart = 0

    def _spawn(self, k: int) -> None:
        self.nstart += 1
        self.logs[k] = os.path.join(self.log_dir, f"worker{k}.{self.nstart}.log")
        err = open(self.logs[k], "wb")
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.procs[k] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", "--seed", str(self.seed), "--dtypes", self.dtypes,
             "--modes", self.modes], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
        self.bufs[k] = b""

    def run(self, cmds: List[Dict[str, Any]], on_result: Any) -> None:
        todo = list(cmds)
        todo.reverse()
        for k in range(self.jobs):
            self._spawn(k)
        while todo or any(b is not None for b in self.busy):
            for k in range(self.jobs):
                if self.busy[k] is None and todo:
                    cmd = todo.pop()
                    p = self.procs[k]
                    assert p is not None and p.stdin is not None
                    try:
                        p.stdin.write((json.dumps(cmd) + "\n").encode())
                        p.stdin.flush()
                    except BrokenPipeError:
                        pass
                    self.busy[k] = (cmd, time.time())
            fds = {self.procs[k].stdout.fileno(): k for k in range(self.jobs)  # type: ignore[union-attr]
                   if self.busy[k] is not None}
            if not fds:
                continue
            ready, _, _ = select.select(list(fds), [], [], 1.0)
            for fd in ready:
                k = fds[fd]
                chunk = os.read(fd, 1 << 20)
                if not chunk:  # the worker died
                    p = self.procs[k]
                    assert p is not None
                    rc = p.wait()
                    cmd, _ = self.busy[k]  # type: ignore[misc]
                    self.busy[k] = None
                    if self._import_failed(k) and cmd.get("retries", 0) < 5:
                        # pypto is being rebuilt under us: wait, then run the program again
                        print(f"  ... worker could not import pypto (rebuild in progress?); retrying in 30 s",
                              file=sys.stderr, flush=True)
                        time.sleep(30)
                        todo.append(dict(cmd, retries=cmd.get("retries", 0) + 1))
                    else:
                        on_result(self._dead(cmd, f"worker died (exit status {rc}) while running this program", k))
                    self._spawn(k)
                    continue
                self.bufs[k] += chunk
                while b"\n" in self.bufs[k]:
                    line, self.bufs[k] = self.bufs[k].split(b"\n", 1)
                    text = line.decode(errors="replace")
                    if text.startswith(MARK):
                        on_result(json.loads(text[len(MARK):]))
                        self.busy[k] = None
            now = time.time()
            for k in range(self.jobs):
                if self.busy[k] is not None and now - self.busy[k][1] > self.timeout:  # type: ignore[index]
                    cmd, _ = self.busy[k]  # type: ignore[misc]
                    p = self.procs[k]
                    assert p is not None
                    p.kill()
                    p.wait()
                    on_result(self._dead(cmd, f"timeout: no result after {self.timeout:.0f} s (hang?)", k, "hang"))
                    self.busy[k] = None
                    self._spawn(k)
        for p in self.procs:
            if p is not None:
                try:
                    p.stdin.close()  # type: ignore[union-attr]
                except Exception:  # noqa: BLE001
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()

    def _import_failed(self, k: int) -> bool:
        try:
            with open(self.logs[k], "rb") as f:
                tail = f.read()[-3000:].decode(errors="replace")
        except OSError:
            return False
        return "ImportError" in tail and "import pypto" in tail or "ModuleNotFoundError" in tail

    def _dead(self, cmd: Dict[str, Any], why: str, k: int, flag: str = "crash") -> Dict[str, Any]:
        idx = int(cmd["index"])
        prog = generate(self.seed, idx, self.dtypes.split(","))
        tail = ""
        try:
            with open(self.logs[k], "rb") as f:
                tail = f.read()[-1500:].decode(errors="replace")
        except OSError:
            pass
        src = render(prog)
        rep = (f"=== MISMATCH seed {self.seed} program {idx} [{prog.category}] flags={flag}\n{src}\n{why}\n"
               f"worker stderr (tail):\n{tail}\n")
        return {"index": idx, "category": prog.category, "dtype": prog.dtype, "kind": prog.kind, "status": "mismatch",
                "flags": [flag], "modes": ["?"], "checked": 0, "uncertain": 0, "ambiguous": 0, "message": why,
                "ops": sorted(set(ops_of(prog))), "signature": f"?|{flag}|{prog.dtype}", "report": rep, "time": 0.0}


def summarize(recs: List[Dict[str, Any]], seed: int, elapsed: float, max_reports: int,
              out: Any = sys.stdout) -> Tuple[int, str]:
    """Prints the per-category summary, the reports, and the final line; returns (mismatches, md)."""
    by_cat: Dict[str, Counter] = defaultdict(Counter)
    for r in recs:
        by_cat[r["category"]][r["status"]] += 1
        by_cat[r["category"]]["_checked"] += r["checked"]
        by_cat[r["category"]]["_uncertain"] += r["uncertain"]
    p = lambda s="": print(s, file=out)  # noqa: E731
    p("per category (dtype/kind): ok, mismatches, expected errors, unsupported, fuzzer errors; "
      "elements checked / uncertain")
    for cat in sorted(by_cat):
        c = by_cat[cat]
        p(f"  {cat:<18} {c['ok']:5d} ok {c['mismatch']:4d} mismatch {c['expected_error']:4d} expected-error "
          f"{c['unsupported']:4d} unsupported {c['fuzz_error']:3d} fuzz-error   {c['_checked']:8d} / {c['_uncertain']}")
    mism = [r for r in recs if r["status"] == "mismatch"]
    ferr = [r for r in recs if r["status"] == "fuzz_error"]
    exp = [r for r in recs if r["status"] == "expected_error"]
    uns = [r for r in recs if r["status"] == "unsupported"]
    amb = sum(r.get("ambiguous", 0) for r in recs)
    groups: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for r in mism + ferr:
        groups[r.get("signature", "?")].append(r)
    if groups:
        p("\nmismatches by signature (failing modes | flags | program dtype): count, programs")
        for sig, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            ops = Counter(o for r in rs for o in r["ops"])
            common = ",".join(o for o, n in ops.most_common(6))
            p(f"  {len(rs):5d}  {sig}  e.g. {', '.join(str(r['index']) for r in rs[:8])}  (ops: {common})")
    if uns:
        p("\nunsupported (pypto.UserError on every mode, no error expected):")
        for msg, n in Counter(r["signature"] for r in uns).most_common(20):
            p(f"  {n:5d}  {msg}")
    if exp:
        no_line = sum(1 for r in exp if "error-without-line" in r["flags"])
        p(f"\nexpected errors (out-of-range / non-integral integer scalars refused): {len(exp)}"
          + (f" ({no_line} without the program's line in the message)" if no_line else ""))
    shown = 0
    for sig, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        for r in rs[:2]:
            if shown >= max_reports:
                break
            p("")
            p(r["report"])
            if r.get("shrunk"):
                p("--- shrunk:")
                p(r["shrunk"])
            shown += 1
    cov: Counter = Counter()
    for r in recs:
        cov.update(r.get("coverage") or {})
    tot_checked = sum(r["checked"] for r in recs)
    tot_unc = sum(r["uncertain"] for r in recs)
    p(f"\nelements compared: {tot_checked} (of them NaN {cov['nan']}, +-inf {cov['inf']}, subnormal "
      f"{cov['subnormal']}, zero {cov['zero']}); not determined by the contract (skipped): {tot_unc}")
    n = len(recs)
    times = [r["time"] for r in recs]
    p(f"\nelapsed {elapsed:.1f} s, {n / max(elapsed, 1e-9) * 60:.0f} programs/minute "
      f"(per program: median {np.median(times) if times else 0:.2f} s); ambiguous oracle elements: {amb}")
    final = (f"fuzz: {n} programs, seed {seed}, {len(mism)} mismatches, {len(exp)} expected errors, "
             f"{len(uns)} unsupported" + (f", {len(ferr)} fuzzer errors" if ferr else ""))
    p(final)
    return len(mism) + len(ferr), final


def run_batch(seed: int, start: int, count: int, dtypes: str, modes: str, jobs: int, timeout: float = 300.0,
              shrink_n: int = 0, progress: bool = True,
              indices: Optional[Sequence[int]] = None) -> Tuple[List[Dict[str, Any]], float]:
    """Runs programs [start, start + count) of `seed` (or those in `indices`); returns (records
    sorted by index, seconds)."""
    import tempfile
    t0 = time.time()
    recs: List[Dict[str, Any]] = []
    log_dir = tempfile.mkdtemp(prefix="pypto-fuzz-")
    last = [time.time()]

    def got(rec: Dict[str, Any]) -> None:
        recs.append(rec)
        if progress and (time.time() - last[0] > 10 or rec["status"] in ("mismatch", "fuzz_error")):
            last[0] = time.time()
            nm = sum(1 for r in recs if r["status"] in ("mismatch", "fuzz_error"))
            print(f"  ... {len(recs)}/{count} done, {nm} mismatches, {time.time() - t0:.0f} s", file=sys.stderr,
                  flush=True)
    cmds = [{"index": i} for i in (indices if indices is not None else range(start, start + count))]
    count = len(cmds)
    if jobs <= 0:  # in-process (no protection against crashes)
        for c in cmds:
            got(run_one(seed, c["index"], dtypes.split(","), modes.split(",")))
    else:
        Pool(jobs, seed, dtypes, modes, timeout, log_dir).run(cmds, got)
    recs.sort(key=lambda r: r["index"])
    if shrink_n > 0:
        # one (the first) per signature, up to shrink_n
        seen: Dict[str, int] = {}
        picks = []
        for r in recs:
            if r["status"] == "mismatch" and r["flags"] not in (["crash"], ["hang"]):
                s = r["signature"]
                if s not in seen and len(picks) < shrink_n:
                    seen[s] = r["index"]
                    picks.append(r["index"])
        if picks:
            if progress:
                print(f"  shrinking {len(picks)} mismatches ...", file=sys.stderr, flush=True)
            shr: Dict[int, Dict[str, Any]] = {}

            def got2(rec: Dict[str, Any]) -> None:
                shr[rec["index"]] = rec
            cmds2 = [{"index": i, "shrink": True} for i in picks]
            if jobs <= 0:
                for c in cmds2:
                    got2(run_one(seed, c["index"], dtypes.split(","), modes.split(","), True))
            else:
                Pool(max(jobs, 1), seed, dtypes, modes, timeout + 200, log_dir).run(cmds2, got2)
            for r in recs:
                s = shr.get(r["index"])
                if s and s.get("shrunk"):
                    r["shrunk"] = s["shrunk"]
                    r["shrunk_ops"] = s.get("shrunk_ops")
                    r["shrunk_script"] = s.get("shrunk_script")
    return recs, time.time() - t0


def write_markdown(path: str, recs: List[Dict[str, Any]], final: str, argv: List[str]) -> None:
    groups: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for r in recs:
        if r["status"] in ("mismatch", "fuzz_error"):
            groups[r.get("signature", "?")].append(r)
    with open(path, "w") as f:
        f.write(f"# fuzz run\n\n`{' '.join(argv)}`\n\n{final}\n\n")
        for sig, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            f.write(f"## {sig} ({len(rs)} programs: {', '.join(str(r['index']) for r in rs[:30])})\n\n")
            r = next((x for x in rs if x.get("shrunk")), rs[0])
            f.write("```\n" + r["report"] + "```\n\n")
            if r.get("shrunk"):
                f.write("shrunk:\n\n```\n" + r["shrunk"] + "```\n\n")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first program index")
    ap.add_argument("--dtypes", default=",".join(ALL_DTYPES))
    ap.add_argument("--modes", default="cpu,interp")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (0: run in this process)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per program before it counts as a hang")
    ap.add_argument("--shrink", type=int, default=0, help="shrink up to N mismatches (one per signature)")
    ap.add_argument("--max-reports", type=int, default=12)
    ap.add_argument("--report", default="", help="also write the grouped mismatches as markdown here")
    ap.add_argument("--json", default="", help="write all records as JSON here")
    ap.add_argument("--indices", default="", help="run these programs (comma separated) instead of --start/--count")
    ap.add_argument("--index", type=int, default=None, help="with --show / --emit: the program")
    ap.add_argument("--show", action="store_true", help="print program --index, its inputs and results")
    ap.add_argument("--emit", action="store_true", help="print a standalone repro script of program --index")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--pass-option", action="append", default=[], metavar="KEY=VALUE",
                    help="compile with pypto.set_pass_options(KEY=VALUE), e.g. reciprocal_division=1 (the "
                         "documented fast path: expect mismatches for subnormal divisors)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pass_option:
        os.environ["PYPTO_FUZZ_PASS_OPTIONS"] = ";".join(args.pass_option)
    _apply_pass_options()
    bad = [d for d in args.dtypes.split(",") if d not in ALL_DTYPES]
    if bad:
        ap.error(f"unknown dtypes {bad}; known: {','.join(ALL_DTYPES)}")
    if args.worker:
        worker_main(args)
        return 0
    dtypes = args.dtypes.split(",")
    modes = args.modes.split(",")
    if args.show or args.emit:
        if args.index is None:
            ap.error("--show/--emit need --index")
        prog = generate(args.seed, args.index, dtypes)
        src = render(prog)
        inputs = make_inputs(prog)
        try:
            oracle: Optional[List[OT]] = oracle_eval(prog, src, inputs)[0]
        except Exception as e:  # noqa: BLE001
            oracle = None
            print(f"# oracle: {type(e).__name__}: {e}", file=sys.stderr)
        if args.emit:
            print(standalone(prog, src, inputs, oracle))
            return 0
        out, src, inputs, oracle2, res = evaluate(prog, modes)
        print(describe(prog, out, src))
        with np.printoptions(threshold=100000, precision=9, linewidth=150):
            for name, a in inputs.items():
                print(f"{name} =\n{a!r}")
            for k, o in enumerate(oracle or []):
                print(f"expected output {k} ({o.dt}) =\n{o.v!r}\ntolerance =\n{o.e!r}")
            for m, st in (res or {}).items():
                if st[0] == "ok":
                    for k, (dt, a) in enumerate(st[1]):
                        dt = oracle[k].dt if oracle and k < len(oracle) else dt
                        print(f"{m} output {k} =\n{from_storage(dt, a) if dt else a!r}")
                else:
                    print(f"{m}: {st[0]}: {st[1]}")
        return 1 if out.status == "mismatch" else 0
    indices = [int(x) for x in args.indices.split(",") if x.strip()] if args.indices else None
    recs, elapsed = run_batch(args.seed, args.start, args.count, args.dtypes, args.modes, args.jobs, args.timeout,
                              args.shrink, progress=not args.quiet, indices=indices)
    nbad, final = summarize(recs, args.seed, elapsed, args.max_reports)
    if args.report:
        write_markdown(args.report, recs, final, ["python", "tests/python/fuzz_programs.py"] + (argv or sys.argv[1:]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(recs, f)
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
