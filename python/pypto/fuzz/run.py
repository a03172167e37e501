"""Running programs: pypto on each mode, the comparison with the oracle, one program end to end
(run_one), the worker processes (a crash or a hang is recorded, not fatal) and batches."""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pypto

from .bounds import OT
from .common import (FLOATS, INTS, PREC, SENTINEL, ExpectedUserError, from_storage, np_dtype, storage_dtype,
                     to_storage)
from .generate import generate
from .oracle import exec_source, oracle_eval
from .program import Param, Program, call_params, make_inputs, ops_of, render
from .report import describe, signature, standalone
from .shrink import shrink


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


Call = Tuple[List[Param], Dict[str, np.ndarray]]  # one call's parameters (their shapes) and inputs


def program_calls(prog: Program) -> List[Call]:
    """The calls a program is run with: one, or one per size of its dynamic dim."""
    return [(call_params(prog, c), make_inputs(prog, c)) for c in range(1 + len(prog.dyn_sizes))]


def run_pypto(prog: Program, src: str, calls: List[Call], modes: Sequence[str]) -> Dict[str, Any]:
    """{mode: ("ok", [(dtype or None, output array) of every call in turn], inputs_modified, notes)
    | ("usererror", msg) | ("exception", msg)}. One jit function serves every call of a mode: a
    program with a dynamic dim must not compile again for another size (note "recompiled")."""
    fn = exec_source(src, prog.filename, pypto)
    res: Dict[str, Any] = {}
    for mode in modes:
        outs: List[Tuple[Optional[str], np.ndarray]] = []
        modified: List[str] = []
        notes: List[str] = []
        compiled = 0
        pypto.set_runtime_options(run_mode=mode)
        try:
            for c, (params, inputs) in enumerate(calls):
                where = f"call {c + 1} (dim 0 = {prog.dyn_sizes[c - 1]}): " if c else ""
                args = []
                outs_idx = []
                for k, p in enumerate(params):
                    if p.role == "in":
                        args.append(to_storage(p.dt, inputs[p.name]))
                    else:
                        args.append(to_storage(p.dt, np.full(p.shape, SENTINEL[p.dt], np_dtype(p.dt))))
                        outs_idx.append(k)
                before = [a.copy() for a in args]
                try:
                    ret = fn(*args)
                except pypto.UserError as e:
                    res[mode] = ("usererror", where + str(e))
                    break
                except Exception as e:  # noqa: BLE001 - everything else is a finding
                    res[mode] = ("exception", f"{where}{type(e).__name__}: {e}")
                    break
                n_cache = len(getattr(fn, "_cache", ()))
                if c == 0:
                    compiled = n_cache
                elif n_cache != compiled:
                    notes.append("recompiled")
                got: List[Tuple[Optional[str], np.ndarray]] = [(params[k].dt, args[k]) for k in outs_idx]
                if ret is not None and not outs_idx:
                    rets = list(ret) if isinstance(ret, tuple) else [ret]
                    got += [(None, np.asarray(x)) for x in rets]
                if INJECT and mode == "cpu":
                    got = [(d, _inject(INJECT, a)) for d, a in got]
                outs += got
                modified += [where + p.name for k, p in enumerate(params) if p.role == "in" and not np.array_equal(
                    before[k].reshape(-1).view(np.uint8), args[k].reshape(-1).view(np.uint8))]
            else:
                res[mode] = ("ok", outs, modified, notes)
        finally:
            pypto.set_runtime_options(run_mode="cpu")
    return res


INJECT = os.environ.get("PYPTO_FUZZ_INJECT", "")  # self-test of the oracle: corrupt cpu results


def _inject(kind: str, a: np.ndarray) -> np.ndarray:
    """A deliberately wrong result (to check that the comparison catches it): "nan" turns NaNs
    into 0, "ulp" moves every nonzero finite element by one unit of its last place (integers by
    1, bools flipped: an output with one exactly determined element must fail), "inf" turns +inf
    into the largest finite value."""
    a = a.copy()
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        if kind == "nan":
            flat[np.isnan(flat)] = 0
        elif kind == "ulp":
            nz = np.isfinite(flat) & (flat != 0)
            with np.errstate(over="ignore"):  # the largest finite value moves to inf, as meant
                flat[nz] = np.nextafter(flat[nz], np.asarray(np.inf, a.dtype))
        elif kind == "inf":
            flat[np.isposinf(flat)] = np.finfo(a.dtype).max
    elif a.dtype == np.uint16:  # bf16 bits
        f = (flat.astype(np.uint32) << 16).view(np.float32)
        if kind == "nan":
            flat[np.isnan(f)] = 0
        elif kind == "ulp":
            flat[np.isfinite(f) & (f != 0)] += 1
        elif kind == "inf":
            flat[np.isposinf(f)] = 0x7F7F
    elif kind == "ulp":
        if a.dtype == np.bool_:
            flat[:] = ~flat
        else:
            with np.errstate(all="ignore"):
                flat += np.ones((), a.dtype)
    return a


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.9g}"
    return str(x)


def _int_bad(g: np.ndarray, w: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Integers (and bools) compared exactly: equal where the oracle is exact, else within e
    (the distance taken in Python ints: uint64 and int64 values do not fit float64)."""
    with np.errstate(all="ignore"):
        bad = np.asarray(g != w)
        loose = (e > 0) & np.isfinite(e)
        if np.any(loose):
            dist = np.abs(g.astype(object) - w.astype(np.int64 if w.dtype == np.bool_ else w.dtype).astype(object))
            bad = np.where(loose, dist.astype(np.float64) > e, bad)
    return bad


def compare(prog: Program, oracle: List[OT], res: Dict[str, Any], inputs: Dict[str, np.ndarray],
            max_elems: int = 6, first_of_call: Sequence[int] = (),
            later_inputs: Sequence[Dict[str, np.ndarray]] = ()) -> Outcome:
    """first_of_call: the index of the first output of each call after the first (a dynamic dim's
    other sizes), later_inputs those calls' inputs."""
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
        _, outs, modified, notes = st
        if "recompiled" in notes:
            flags.append("recompiled")
            bad_modes.append(mode)
            lines.append(f"[{mode}] compiled again for another size of the dynamic dim (pypto.DYNAMIC: once)")
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
                # Where the oracle is exact, a zero has its sign too (x / 0 and 1 / -0 differ).
                zero_sign = (e == 0) & (w == 0) & (g == 0) & (np.signbit(g) != np.signbit(w))
                sentinel = fin & (g == SENTINEL[dt]) & (w != SENTINEL[dt]) & (dt != "bool")
                if dt in INTS or dt == "bool":  # exact, in the integers' own dtypes
                    val_bad = _int_bad(gl[k], want.v, e)
                    sentinel = (gl[k] == SENTINEL[dt]) & (want.v != SENTINEL[dt]) & (dt != "bool")
            if dt in INTS or dt == "bool":
                zero_sign = np.zeros(want.shape, bool)
            bad = (nan_missing | nan_extra | inf_bad | nonfin_got | val_bad | zero_sign) & ~skip
            for nm, m in (("nan-missing", nan_missing), ("nan-extra", nan_extra), ("inf-mismatch", inf_bad),
                          ("got-nonfinite", nonfin_got), ("value", val_bad & ~sentinel), ("unwritten", sentinel),
                          ("zero-sign", zero_sign)):
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
            call = sum(1 for f in first_of_call if k >= f)
            of_call = f", call {call + 1}: dim 0 = {prog.dyn_sizes[call - 1]}" if call else ""
            elem_lines.append(f"output {k} ({dt}{list(want.shape)}{of_call}): {len(idxs)} bad of {bad_any.size}")
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
                call_inputs = later_inputs[call - 1] if call and len(later_inputs) >= call else inputs
                for p in prog.params:
                    if p.role == "in":
                        a = call_inputs[p.name]
                        if a.ndim == len(t) and a.size:
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
    """Run one program: (outcome, source, inputs, oracle outputs or None, pypto results). A program
    with a dynamic dim runs once per size; its outputs (and the oracle's) are those of every call
    in turn."""
    src = render(prog)
    calls = program_calls(prog)
    inputs = calls[0][1]
    expect, pattern = prog.expect, prog.expect_pattern
    oracle: Optional[List[OT]] = None
    amb = 0
    first_of_call: List[int] = []
    if not expect:
        try:
            oracle = []
            for c, (params, ins) in enumerate(calls):
                if c:
                    first_of_call.append(len(oracle))
                outs, a = oracle_eval(prog, src, ins, params)
                oracle += outs
                amb += a
        except ExpectedUserError as e:
            expect, pattern, oracle = str(e), e.pattern, None
        except Exception:  # noqa: BLE001
            return Outcome("fuzz_error", ["oracle"], [], traceback.format_exc()), src, inputs, None, None
    res = run_pypto(prog, src, calls, modes)
    kinds = {m: res[m][0] for m in modes}
    if expect:
        if all(k == "usererror" for k in kinds.values()):
            msg = res[modes[0]][1]
            if pattern and not re.search(pattern, msg):  # refused, but the message does not say why
                detail = f"expected a pypto.UserError saying /{pattern}/ ({expect}); got: {msg.splitlines()[0][:300]}"
                out = Outcome("mismatch", ["unclear-error"], list(modes), detail, message=expect)
                return out, src, inputs, None, res
            flags = [] if prog.filename in msg else ["error-without-line"]  # it should name the program's line
            out = Outcome("expected_error", flags, [], msg.splitlines()[0][:200], message=expect)
            return out, src, inputs, None, res
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
    out = compare(prog, oracle, res, inputs, first_of_call=first_of_call, later_inputs=[c[1] for c in calls[1:]])
    out.ambiguous = amb
    return out, src, inputs, oracle, res


MARK = "@@FUZZ@@ "


def _apply_pass_options() -> None:
    """PYPTO_FUZZ_PASS_OPTIONS="k=v;k=v" -> pypto.set_pass_options (inherited by the workers)."""
    spec = os.environ.get("PYPTO_FUZZ_PASS_OPTIONS", "")
    if not spec:
        return
    opts: Dict[str, Any] = {}
    for kv in spec.split(";"):
        k, _, v = kv.partition("=")
        opts[k.strip()] = {"1": True, "true": True, "0": False, "false": False}.get(v.strip().lower(), v.strip())
    pypto.set_pass_options(**opts)


def run_one(seed: int, index: int, dtypes: Sequence[str], modes: Sequence[str],
            want_shrink: bool = False) -> Dict[str, Any]:
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
            small, sout = shrink(prog, modes, out, evaluate)
            ssrc = render(small)
            rec["shrunk"] = describe(small, sout, ssrc)
            rec["shrunk_ops"] = sorted(set(ops_of(small)))
            rec["shrunk_script"] = standalone(small, ssrc, make_inputs(small),
                                              _safe_oracle(small, ssrc))
    elif out.status in ("unsupported", "expected_error"):
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
            [sys.executable, "-m", "pypto.fuzz", "--worker", "--seed", str(self.seed), "--dtypes", self.dtypes,
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
                        print("  ... worker could not import pypto (rebuild in progress?); retrying in 30 s",
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


def run_batch(seed: int, start: int, count: int, dtypes: str, modes: str, jobs: int, timeout: float = 300.0,
              shrink_n: int = 0, progress: bool = True,
              indices: Optional[Sequence[int]] = None) -> Tuple[List[Dict[str, Any]], float]:
    """Runs programs [start, start + count) of `seed` (or those in `indices`); returns (records
    sorted by index, seconds)."""
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

