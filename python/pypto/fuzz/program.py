"""A generated program: its IR (statements over named values), the Python source it renders to,
and its inputs (deterministic in the seed, the program index and the parameter)."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Tuple

import numpy as np

from .common import EDGE_NEW, ALL_DTYPES, IBOUNDS, INF, INTS, NAN, NP_INT, OLD_DTYPES, PDT, FMAX, UINTS, round_to


@dataclass
class V:
    name: str
    shape: Tuple[int, ...]
    dt: str
    perm: Tuple[int, ...] = ()  # dim i is dim perm[i] of the chain's main shape (empty: not permuted)


@dataclass
class Param:
    name: str
    shape: Tuple[int, ...]
    dt: str
    role: str  # "in" | "out"
    style: str = "normal"
    edges: bool = False
    dyn: bool = False  # dim 0 is pypto.DYNAMIC (its size comes from the call)


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
    dyn_sizes: Tuple[int, ...] = ()  # the dynamic dim's sizes in the calls after the first
    expect: str = ""  # the UserError the program must raise (decided by the generator), if any
    expect_pattern: str = ""  # what its message must say

    @property
    def filename(self) -> str:
        return f"fuzz_s{self.seed}_i{self.index}{'_min' if self.shrunk else ''}.py"

    @property
    def category(self) -> str:
        return f"{self.dtype}/{self.kind}"


def lit(s: Any) -> str:
    if isinstance(s, bool) or s is None:
        return repr(s)
    if isinstance(s, (list, tuple)):
        return "[" + ", ".join(lit(x) for x in s) + "]"
    if isinstance(s, float):
        if math.isnan(s):
            return 'float("nan")'
        if math.isinf(s):
            return 'float("inf")' if s > 0 else 'float("-inf")'
        return repr(s)
    return repr(int(s))


BIN_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floor_div": "//", "remainder": "%", "pow": "**",
           "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
           "logical_and": "&", "logical_or": "|", "logical_xor": "^",
           "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "bitwise_left_shift": "<<",
           "bitwise_right_shift": ">>"}
OLD_REDUCE = ("amax", "amin", "sum", "mean")


def render_expr(op: str, args: List[Any], kw: Dict[str, Any], form: str) -> str:
    """One op as Python text. form: "op" (an operator), "fn" (pypto.op(...)), "pos" / "kw" (how a
    reduction passes dim), "method" (x.op(...)). Keys of kw starting with "_" are not arguments."""
    def a(x: Any) -> str:
        return x.name if isinstance(x, V) else lit(x)
    if op in BIN_SYM and form == "op":
        left = a(args[0])
        if op == "pow" and left.startswith("-"):  # -2.0 ** x is -(2.0 ** x)
            left = f"({left})"
        return f"{left} {BIN_SYM[op]} {a(args[1])}"
    if op == "neg" and form == "op":
        return f"-{a(args[0])}"
    if op == "abs" and form == "op":
        return f"abs({a(args[0])})"
    if op in ("logical_not", "bitwise_not") and form == "op":
        return f"~{a(args[0])}"
    if op in OLD_REDUCE:
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
    kws = [f"{k}={a(v)}" for k, v in kw.items() if not k.startswith("_")]
    suffix = f"[{kw['_part']}]" if "_part" in kw else ""
    if form == "method":
        return f"{a(args[0])}.{op}({', '.join([a(x) for x in args[1:]] + kws)}){suffix}"
    return f"pypto.{op}({', '.join([a(x) for x in args] + kws)}){suffix}"


# Statements: ("tile", dims) ("op", V, op, args, kw, form) ("bind", V, text) ("tensor", V)
# ("store", target_text, V, form, assemble_text) ("loop", var, args_text, body) ("return", [V])

def _shape_text(p: Param) -> str:
    if p.dyn:
        dims = ["pypto.DYNAMIC"] + [str(d) for d in p.shape[1:]]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    return repr(tuple(p.shape))


def render(prog: Program) -> str:
    sig = ", ".join(f"{p.name}: pypto.Tensor({_shape_text(p)}, pypto.{PDT[p.dt]})" for p in prog.params)
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
            elif k == "tensor":  # ("tensor", V[, shape text])
                v = st[1]
                shape = st[2] if len(st) > 2 else repr(tuple(v.shape))
                lines.append(f"{ind}{v.name} = pypto.tensor({shape}, pypto.{PDT[v.dt]})")
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
# inputs
# --------------------------------------------------------------------------------------------

EDGE = {
    "fp32": [NAN, INF, -INF, 0.0, -0.0, 1e-40, -3e-42, 1.4e-45, FMAX["fp32"], -FMAX["fp32"], 1.1754944e-38,
             1e30, -1e-30, 1.0, -1.0, 0.5],
    "fp16": [NAN, INF, -INF, 0.0, -0.0, 65504.0, -65504.0, 6.1035156e-05, 5.9604645e-08, -1e-5, 1e4, 1.0, -1.0],
    "bf16": [NAN, INF, -INF, 0.0, -0.0, FMAX["bf16"], -FMAX["bf16"], 1.1754944e-38, 9.2e-41, 1e30, -1e-40, 1.0,
             -1.0],
    "int32": [-2 ** 31, 2 ** 31 - 1, 0, -1, 1, 2 ** 24 + 1, -(2 ** 24 + 1)],
    "int8": [-128, 127, 0, -1, 1],
}


def _make_new_input(g: np.random.Generator, p: Param, shape: Tuple[int, ...], n: int) -> np.ndarray:
    """make_input for the dtypes added after the first fuzzer: unsigned integers over their whole
    range (uint64 above 2^63 too), and FP8 values (as float32) with its edges."""
    a: np.ndarray
    if p.dt in UINTS:
        hi = IBOUNDS[p.dt][1]
        top = {"int_wide": hi, "int_tiny": 6}.get(p.style, min(hi, 1000))
        a = g.integers(0, top, size=n, endpoint=True, dtype=np.uint64).astype(NP_INT[p.dt])
    else:
        a = g.standard_normal(n)
        wide = 10.0 ** g.uniform(-3, 3, n)
        scale: Any = {"wide": wide, "small": 1e-2, "positive": 1.0}.get(p.style, g.choice([1.0, 3.0, 30.0]))
        a = a * scale
        if p.style == "positive":
            a = np.abs(a) + 0.01
    if p.edges and n > 0:
        k = int(min(n, 1 + g.geometric(0.5) + n // 40 * int(g.random() < 0.3)))
        vals = EDGE_NEW[p.dt]
        for q in g.choice(n, size=k, replace=False):
            a[q] = vals[int(g.integers(0, len(vals)))]
    if p.dt in UINTS:
        return a.reshape(shape)
    with np.errstate(all="ignore"):
        return round_to(p.dt, np.asarray(a, np.float32)).reshape(shape)


def make_input(seed: int, index: int, p: Param) -> np.ndarray:
    """Oracle values (float32 for floats, ints) of an input parameter: deterministic in
    (seed, index, parameter name, shape, dtype, style, edges)."""
    key = zlib.crc32(repr((p.name, tuple(p.shape), p.dt, p.style, p.edges)).encode())
    g = np.random.default_rng([seed, index, key])
    if p.dt not in OLD_DTYPES:
        return _make_new_input(g, p, tuple(p.shape), int(np.prod(p.shape)))
    shape = tuple(p.shape)
    n = int(np.prod(shape))
    if p.dt in INTS:
        lo, hi = IBOUNDS[p.dt]
        if p.style == "int_wide":
            a = g.integers(lo, hi, size=n, endpoint=True)
        elif p.style == "int_tiny":  # exponents, divisors near 0, many ties
            a = g.integers(max(lo, -4), min(hi, 6), size=n, endpoint=True)
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
        elif p.style == "unit":  # inside the domain of asin / atanh, many near +-1
            a = np.tanh(a * 2.0)
        elif p.style == "ties":  # few distinct values: ties for argmax / topk, exact halves for round
            a = np.round(a * 2.0) / 2.0
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


def call_params(prog: Program, call: int = 0) -> List[Param]:
    """The parameters with the shapes of call `call` (0: the generated ones; then the dynamic dim
    takes prog.dyn_sizes[call - 1])."""
    if call == 0:
        return list(prog.params)
    n = prog.dyn_sizes[call - 1]
    return [replace(p, shape=(n,) + tuple(p.shape[1:])) if p.dyn else p for p in prog.params]


def make_inputs(prog: Program, call: int = 0) -> Dict[str, np.ndarray]:
    return {p.name: make_input(prog.seed, prog.index, p) for p in call_params(prog, call) if p.role == "in"}

