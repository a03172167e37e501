"""verify_passes: check a call pass by pass.

The tensor graph is evaluated with numpy (the meaning of the user's program); the block graph
as it stood after each block-level pass (ExpandTiles + Partition, FuseInstructions, each tile
in its own bytes) and after AllocateBuffers (tiles sharing UB) runs on the reference
interpreter; the native backend runs the generated code. The first pass whose results differ
from the step before it is named, with the output, the position and the values.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _core
from . import tensor_semantics
from .tensor_semantics import eval_sym as _eval_sym
from .tensor_semantics import storage_dtype

class TensorGraphEvaluator:
    """Runs a tensor graph (the JSON of Program.to_json("tensor_graph")) with numpy."""

    def __init__(self, graph: Dict[str, Any]) -> None:
        self.g = graph
        self.values = {v["id"]: v for v in graph["values"]}

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
        self._region(self.g["body"], env, store)
        return [store[r] for r in self.g["returns"]], store

    def _get(self, vid: int, env: Dict[str, int], store: Dict[int, np.ndarray]) -> np.ndarray:
        v = self.values[vid]
        if v["kind"] == "view":
            base = store[v["base"]]
            idx = tuple(slice(_eval_sym(o, env), _eval_sym(o, env) + _eval_sym(s, env))
                        for o, s in zip(v["offsets"], v["shape"]))
            return base[idx]
        return store[vid]

    def _region(self, body: List[Dict[str, Any]], env: Dict[str, int], store: Dict[int, np.ndarray]) -> None:
        for e in body:
            if e["kind"] == "loop":
                start, stop, step = (_eval_sym(e[k], env) for k in ("start", "stop", "step"))
                for i in range(start, stop, step):
                    env[e["var"]] = i
                    self._region(e["body"], env, store)
                env.pop(e["var"], None)
                continue
            self._op(e, env, store)

    def _op(self, e: Dict[str, Any], env: Dict[str, int], store: Dict[int, np.ndarray]) -> None:
        op, attrs = e["op"], e["attrs"]
        ins = [self._get(i, env, store) for i in e["inputs"]]
        if op == "assemble":
            dst = self._get(e["inputs"][1], env, store)
            idx = tuple(slice(_eval_sym(o, env), _eval_sym(o, env) + n) for o, n in zip(attrs["offsets"], ins[0].shape))
            dst[idx] = ins[0]
            return
        out = self.values[e["output"]]
        store[e["output"]] = tensor_semantics.evaluate(op, ins, attrs, out["dtype"], [self.values[i]["dtype"] for i in
                                                                                     e["inputs"]], env)


def _results(graph: Dict[str, Any], returns: Sequence[np.ndarray], params: Sequence[np.ndarray]) -> List[Tuple[str, np.ndarray]]:
    """The function's results: returned tensors, then parameters written in place."""
    names = {v["id"]: v["name"] for v in graph["values"]}
    out = [(f"returned %{names[r]}", a) for r, a in zip(graph["returns"], returns)]
    for p, a in zip(graph["params"], params):
        if p["value"] in graph["outputs"] and p["value"] not in graph["returns"]:
            out.append((f"parameter '{p['name']}'", a))
    return out


def _first_difference(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> Optional[str]:
    if a.shape != b.shape:
        return f"shapes {a.shape} vs {b.shape}"
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    bad = ~np.isclose(fa, fb, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    pos = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{int(bad.sum())} of {a.size} elements differ; first at {pos}: {fa[pos]!r} vs {fb[pos]!r}"


def verify(program: Any, before: Sequence[np.ndarray], returned: Sequence[np.ndarray],
           after: Sequence[np.ndarray], run_mode: str, rtol: float = 1e-4, atol: float = 1e-5) -> str:
    """Checks one call. `before`: copies of the parameters taken before the call; `returned`,
    `after`: what the call returned and the parameters after it. Raises InternalError naming
    the first level that changes the answer; returns a one-line report otherwise."""
    graph = json.loads(program.to_json("tensor_graph"))
    levels: List[Tuple[str, List[Tuple[str, np.ndarray]]]] = []
    ref_params = [a.copy() for a in before]
    ref_returns, _ = TensorGraphEvaluator(graph).run(ref_params)
    levels.append(("tensor graph (numpy semantics)", _results(graph, ref_returns, ref_params)))
    # The block graph after each block-level pass, every tile in its own bytes (the snapshots
    # exist when the function was compiled with verify_passes on).
    for i, name in enumerate(program.snapshot_names):
        snap_params = [a.copy() for a in before]
        snap_returns, _ = program.snapshot_program(i).run(snap_params, 0, "fifo", False, "interp")
        after_what = "expand_tiles, partition" if name == "partition" else name
        levels.append((f"block graph after {after_what} (reference interpreter)",
                       _results(graph, snap_returns, snap_params)))
    interp_params = [a.copy() for a in before]
    interp_returns, _ = program.run(interp_params, 0, "fifo", False, "interp")
    levels.append(("block graph after allocate_buffers (reference interpreter)",
                   _results(graph, interp_returns, interp_params)))
    if run_mode == "cpu":
        levels.append(("generated code (cpu backend)", _results(graph, returned, after)))
    for (upper, up), (lower, low) in zip(levels, levels[1:]):
        for (name, a), (_, b) in zip(up, low):
            diff = _first_difference(a, b, rtol, atol)
            if diff:
                raise _core.InternalError(
                    f"verify_passes: {lower} changes the answer of {upper} for {name}: {diff}")
    return "verify_passes: " + " == ".join(name.split(" (")[0] for name, _ in levels)
