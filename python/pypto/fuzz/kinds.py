"""The kinds of program the fuzzer makes (Gen's program shapes): an op chain, several outputs,
N-D tiles, a reduction with tails, topk, and runtime loops (over rows, nested, siblings, two
phases). Gen (generate.py) supplies the steps a chain is made of; kinds_new.py the FP8 kind and
the 0-d and dynamic-dim variants of some of these."""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, Optional, Tuple

from .common import BINARY, BINARY_I, DT_WEIGHTS, FLOATS, INTS, wchoice as _wchoice
from .program import BIN_SYM, Param, Program, V

SHAPES_2D = [(5, 33), (8, 64), (13, 20), (3, 100), (4, 7), (1, 37), (8, 16), (6, 48), (13, 100), (7, 1),
             (16, 9), (2, 130)]
TILE_R = [1, 2, 4, 8, 16]
TILE_C = [4, 8, 16, 32, 64, 128]
SHAPES_ND = [((2, 3, 20), (1, 2, 8)), ((3, 5, 9), (2, 2, 4)), ((37,), (16,)), ((100,), (32,)), ((4, 2, 33), (4, 1, 16))]
KIND_WEIGHTS = [("chain", 40), ("multi_out", 6), ("tail_reduce", 7), ("nd", 6), ("loop_rows", 14), ("nested", 12),
                ("siblings", 9), ("two_phase", 6), ("topk", 5), ("retile", 8)]


def _has_0d(body: List[Any]) -> bool:
    for st in body:
        if st[0] == "op" and st[1].shape == ():
            return True
        if st[0] == "loop" and _has_0d(st[3]):
            return True
    return False


class ProgramKinds:
    """Program shapes; mixed into Gen, whose steps (chain, emit, mask, ...) they call."""

    r: random.Random
    x: random.Random
    seed: int
    index: int
    dtypes: List[str]
    n: int
    dyn_rows: int
    dyn_loop: bool
    zerod: bool
    expect: str
    expect_pattern: str
    # Gen's and NewKinds' methods used here
    emit: Callable[..., V]
    fresh: Callable[..., V]
    chain: Callable[..., V]
    mask: Callable[..., V]
    scalar: Callable[..., Any]
    form: Callable[..., str]
    new_features: Callable[..., Tuple[str, str]]
    dyn_start: Callable[..., None]
    dyn_fix: Callable[..., Tuple[str, int]]
    over_dyn: Callable[..., bool]
    dyn_sizes: Callable[..., Tuple[int, ...]]
    dyn_text: Callable[..., str]
    zerod_input: Callable[..., None]
    zerod_output: Callable[..., Optional[V]]

    def data_style(self, dt: str) -> Tuple[str, bool]:
        r = self.r
        if dt in INTS:
            style = r.choice(["int_small", "int_small", "int_wide", "int_tiny"])
        else:
            style = _wchoice(r, [("normal", 5), ("positive", 2), ("wide", 2), ("small", 1), ("unit", 1), ("ties", 1)])
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
        old = [d for d in self.dtypes if d in DT_WEIGHTS]
        dt = _wchoice(r, [(d, DT_WEIGHTS[d]) for d in old]) if old else ""
        kind = _wchoice(r, KIND_WEIGHTS)
        dt, kind = self.new_features(dt, kind)
        fn = getattr(self, "k_" + kind)
        params, body = fn(dt)
        prog = Program(self.seed, self.index, dt, kind, params, body)
        if self.dyn_rows:
            prog.kind += "+dyn"
            prog.dyn_sizes = self.dyn_sizes(params, body)
        if (self.zerod and any(p.shape == () for p in params)) or _has_0d(body):
            prog.kind += "+0d"
        prog.expect, prog.expect_pattern = self.expect, self.expect_pattern
        return prog

    def _inputs2(self, dt: str, R: int, C: int) -> Tuple[List[Param], Dict[str, str]]:
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
        allow = {"reduce": r.random() < 0.8, "composite": r.random() < 0.7, "cast": r.random() < 0.6,
                 "permute": r.random() < 0.5, "topk": r.random() < 0.5}
        if self.dyn_rows:  # (no permutations: dim 0 stays the dynamic one)
            allow["permute"] = False
        return allow

    def _finish_out(self, body: List[Any], params: List[Param], vals: List[V], ret: bool) -> None:
        if ret:
            body.append(("return", list(vals)))
        else:
            dyn = self.dyn_rows
            for k, v in enumerate(vals):
                params.append(Param(f"out{k}", v.shape, v.dt, "out", dyn=bool(dyn and v.shape and v.shape[0] == dyn)))
                body.append(("store", f"out{k}[...]" if v.shape == () else f"out{k}[:]", v, "setitem", ""))

    def k_chain(self, dt: str, multi: bool = False) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice(SHAPES_2D)
        params, _ = self._inputs2(dt, R, C)
        self.zerod_input(dt, params)
        self.dyn_start(R, params)
        tile = self.tile2((R, C))
        body: List[Any] = [("tile", tile)]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        start = pool[0] if r.random() < 0.8 else r.choice(pool)
        cur = self.chain(body, pool, start, r.randint(2, 6), (R, C), self._allow(), final_main=r.random() < 0.5)
        if r.random() < 0.08:  # a mask as the result
            cur = self.mask(body, pool, cur)
        outs = [cur]
        z = self.zerod_output(body, pool, cur, tile[1]) if self.x.random() < 0.5 else None
        if z is not None:
            outs.append(z)
        if multi:
            extra = [v for v in pool if v is not cur and not v.name.startswith(("x", "r", "g", "s"))]
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

    def k_retile(self, dt: str) -> Tuple[List[Param], List[Any]]:
        """Two phases under different tile shapes, the second reading values of the first (so one
        kernel stores what it also uses further, and the next loads it): a 16-bit input widened
        to fp32 and reduced in the first phase, as the quantization prologs of the model files do
        (a widened tile stored in place once went unwritten)."""
        r = self.r
        R, C = r.choice(SHAPES_2D)
        params, _ = self._inputs2(dt, R, C)
        # Whole rows in a tile, mostly: the reduction then runs in the row loop that widens.
        first = (r.choice([t for t in TILE_R if t <= R] or [1]), C) if r.random() < 0.6 else self.tile2((R, C))
        body: List[Any] = [("tile", first)]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        start = pool[0]
        if dt in ("fp16", "bf16") and r.random() < 0.9:
            start = self.emit(body, pool, start, "cast", [start], {"to": "fp32"}, "fn", start.shape, "fp32")
        allow = self._allow()
        cur1 = self.chain(body, pool, start, r.randint(0, 2), (R, C), allow)
        outs: List[V] = []
        if r.random() < 0.7 and cur1.dt in FLOATS:
            red = self.fresh((R, 1), cur1.dt)
            body.append(("op", red, r.choice(["sum", "amax", "amin"]), [cur1], {"dim": -1, "keepdim": True}, "pos"))
            pool.append(red)
            outs.append(red)
        body.append(("tile", self.tile2((R, C))))  # what follows runs in other kernels
        cur2 = self.chain(body, pool, start if r.random() < 0.6 else cur1, r.randint(1, 3), (R, C), allow)
        outs.insert(0, cur2)
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
        self.zerod_input(dt, params)
        body: List[Any] = [("tile", tile)]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        allow = {"reduce": r.random() < 0.7, "composite": False, "cast": r.random() < 0.5,
                 "permute": r.random() < 0.6, "topk": r.random() < 0.4}
        cur = self.chain(body, pool, pool[0], r.randint(2, 5), shape, allow, final_main=r.random() < 0.6)
        if r.random() < 0.08:
            cur = self.mask(body, pool, cur)
        z = self.zerod_output(body, pool, cur, tile[-1]) if self.x.random() < 0.5 else None
        self._finish_out(body, params, [cur] if z is None else [cur, z], ret=r.random() < 0.5)
        return params, body

    def k_tail_reduce(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice(SHAPES_2D)
        params, _ = self._inputs2(dt, R, C)
        self.zerod_input(dt, params)
        self.dyn_start(R, params)
        tr, tc = self.tile2((R, C))
        body: List[Any] = [("tile", (tr, tc))]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        cur = self.chain(body, pool, pool[0], r.randint(1, 4), (R, C), self._allow(), final_main=True)
        isf = cur.dt in FLOATS
        op = r.choice(["amax", "amin", "sum", "mean", "prod", "argmax", "argmin", "var"] if isf else
                      ["amax", "amin", "sum", "prod", "argmax", "argmin"])
        dim = r.choice([-1, 0, 1])
        if self.dyn_rows:
            op, dim = self.dyn_fix(op, V("", (R, C), cur.dt), dim)
        keep = (C,) if dim == 0 else (R,)
        red_dt = "int32" if op in ("argmax", "argmin") else cur.dt
        red = self.fresh(keep, red_dt)
        if op in ("amax", "amin", "sum", "mean"):
            body.append(("op", red, op, [cur], {"dim": dim, "keepdim": False}, r.choice(["pos", "kw"])))
        else:
            kw = {"keepdim": False} if r.random() < 0.5 else {}  # False is the default
            body.append(("op", red, op, [cur, dim], kw, self.form(op)))
        cur = red
        isf = cur.dt in FLOATS
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
        z = self.zerod_output(body, [], cur, tc if dim == 0 else tr) if self.x.random() < 0.6 else None
        self._finish_out(body, params, [cur] if z is None else [z] if self.x.random() < 0.5 else [cur, z], ret=ret)
        return params, body

    def k_topk(self, dt: str) -> Tuple[List[Param], List[Any]]:
        """Routing: scores (maybe a softmax), their top k, the values at those indices."""
        r = self.r
        R, C = r.choice([s for s in SHAPES_2D if s[1] > 1])
        params, _ = self._inputs2(dt, R, C)
        self.dyn_start(R, params)
        body: List[Any] = [("tile", self.tile2((R, C)))]
        pool = [V(p.name, p.shape, p.dt) for p in params]
        allow = {"reduce": False, "composite": True, "cast": False, "permute": False, "topk": False}
        cur = self.chain(body, pool, pool[0], r.randint(0, 2), (R, C), allow, final_main=True)
        if cur.dt in FLOATS and r.random() < 0.5:
            cur = self.emit(body, pool, cur, "softmax", [cur], {"dim": -1}, "fn", cur.shape, cur.dt)
        k = r.randint(1, min(C, 8))
        largest: List[Any] = [] if r.random() < 0.8 else [-1, False]
        vals = self.emit(body, pool, cur, "topk", [cur, k] + largest, {"_part": 0}, "fn", (R, k), cur.dt)
        idx = self.emit(body, pool, cur, "topk", [cur, k] + largest, {"_part": 1}, "fn", (R, k), "int32")
        srcs = [v for v in pool if v.shape == (R, C) and v.dt == cur.dt]
        g = self.emit(body, pool, cur, "gather", [r.choice(srcs), 1, idx], {}, "fn", (R, k), cur.dt)
        out = self.emit(body, pool, g, r.choice(["mul", "add", "sub"]), [vals, g], {}, "op", (R, k), cur.dt)
        if out.dt in FLOATS and r.random() < 0.5:  # renormalize the selected weights
            s = self.emit(body, pool, out, "sum", [out], {"dim": -1, "keepdim": True}, "pos", (R, 1), out.dt)
            out = self.emit(body, pool, out, "div", [out, s], {}, "op", (R, k), out.dt)
        outs = [out, idx] if r.random() < 0.4 else [out]
        self._finish_out(body, params, outs, ret=r.random() < 0.5)
        return params, body

    # --- loops ----------------------------------------------------------------------------------
    def _loop_args(self, n_or_range: Tuple[int, Any, int], style: str, idx_name: str, lname: str = "") -> str:
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
        cur = self.chain(body, pool, pool[0], n_ops, bshape, allow, want_dt=want_dt, final_main=True)
        return body, cur

    def _out_target(self, dt_out: str, R: int, C: int, params: List[Param], body: List[Any], ret: bool) -> str:
        if ret:
            body.append(("tensor", V("out", (R, C), dt_out), self.dyn_text((R, C))))
            return "out"
        params.append(Param("out0", (R, C), dt_out, "out", dyn=bool(self.dyn_rows)))
        return "out0"

    def _store(self, target: str, v: V, rows: str, cols: str, offs: str) -> Tuple:
        if self.r.random() < 0.35:
            return ("store", "", v, "assemble", f"[{offs}], {target}")
        return ("store", f"{target}[{rows}, {cols}]", v, "setitem", "")

    def k_loop_rows(self, dt: str) -> Tuple[List[Param], List[Any]]:
        r = self.r
        R, C = r.choice([s for s in SHAPES_2D if s[0] > 1])
        params, roles = self._inputs2(dt, R, C)
        self.dyn_start(R, params)
        b = r.choice([d for d in (1, 2, 4) if R % d == 0])
        tc = r.choice(TILE_C)
        idx = r.choice(["", "", "r", "i", "row"])
        lname = r.choice(["", "", "L0"])
        rng_: Tuple[int, Any, int]
        if self.dyn_rows:  # one row per iteration, as many as the call has
            b = 1
            rng_ = (0, "x0.shape[0]", 1)
            rows = "i:i + 1"
            offs = "i, 0"
        elif b == 1 or r.random() < 0.5:
            rng_ = (0, R, b)
            rows = f"i:i + {b}"
            offs = "i, 0"
        else:
            rng_ = (0, R // b, 1)
            rows = f"i * {b}:(i + 1) * {b}"
            offs = f"i * {b}, 0"
        self.dyn_loop = bool(self.dyn_rows)
        lbody, cur = self._loop_body(dt, params, roles, rows, ":", (b, C), r.randint(2, 5), self._allow(), None)
        self.dyn_loop = False
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
