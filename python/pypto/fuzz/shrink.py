"""Shrinking a mismatching program at the IR level: bypass ops, retarget outputs, drop edge data
and edge scalars, keeping the first smaller variant that still fails the same way."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .common import INTS
from .program import Param, Program, V, render


SCALAR_OPERAND_OPS = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "hypot", "copysign",
                      "floor_div", "remainder", "fmod", "lrelu", "eq", "ne", "lt", "le", "gt", "ge", "greater", "where",
                      "clip", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}


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
    src_text = render(replace(prog, body=body))
    body_text = src_text.split("):\n", 1)[1]
    params = [p for p in prog.params if p.role == "out" or _mentions(body_text, p.name)]
    return replace(prog, params=params, body=body, shrunk=True)


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{name}\b", text) is not None


def _variants(prog: Program) -> List[Program]:
    """Smaller neighbours of prog."""
    out: List[Program] = []

    def P(body: List[Any], params: Optional[List[Param]] = None) -> Program:  # noqa: N802
        return replace(prog, body=body, params=params if params is not None else prog.params, shrunk=True)

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
                params = [replace(p, shape=v.shape, dt=v.dt, dyn=bool(p.dyn and v.shape and v.shape[0] == p.shape[0]))
                          if p.name == pname else p for p in prog.params]
                out.append(P(prog.body[:i] + [("store", s2[1], v, s2[3], s2[4])] + prog.body[i + 1:], params))
    # 3. inputs without edge values
    for k, p in enumerate(prog.params):
        if p.role == "in" and p.edges:
            params = list(prog.params)
            params[k] = replace(p, edges=False)
            out.append(P(prog.body, params))
    # 4. plain scalars instead of edge ones (operands only: not dims, k or flags)
    for path, st in ops_in(prog.body):
        for j, a in enumerate(st[3]):
            if st[2] in SCALAR_OPERAND_OPS and isinstance(a, (int, float)) and not isinstance(a, bool) \
                    and a not in (2.0, 2):
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


def shrink(prog: Program, modes: Sequence[str], out0: Any, evaluate: Callable[..., Any],
           budget_s: float = 90.0) -> Tuple[Program, Any]:
    """Greedy: take the first smaller variant that still fails with the same flags and modes
    (`evaluate`: run.evaluate)."""
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
