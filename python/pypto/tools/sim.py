"""``pypto.sim``: the NPU machine model. Predicts where the time goes on an Ascend-class chip.

    report = pypto.sim.simulate(fn, *args, machine="a2a3")
    report.total_us, report.bound, report.utilization["AIV"], report.machine.gm_bandwidth_gbps
    report.write_swimlane("sim_swimlane.json")      # Perfetto / chrome://tracing; `pypto summary`

The call is compiled for the modeled chip (its UB, L1 and L0 capacities are checked), run on this
CPU for its outputs (the same values as an ordinary call), and its launches are replayed on the
model: each grid point is a task on a modeled AIC or AIV core, timed from the cost of each PTO
instruction on its pipe (MTE2, MTE1, M, FIX, V, MTE3). ``runtime_options={"run_mode":
pypto.RunMode.SIM}`` (or ``"sim"``) does the same for an ordinary call: ``fn.last_sim`` holds the
report, and the swimlane is written where CANN PyPTO writes it
(``output/<fn>_<pid>_<time>/CostModelSimulationOutput/merged_swimlane.json``). docs/sim.md
describes the model, the sources of its numbers and its limits.
"""

from __future__ import annotations

from typing import Any, Optional

import pypto._core as _core
from ..frontends.jit import JitFunction, _sim_request, request_set
from ..frontends.tile import TileFunction
from ..whitebox.sim_report import Machine, SimReport, _machine, machine, machines  # noqa: F401 - pypto.sim's names

__all__ = ["simulate", "SimReport", "Machine", "machine", "machines"]


def simulate(fn: Any, *args: Any, machine: Optional[str] = None, **kwargs: Any) -> SimReport:  # noqa: F811
    """Calls the @pypto.jit function `fn` on `args` compiled for NPU model `machine` (default
    "a2a3"), runs it on the CPU for its outputs and returns the model's prediction."""
    if not isinstance(fn, (JitFunction, TileFunction)):
        raise _core.UserError(f"pypto.sim.simulate: {fn!r} is not a @pypto.jit function")
    name = machine or "a2a3"
    _machine(name)  # a clear error for an unknown machine or one without a model
    prev = getattr(_sim_request, "machine", None)
    _sim_request.machine = name
    request_set(1)
    try:
        fn(*args, **kwargs)
    finally:
        _sim_request.machine = prev
        request_set(-1)
    jf = fn.last if isinstance(fn, TileFunction) else fn
    return jf.last_sim
