"""The newer features of generated programs (a mixin of Gen, beside ProgramKinds): which of them a
program uses, bitwise steps for integers, FP8 round trips, the FP8 program kind, 0-d values, and
dynamic dims with the gates that keep a program to what pypto supports.

Every decision here is drawn from Gen's second random stream `x` (see generate.Gen), so a program
that uses none of these features is the first fuzzer's program for its (seed, index).

* Unsigned dtypes (uint8 .. uint64) are program dtypes like int32: every integer step applies,
  with scalars the dtype holds (a negative one is an expected UserError).
* FP8 (fp8e4m3 / fp8e5m2 / hf8) is storage: a program of that dtype (kind "fp8") casts a float value into
  it and back, moves the bytes (transpose), takes FP8 inputs and gives FP8 outputs; a float chain
  of a run with FP8 enabled may round-trip through it (fp8_roundtrip). An op pypto refuses on it is
  made now and then, for the clear UserError it must raise.
* 0-d: a "+0d" program has a 0-d input that broadcasts into the chain (or starts it), and may
  reduce a value to a 0-d output (a 1-D value reduced with keepdim=False).
* Dynamic dims: a "+dyn" program's parameters have pypto.DYNAMIC for dim 0, the kernel is compiled
  once and called again with other sizes (Program.dyn_sizes); a reduction pypto refuses over a
  dynamic dim (mean, var, argmax, argmin, cumsum, topk) is moved to a static dim or kept as the
  program's expected UserError."""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, Optional, Tuple

from .common import (BITS, FLOATS, FP8S, IBOUNDS, NEW_DT_WEIGHTS, P_NEW_DTYPE, SIGNED, have_torch,
                     wchoice as _wchoice)
from .common import EDGE_NEW, bcast as _bcast  # noqa: F401 - EDGE_NEW: its old place
from .program import Param, V

# What pypto refuses over a dynamic dim (a reduction that needs the whole dim in one tile), with
# the words its UserError must say. (mean and var divide by the size the tile has when it runs.)
DYN_REFUSED = {"argmax": "dynamic size", "argmin": "dynamic size", "cumsum": "dynamic size", "topk": "dynamic size"}
DYN_KINDS = ("chain", "multi_out", "tail_reduce", "topk", "loop_rows")
ZEROD_KINDS = ("chain", "multi_out", "tail_reduce", "nd")
FP8_SHAPES = [(5, 33), (8, 64), (13, 20), (4, 7), (1, 37), (16, 9), (3, 100)]


class NewKinds:
    """Newer program features; mixed into Gen, whose steps (chain, emit, fresh, ...) they call."""

    r: random.Random
    x: random.Random
    dtypes: List[str]
    fp8: List[str]
    dyn_rows: int
    dyn_reduced: bool
    expect: str
    expect_pattern: str
    zerod: bool = False
    want_dyn: bool = False
    dyn_loop: bool = False  # generating a loop body over the dynamic dim: every dim 0 may be dynamic
    # Gen's and ProgramKinds' methods used here
    emit: Callable[..., V]
    fresh: Callable[..., V]
    chain: Callable[..., V]
    param: Callable[..., Param]
    tile2: Callable[..., Tuple[int, int]]
    _finish_out: Callable[..., None]

    # --- which features ---------------------------------------------------------------------------
    def new_features(self, dt: str, kind: str) -> Tuple[str, str]:
        """(dtype, kind) after the newer features are drawn: a newer dtype (always, when only newer
        ones are enabled), the FP8 kind for an FP8 dtype, else maybe dynamic dims or 0-d values."""
        x = self.x
        new = [d for d in self.dtypes if d in NEW_DT_WEIGHTS]
        if new and (not dt or x.random() < P_NEW_DTYPE):
            dt = _wchoice(x, [(d, NEW_DT_WEIGHTS[d]) for d in new])
        if dt in FP8S:
            return dt, "fp8"
        y = x.random()
        if kind in DYN_KINDS and y < 0.14:
            self.want_dyn = True
        elif kind in ZEROD_KINDS and 0.14 <= y < 0.30:
            self.zerod = True
        return dt, kind

    # --- dynamic dims -------------------------------------------------------------------------------
    def dyn_start(self, R: int, params: List[Param]) -> None:
        """Dim 0 of size R becomes dynamic (when this program wants it and R > 1): every parameter
        with R rows is annotated pypto.DYNAMIC there. No permutations in such a program, so a
        value has the dynamic dim exactly when its dim 0 has R rows."""
        if not self.want_dyn or R < 2:
            return
        self.dyn_rows = R
        for p in params:
            if p.shape and p.shape[0] == R:
                p.dyn = True

    def over_dyn(self, v: V, dim: int) -> bool:
        """Whether dim of v may be a dynamic extent: dim 0 with the dynamic size, or in a loop body
        over the dynamic dim any dim 0 (x0[i:i + 1] has the extent min(1, max(n - i, 0)))."""
        nd = len(v.shape)
        if not self.dyn_rows or nd == 0 or dim % nd != 0:
            return False
        return self.dyn_loop or v.shape[0] == self.dyn_rows

    def dyn_fix(self, op: str, v: V, dim: int) -> Tuple[str, int]:
        """(op, dim) of a reduction-like op over v: over the dynamic dim, an op pypto refuses there
        moves to the last dim (mostly) or stays as the program's expected UserError; one it allows
        marks the dim reduced (its size must then not be 0)."""
        if not self.over_dyn(v, dim):
            return op, dim
        if op in DYN_REFUSED:
            if len(v.shape) >= 2 and (self.dyn_loop or self.x.random() < 0.85):  # (in a loop: maybe static)
                return op, -1
            if not self.expect:
                self.expect = f"pypto.{op} over the dynamic dim 0 (size {self.dyn_rows} when generated)"
                self.expect_pattern = DYN_REFUSED[op]
            return op, dim
        self.dyn_reduced = True
        return op, dim

    def dyn_sizes(self, params: List[Param], body: List[Any]) -> Tuple[int, ...]:
        """The sizes of the dynamic dim for the calls after the first (compiled once for all); 0
        (an empty call) unless a reduction runs over the dynamic dim (pypto refuses one whose
        result is not empty while the dim is 0)."""
        R = self.dyn_rows
        x = self.x
        opts = sorted({1, 2, 3, R - 1, R + 1, 2 * R + 3, 17} - {R, 0})
        sizes = [x.choice(opts)]
        rets = [v for st in body if st[0] == "return" for v in st[1]]
        all_empty = all(p.dyn for p in params if p.role == "out") and all(v.shape and v.shape[0] == R for v in rets)
        if not self.dyn_reduced and x.random() < (0.15 if all_empty else 0.1):
            sizes.append(0)  # an empty call
        return tuple(sizes)

    def dyn_text(self, shape: Tuple[int, ...]) -> str:
        """A pypto.tensor shape: dim 0 from the call's x0 when it is the dynamic one."""
        if self.dyn_rows and shape and shape[0] == self.dyn_rows:
            return "(" + ", ".join(["x0.shape[0]"] + [str(d) for d in shape[1:]]) + ")"
        return repr(tuple(shape))

    # --- 0-d values ------------------------------------------------------------------------------
    def zerod_input(self, dt: str, params: List[Param]) -> None:
        if self.zerod:
            params.append(self.param("s0", (), dt))

    def zerod_output(self, body: List[Any], pool: List[V], cur: V, tile: int) -> Optional[V]:
        """A 0-d value reduced from cur (a 1-D or 2-D value), or None."""
        x = self.x
        if not self.zerod or len(cur.shape) not in (1, 2) or cur.dt == "bool":
            return None
        v = cur
        if len(v.shape) == 2:
            op = x.choice(["sum", "amax", "amin"])
            v = self.emit(body, pool, v, op, [v], {"dim": -1, "keepdim": False}, "pos", v.shape[:1], v.dt)
        body.append(("tile", (tile,)))
        isf = v.dt in FLOATS
        op = x.choice(["sum", "amax", "amin", "prod", "argmax"] + (["mean"] if isf else []))
        dt = "int32" if op == "argmax" else v.dt
        if op in ("sum", "amax", "amin", "mean"):
            z = self.emit(body, pool, v, op, [v], {"dim": 0, "keepdim": False}, x.choice(["pos", "kw"]), (), dt)
        else:
            z = self.emit(body, pool, v, op, [v, 0], {}, "fn", (), dt)
        if x.random() < 0.05:  # a reduction of the 0-d value: pypto must refuse the dim ("out of range")
            op = x.choice(["sum", "amax"])
            z = self.emit(body, pool, z, op, [z], {"dim": -1, "keepdim": False}, "pos", (), z.dt)
        return z

    # --- integer steps ---------------------------------------------------------------------------
    def s_bitwise(self, body: List[Any], pool: List[V], cur: V) -> V:
        """& | ^ ~ << >> on an integer value, with a tensor or a scalar (mask, shift amount; either
        side), as operators or pypto.bitwise_* functions."""
        x = self.x
        dt = cur.dt
        bits = BITS[dt]
        lo, hi = IBOUNDS[dt]
        op = _wchoice(x, [("bitwise_and", 3), ("bitwise_or", 2), ("bitwise_xor", 2), ("bitwise_not", 2),
                          ("bitwise_left_shift", 3), ("bitwise_right_shift", 4)])
        form = "op" if x.random() < 0.6 else "fn"
        if op == "bitwise_not":
            return self.emit(body, pool, cur, op, [cur], {}, form, cur.shape, dt)
        cands = [v for v in pool if v.dt == dt and v is not cur and _bcast(cur.shape, v.shape) is not None]
        shift = op.endswith("shift")
        if cands and x.random() < 0.3:
            other = x.choice(cands)
            args: List[Any] = [cur, other] if x.random() < 0.7 else [other, cur]
            return self.emit(body, pool, cur, op, args, {}, form, _bcast(cur.shape, other.shape), dt)
        if shift:
            if x.random() < 0.2:  # scalar << tensor: the tensor is the amount
                s = x.choice([v for v in (1, 3, 100, 2 ** 20, hi) if v <= min(hi, 2 ** 53)])
                return self.emit(body, pool, cur, op, [s, cur], {}, form, cur.shape, dt)
            s = x.choice(list(range(bits)) + [0, 1, bits - 1, bits, bits + 1] + ([-1] if dt in SIGNED else []))
        else:
            masks = [m for m in (1, 3, 7, 0x0F, 0xFF, 0x5555, 0xFFFF, 0x7FFFFFFF, 0, hi) if m <= min(hi, 2 ** 53)]
            s = x.choice(masks + ([-1, -2, lo] if dt in SIGNED and lo >= -2 ** 53 else []))
        args = [cur, s] if shift or x.random() < 0.7 else [s, cur]
        return self.emit(body, pool, cur, op, args, {}, form, cur.shape, dt)

    # --- FP8 -------------------------------------------------------------------------------------
    def fp8_roundtrip(self, body: List[Any], pool: List[V], cur: V) -> V:
        """cur cast into an FP8 format and back (to its dtype or fp32); the FP8 value is not put in
        the pool (nothing but a cast or a move may take it)."""
        x = self.x
        back = x.choice([cur.dt, cur.dt, "fp32"])
        q = self.fresh(cur.shape, x.choice(self.fp8))
        body.append(("op", q, "cast", [cur], {"to": q.dt}, "fn"))
        return self.emit(body, pool, cur, "cast", [q], {"to": back}, "fn", cur.shape, back)

    def _refused_on_fp8(self, body: List[Any], q: V) -> V:
        """An op pypto refuses on an FP8 value (the program's expected UserError)."""
        x = self.x
        other8 = [d for d in FP8S if d != q.dt][0]
        choices: List[Tuple[str, List[Any], Dict[str, Any], str, str]] = [
            ("add", [q, q], {}, "op", q.dt), ("exp", [q], {}, "fn", q.dt), ("abs", [q], {}, "op", q.dt),
            ("gt", [q, q], {}, "op", "bool"), ("cast", [q], {"to": "int32"}, "fn", "int32"),
            ("cast", [q], {"to": other8}, "fn", other8), ("maximum", [q, q], {}, "fn", q.dt)]
        if len(q.shape) >= 1:
            choices.append(("amax", [q], {"dim": -1, "keepdim": True}, "pos", q.dt))
        choices.append(("mul", [q, x.choice([2.0, 1, -0.5])], {}, x.choice(["op", "fn"]), q.dt))
        op, args, kw, form, dt = x.choice(choices)
        shape = q.shape[:-1] + (1,) if op == "amax" else q.shape
        out = self.fresh(shape, dt)
        body.append(("op", out, op, args, kw, form))
        return out

    def k_fp8(self, dt8: str) -> Tuple[List[Param], List[Any]]:
        """A float value cast into dt8 and back: x0 may be FP8 bytes (cast to a float first), the
        FP8 value may be transposed (its bytes move) and may be an output of its own."""
        r, x = self.r, self.x
        floats = ["fp32"] + [d for d in ("fp16", "bf16") if d in self.dtypes and have_torch()]
        F = _wchoice(x, [(d, 6 if d == "fp32" else 2) for d in floats])
        R, C = x.choice(FP8_SHAPES)
        fp8_in = x.random() < 0.5
        params = [self.param("x0", (R, C), dt8 if fp8_in else F)]
        if x.random() < 0.5:
            params.append(self.param("x1", (R, C), F))
        if x.random() < 0.4:
            params.append(self.param("g0", (1, C), F))
        body: List[Any] = [("tile", self.tile2((R, C)))]
        pool = [V(p.name, p.shape, p.dt) for p in params if p.dt not in FP8S]
        if fp8_in:
            start = self.emit(body, pool, V("x0", (R, C), dt8), "cast", [V("x0", (R, C), dt8)], {"to": F}, "fn",
                              (R, C), F)
        else:
            start = pool[0]
        allow = {"reduce": x.random() < 0.5, "composite": x.random() < 0.4, "cast": x.random() < 0.3,
                 "permute": False, "topk": False}
        cur = self.chain(body, pool, start, r.randint(0, 3), (R, C), allow, want_dt=F)
        q = self.fresh((R, C), dt8)
        body.append(("op", q, "cast", [cur], {"to": dt8}, "fn"))
        moved = x.random() < 0.35
        if moved:  # the bytes move: transpose the FP8 value (undone after the cast back)
            qt = self.fresh((C, R), dt8)
            body.append(("op", qt, "transpose", [q, 0, 1], {}, x.choice(["fn", "method"])))
            q = qt
        if x.random() < 0.1:
            bad = self._refused_on_fp8(body, q)
            self._finish_out(body, params, [bad], ret=True)
            return params, body
        outs: List[V] = [q] if x.random() < 0.35 else []
        F2 = x.choice([F, F, "fp32"])
        b = self.fresh(q.shape, F2)
        body.append(("op", b, "cast", [q], {"to": F2}, "fn"))
        if moved:
            b2 = self.fresh((R, C), F2)
            body.append(("op", b2, "transpose", [b, 0, 1], {}, "fn"))
            b = b2
        pool.append(b)
        cur2 = self.chain(body, pool, b, r.randint(0, 2), (R, C), allow, want_dt=F2)
        outs.insert(0, cur2)
        if x.random() < 0.5:
            outs.reverse()
        self._finish_out(body, params, outs, ret=x.random() < 0.5)
        return params, body


