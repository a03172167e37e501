"""``pypto.tune``: search tile shapes on the NPU machine model or by measuring on this CPU.

    best = pypto.tune(softmax, x, space={"tile_rows": [8, 16, 32, 64]}, target="sim")

Each key of ``space`` is a parameter of the @pypto.jit function (a compile-time value: the
function passes it to ``set_vec_tile_shapes`` / ``set_cube_tile_shapes``), or one of
``vec_tile_shapes`` / ``cube_tile_shapes``, the default tiles of a function that sets none
(``pypto.options``). Every combination is compiled and run: ``target="sim"`` predicts its time
on the machine model (``machine=``, default "a2a3"), ``target="cpu"`` measures its median over
``repeat`` warm calls here. The table of candidates (time, bound, traffic) is printed, and the
swimlanes of the first candidate and of the best are written side by side
(``<out_dir>/tune_first_swimlane.json`` and ``tune_best_swimlane.json``) so one can see why it wins.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import pypto._core as _core
from ..core import config
from . import sim
from ..frontends.jit import _swimlane_request, JitFunction, request_set
from ..frontends.tile import TileFunction

__all__ = ["tune", "TuneResult"]

_DEFAULT_KEYS = ("vec_tile_shapes", "cube_tile_shapes")


@dataclass
class Candidate:
    config: Dict[str, Any]
    time_us: float = float("nan")
    bound: str = ""
    gm_mib: float = float("nan")
    error: str = ""
    report: Any = None  # the SimReport (target "sim")


@dataclass
class TuneResult:
    target: str
    machine: str
    candidates: List[Candidate] = field(default_factory=list)
    swimlanes: Dict[str, str] = field(default_factory=dict)

    @property
    def best(self) -> Candidate:
        ok = [c for c in self.candidates if not c.error]
        if not ok:
            raise _core.UserError("pypto.tune: no candidate compiled and ran; see the table for why")
        return min(ok, key=lambda c: c.time_us)

    def table(self) -> str:
        what = f"predicted on {self.machine}" if self.target == "sim" else "measured on this CPU (median)"
        lines = [f"pypto.tune: {len(self.candidates)} candidates, time {what}"]
        best = None
        try:
            best = self.best
        except _core.UserError:
            pass
        head = f"  {'':2}{'time':>12}  {'bound':<9}{'GM MiB':>9}  config"
        lines.append(head)
        for c in sorted(self.candidates, key=lambda c: (bool(c.error), c.time_us)):
            mark = "* " if c is best else "  "
            if c.error:
                lines.append(f"  {mark}{'-':>12}  {'error':<9}{'':>9}  {c.config}: {c.error}")
                continue
            gm = f"{c.gm_mib:9.1f}" if c.gm_mib == c.gm_mib else f"{'':>9}"
            lines.append(f"  {mark}{c.time_us:10.1f}us  {c.bound:<9}{gm}  {c.config}")
        for k, v in self.swimlanes.items():
            lines.append(f"  {k} swimlane: {v}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()


def _combinations(space: Dict[str, Sequence[Any]]) -> List[Dict[str, Any]]:
    if not isinstance(space, dict) or not space:
        raise _core.UserError("pypto.tune: space must be a non-empty dict {name: [values, ...]}")
    for k, v in space.items():
        if not isinstance(v, (list, tuple)) or not v:
            raise _core.UserError(f"pypto.tune: space[{k!r}] must be a non-empty list of values, got {v!r}")
    keys = list(space)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(space[k] for k in keys))]


def tune(fn: Any, *args: Any, space: Dict[str, Sequence[Any]], target: str = "sim", machine: Optional[str] = None,
         repeat: int = 5, out_dir: Optional[str] = None, verbose: bool = True, apply: bool = False,
         **kwargs: Any) -> TuneResult:
    """Runs `fn(*args, **kwargs)` for every combination of `space` and returns the candidates
    ranked (``result.best``, ``result.table()``). With ``apply=True`` the best
    ``vec_tile_shapes`` / ``cube_tile_shapes`` become the function's own defaults: later calls of a
    function that sets no tile shape use them. See the module documentation."""
    if target not in ("sim", "cpu"):
        raise _core.UserError(f"pypto.tune: target must be \"sim\" or \"cpu\", got {target!r}")
    if not isinstance(fn, (JitFunction, TileFunction)):
        raise _core.UserError(f"pypto.tune: {fn!r} is not a @pypto.jit function")
    params = set(getattr(fn, "sig", None).parameters) if getattr(fn, "sig", None) is not None else set()
    for k in space:
        if k not in params and k not in _DEFAULT_KEYS:
            raise _core.UserError(f"pypto.tune: {k!r} is neither a parameter of {fn.__name__} nor one of "
                                  f"{', '.join(_DEFAULT_KEYS)}\nhint: give the function a compile-time parameter "
                                  f"(e.g. `{k}: int = ...`) and use it in set_vec_tile_shapes")
    mname = machine or "a2a3"
    if target == "sim":
        sim.machine(mname)
    result = TuneResult(target, mname if target == "sim" else "cpu")
    for cfg in _combinations(space):
        cand = Candidate(cfg)
        call_kwargs = dict(kwargs, **{k: v for k, v in cfg.items() if k in params})
        defaults = {k: cfg[k] for k in _DEFAULT_KEYS if k in cfg}
        try:
            with config.options(**defaults):
                if target == "sim":
                    rep = sim.simulate(fn, *args, machine=mname, **call_kwargs)
                    cand.report = rep
                    cand.time_us, cand.bound = rep.total_us, rep.bound
                    cand.gm_mib = rep.gm_bytes / 2 ** 20
                else:
                    fn(*args, **call_kwargs)  # compile and warm up
                    times = []
                    for _ in range(max(1, repeat)):
                        t0 = time.perf_counter()
                        fn(*args, **call_kwargs)
                        times.append(time.perf_counter() - t0)
                    times.sort()
                    cand.time_us = times[len(times) // 2] * 1e6
                    cand.bound = "measured"
        except _core.UserError as e:  # a tiling that does not fit: a row of the table, not the end
            cand.error = str(e).splitlines()[0]
        result.candidates.append(cand)
    best = result.best
    directory = out_dir or os.path.join(os.getcwd(), "pypto_tune", fn.__name__)
    os.makedirs(directory, exist_ok=True)
    first = next((c for c in result.candidates if not c.error), None)
    for label, c in (("first", first), ("best", best)):
        if c is None:
            continue
        path = os.path.join(directory, f"tune_{label}_swimlane.json")
        if target == "sim":
            c.report.write_swimlane(path)
        else:
            _cpu_swimlane(fn, args, dict(kwargs, **{k: v for k, v in c.config.items() if k in params}),
                          {k: c.config[k] for k in _DEFAULT_KEYS if k in c.config}, path)
        result.swimlanes[label] = path
    if apply:
        if not any(k in best.config for k in _DEFAULT_KEYS):
            raise _core.UserError("pypto.tune(apply=True) applies vec_tile_shapes / cube_tile_shapes; the space has "
                                  "neither (a parameter's best value is result.best.config)")
        target_fn = fn.last if isinstance(fn, TileFunction) else fn
        target_fn.tuned_tiles = (best.config.get("vec_tile_shapes"), best.config.get("cube_tile_shapes"))
    if verbose:
        print(result.table())
    return result


def _cpu_swimlane(fn: Any, args: Sequence[Any], kwargs: Dict[str, Any], defaults: Dict[str, Any], path: str) -> None:
    """One traced run on the CPU, its swimlane written to `path`."""
    _swimlane_request.path = path
    request_set(1)
    try:
        with config.options(**defaults):
            fn(*args, **kwargs)
    finally:
        _swimlane_request.path = None
        request_set(-1)
