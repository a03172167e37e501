"""verify_passes: check a call pass by pass.

The tensor graph is evaluated with numpy (the meaning of the user's program); the block graph
as it stood after each block-level pass (ExpandTiles + Partition, FuseInstructions, each tile
in its own bytes) and after AllocateBuffers (tiles sharing UB) runs on the reference
interpreter; the native backend runs the generated code. The first pass whose results differ
from the step before it is named, with the output, the position and the values.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core
from . import tensor_semantics
from .tensor_semantics import eval_sym as _eval_sym
from .tensor_semantics import storage_dtype


def eval_scalar(v: Any, env: Dict[str, int]) -> Optional[int]:
    """A probe's int or symbolic scalar at one point of the evaluation (None if unknown there)."""
    if isinstance(v, _core.SymbolicScalar):
        try:
            return int(v.eval(env))
        except (_core.UserError, _core.InternalError, KeyError):
            return None
    return int(v)


class TensorGraphEvaluator:
    """Runs a tensor graph (the JSON of Program.to_json("tensor_graph")) with numpy."""

    def __init__(self, graph: Dict[str, Any], probes: Sequence[Dict[str, Any]] = (), save_dir: str = "") -> None:
        self.g = graph
        self.values = {v["id"]: v for v in graph["values"]}
        self.probes: Dict[Tuple[int, ...], List[Dict[str, Any]]] = {}  # pass_verify calls by position
        for p in probes:
            self.probes.setdefault(tuple(p["pos"]), []).append(p)
        self.save_dir = save_dir

    def run(self, params: Sequence[np.ndarray]) -> Tuple[List[np.ndarray], Dict[int, np.ndarray]]:
        env: Dict[str, int] = {}
        store: Dict[int, np.ndarray] = {}
        for p, a in zip(self.g["params"], params):
            v = self.values[p["value"]]
            for dim, n in zip(v["shape"], a.shape):
                if dim in self.g["dynamic_vars"]:
                    env[dim] = int(n)
            store[v["id"]] = a
        for v in self.g["values"]:
            if v["kind"] in ("tensor", "output") and v["id"] not in store:
                store[v["id"]] = np.zeros([_eval_sym(d, env) for d in v["shape"]], storage_dtype(v["dtype"]))
        self._region(self.g["body"], env, store, ())
        return [store[r] for r in self.g["returns"]], store

    def _get(self, vid: int, env: Dict[str, int], store: Dict[int, np.ndarray]) -> np.ndarray:
        v = self.values[vid]
        if v["kind"] == "reshape":  # the same memory in another shape (row-major)
            return self._get(v["base"], env, store).reshape([_eval_sym(d, env) for d in v["shape"]])
        if v["kind"] == "view":
            base = self._get(v["base"], env, store)
            idx = tuple(slice(_eval_sym(o, env), _eval_sym(o, env) + _eval_sym(s, env))
                        for o, s in zip(v["offsets"], v["shape"]))
            return base[idx]
        return store[vid]

    def _region(self, body: List[Dict[str, Any]], env: Dict[str, int], store: Dict[int, np.ndarray],
                path: Tuple[int, ...]) -> None:
        for j, e in enumerate(body):
            self._probes(path + (j,), env, store)
            if e["kind"] == "loop":
                start, stop, step = (_eval_sym(e[k], env) for k in ("start", "stop", "step"))
                for i in range(start, stop, step):
                    env[e["var"]] = i
                    self._region(e["body"], env, store, path + (j,))
                env.pop(e["var"], None)
                continue
            self._op(e, env, store)
        self._probes(path + (len(body),), env, store)

    def _probes(self, pos: Tuple[int, ...], env: Dict[str, int], store: Dict[int, np.ndarray]) -> None:
        """Runs the pass_verify_print / _save calls made at this point of the program."""
        for p in self.probes.get(pos, ()):
            if not eval_scalar(p["cond"], env):
                continue
            if p["kind"] == "print":
                text = []
                for item in p["items"]:
                    if item[0] == "tensor":
                        v = self.values[item[1]]
                        a = self._get(item[1], env, store)
                        shape = "x".join(str(n) for n in a.shape)
                        shown = values_of(a, "bf16").astype(np.float32) if v["dtype"] == "bf16" else a
                        text.append(f"{item[2]}:<{shape}x{v['dtype'].upper()}>\n"
                                    + np.array2string(shown, threshold=64, edgeitems=3))
                    elif item[0] == "scalar":
                        s = eval_scalar(item[1], env)
                        text.append("?" if s is None else str(s))
                    else:
                        text.append(item[1])
                print("".join(text), flush=True)
            else:
                self._save(p, env, store)

    def _save(self, p: Dict[str, Any], env: Dict[str, int], store: Dict[int, np.ndarray]) -> None:
        import os

        name = p["fname"]
        for key, val in p["values"].items():
            s = eval_scalar(val, env) if not isinstance(val, str) else val
            name = name.replace("$" + key, str(s))
        v = self.values[p["tensor"]]
        a = np.ascontiguousarray(self._get(p["tensor"], env, store))
        folder = os.path.join(self.save_dir or os.path.join(os.getcwd(), "output"), "tensor")
        os.makedirs(folder, exist_ok=True)
        a.tofile(os.path.join(folder, name + ".data"))
        with open(os.path.join(folder, name + ".csv"), "w") as f:
            f.write("dtype,shape,storage\n")
            f.write(f"{v['dtype']},{'x'.join(str(n) for n in a.shape)},{a.dtype}\n")

    def _op(self, e: Dict[str, Any], env: Dict[str, int], store: Dict[int, np.ndarray]) -> None:
        op, attrs = e["op"], e["attrs"]
        ins = [self._get(i, env, store) for i in e["inputs"]]
        if op == "assemble":
            dst = self._get(e["inputs"][1], env, store)
            idx = tuple(slice(_eval_sym(o, env), _eval_sym(o, env) + n) for o, n in zip(attrs["offsets"], ins[0].shape))
            dst[idx] = ins[0]
            return
        if e["output"] < 0:  # scatter: writes its third input in place
            dts = [self.values[i]["dtype"] for i in e["inputs"]]
            tensor_semantics.evaluate(op, ins, attrs, dts[2], dts, env)
            return
        out = self.values[e["output"]]
        store[e["output"]] = tensor_semantics.evaluate(op, ins, attrs, out["dtype"], [self.values[i]["dtype"] for i in
                                                                                     e["inputs"]], env)


def _results(graph: Dict[str, Any], returns: Sequence[np.ndarray],
             params: Sequence[np.ndarray]) -> List[Tuple[str, str, np.ndarray]]:
    """The function's results as (name, dtype, array): returned tensors, then parameters written
    in place."""
    names = {v["id"]: v["name"] for v in graph["values"]}
    dtypes = {v["id"]: v["dtype"] for v in graph["values"]}
    out = [(f"returned %{names[r]}", dtypes[r], a) for r, a in zip(graph["returns"], returns)]
    for p, a in zip(graph["params"], params):
        if p["value"] in graph["outputs"] and p["value"] not in graph["returns"]:
            out.append((f"parameter '{p['name']}'", dtypes[p["value"]], a))
    return out


def values_of(a: np.ndarray, dtype: str) -> np.ndarray:
    """An array in its storage form (bf16 as uint16 bits) as the numbers it holds, in float64 (for
    the tolerant comparisons; int64 beyond 2^53 compares as its nearest double)."""
    return tensor_semantics.values(a, dtype).astype(np.float64)


# A 16-bit result may differ by one rounding between two levels that compute in fp32 (an fp32
# transcendental a few ulp apart can land on the other side of a 16-bit rounding boundary).
_ROUNDING = {"bf16": 2.0 ** -8, "fp16": 2.0 ** -11}


def _first_difference(a: np.ndarray, b: np.ndarray, rtol: float, atol: float, dtype: str = "fp32") -> Optional[str]:
    if a.shape != b.shape:
        return f"shapes {a.shape} vs {b.shape}"
    fa, fb = values_of(a, dtype), values_of(b, dtype)
    bad = ~np.isclose(fa, fb, rtol=max(rtol, _ROUNDING.get(dtype, 0.0)), atol=atol, equal_nan=True)
    if not bad.any():
        return None
    pos = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{int(bad.sum())} of {a.size} elements differ; first at {pos}: {float(fa[pos])!r} vs {float(fb[pos])!r}"


class Report:
    """One verified call: PyPTO's result lines (PASS / FAILED / NO_COMPARE) and ours."""

    def __init__(self) -> None:
        self.lines: List[Tuple[str, str]] = []  # (level, message)
        self.failures: List[str] = []
        self.summary = ""

    def __str__(self) -> str:
        return self.summary

    def event(self, msg: str) -> None:
        self.lines.append(("EVENT", msg))

    def error(self, msg: str) -> None:
        self.lines.append(("ERROR", msg))
        self.failures.append(msg)


def _check_goldens(report: Report, graph: Dict[str, Any], goldens: Sequence[Optional[np.ndarray]],
                   params: Sequence[np.ndarray], returns: Sequence[np.ndarray], level: str,
                   rtol: float, atol: float) -> None:
    """PyPTO's tensor_graph check: each golden against the tensor graph's result at its position
    (the parameters in order, then the returned tensors)."""
    dtypes = {v["id"]: v["dtype"] for v in graph["values"]}
    slots = [(p["name"], dtypes[p["value"]], a) for p, a in zip(graph["params"], params)]
    slots += [(f"returned #{k}", dtypes[r], a) for k, (r, a) in enumerate(zip(graph["returns"], returns))]
    n = len(goldens)
    for i, g in enumerate(goldens):
        head = f"tensor_graph Verify for {n} data view list index {i}"
        if g is None:
            report.event(f"{head} result NO_COMPARE")
            continue
        if i >= len(slots):
            report.error(f"{head} result FAILED: the function has {len(slots)} tensors, no position {i}")
            continue
        name, dt, a = slots[i]
        g = np.asarray(g)
        if g.shape != a.shape:
            report.error(f"{head} result FAILED: '{name}' has shape {a.shape}, the golden {g.shape}")
            continue
        got, want = values_of(a, dt), g.astype(np.float64)
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if bad.any():
            pos = tuple(int(j) for j in np.argwhere(bad)[0])
            report.error(f"{head} result FAILED: '{name}' ({level}): {int(bad.sum())} of {a.size} elements differ "
                         f"from the golden beyond rtol={rtol}, atol={atol}; first at {pos}: {float(got[pos])!r} vs "
                         f"golden {float(want[pos])!r}")
        else:
            report.event(f"{head} result PASS")


def verify(program: Any, before: Sequence[np.ndarray], returned: Sequence[np.ndarray],
           after: Sequence[np.ndarray], run_mode: str, rtol: float = 1e-4, atol: float = 1e-5,
           probes: Sequence[Dict[str, Any]] = (), goldens: Optional[Sequence[Optional[np.ndarray]]] = None,
           golden_tol: Tuple[float, float] = (1e-3, 1e-3), strict: bool = True,
           save_dir: str = "", passes: Optional[Sequence[str]] = None) -> Report:
    """Checks one call. `before`: copies of the parameters taken before the call; `returned`,
    `after`: what the call returned and the parameters after it. With `strict` (the debug option
    verify_passes) a level that changes the answer raises InternalError naming it; otherwise
    (PyPTO's enable_pass_verify) it is a FAILED line of the report, as are goldens that differ.
    `probes` are the pass_verify_print / _save calls, run in the tensor graph's evaluation
    (their files go to `save_dir`). `passes` is PyPTO's pass_verify_pass_filter: None or a list
    with "all" checks every level; otherwise the tensor graph (goldens, probes) and the levels
    after the passes named (of this pipeline: partition, fuse_instructions,
    allocate_buffers, codegen; other names are ignored, as in PyPTO). Returns the report (str()
    is its summary line)."""
    def wanted(pass_name: str) -> bool:
        return passes is None or "all" in passes or pass_name in passes

    graph = tensor_semantics.load_graph(program.to_json("tensor_graph"))
    report = Report()
    levels: List[Tuple[str, List[Tuple[str, str, np.ndarray]]]] = []
    ref_params = [a.copy() for a in before]
    try:
        ref_returns, _ = TensorGraphEvaluator(graph, probes, save_dir).run(ref_params)
        levels.append(("tensor graph (numpy semantics)", _results(graph, ref_returns, ref_params)))
    except tensor_semantics.NoSemantics as e:
        report.event(f"tensor_graph not evaluated: no numpy semantics for {e} (NO_COMPARE)")
        ref_returns, ref_params = [], []
    # The block graph after each block-level pass, every tile in its own bytes (the snapshots
    # exist when the function was compiled with verify_passes on).
    for i, name in enumerate(program.snapshot_names):
        if not wanted(name):
            continue
        snap_params = [a.copy() for a in before]
        snap_returns, _ = program.snapshot_program(i).run(snap_params, 0, "fifo", False, "interp")
        after_what = "expand_tiles, partition" if name == "partition" else name
        levels.append((f"block graph after {after_what} (reference interpreter)",
                       _results(graph, snap_returns, snap_params)))
    interp_params = [a.copy() for a in before]
    interp_returns, _ = program.run(interp_params, 0, "fifo", False, "interp")
    if wanted("allocate_buffers"):
        levels.append(("block graph after allocate_buffers (reference interpreter)",
                       _results(graph, interp_returns, interp_params)))
    if run_mode == "cpu" and wanted("codegen"):
        levels.append(("generated code (cpu backend)", _results(graph, returned, after)))
    if goldens is not None:
        if ref_params:
            _check_goldens(report, graph, goldens, ref_params, ref_returns, "tensor graph", *golden_tol)
        else:  # no numpy semantics: the goldens against the first level that ran
            _check_goldens(report, graph, goldens, interp_params, interp_returns, "reference interpreter",
                           *golden_tol)
    for (upper, up), (lower, low) in zip(levels, levels[1:]):
        for (name, dt, a), (_, _, b) in zip(up, low):
            diff = _first_difference(a, b, rtol, atol, dt)
            if not diff:
                continue
            msg = f"verify_passes: {lower} changes the answer of {upper} for {name}: {diff}"
            if strict:
                raise _core.InternalError(msg)
            report.error(msg + " (FAILED)")
        if not report.failures:
            report.event(f"{lower.split(' (')[0]} Verify result PASS")
    report.summary = "verify_passes: " + " == ".join(name.split(" (")[0] for name, _ in levels)
    if report.failures:
        report.summary = f"verify: {len(report.failures)} FAILED: " + "; ".join(report.failures)
    return report


def write_report(report: Report, save_dir: str, function: str) -> str:
    """PyPTO's verify folder: ``<save_dir>/verify_<time>/interpreter.log`` (a line per result,
    EVENT for PASS / NO_COMPARE, ERROR for FAILED) and ``verify_graph_result_brief.csv``."""
    import os
    import threading
    import time
    stamp = time.strftime("%Y%m%d%H%M%S")
    folder = os.path.join(save_dir, f"verify_{stamp}")
    os.makedirs(folder, exist_ok=True)
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    tid = threading.get_ident() % 100000
    with open(os.path.join(folder, "interpreter.log"), "w") as f:
        for level, msg in report.lines:
            f.write(f"[{now}][{level}][tid:{tid}] {function}: {msg}\n")
    with open(os.path.join(folder, "verify_graph_result_brief.csv"), "w") as f:
        f.write("function,result,detail\n")
        for level, msg in report.lines:
            result = "FAILED" if level == "ERROR" else ("NO_COMPARE" if "NO_COMPARE" in msg else "PASS")
            f.write(f"{function},{result},\"{msg.replace(chr(34), chr(39))}\"\n")
    return folder
