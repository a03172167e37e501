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

The link model predicts a collective's time from the link of each level of the hierarchy
(CHIP_DIE, CHIP, HOST, CLUSTER_0 = POD, CLUSTER_1, CLUSTER_2, GLOBAL):

    pypto.sim.links("a2a3")["HOST"]            # HCCS full mesh, 7 links of 28 GB/s each way
    t = pypto.sim.collective_time("allreduce", 64 << 20, 16, level="HOST", algorithm="fullmesh")
    t.total_us, t.latency_us, t.bandwidth_us, t.link, t.steps, t.phases
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Dict, Optional

import pypto._core as _core
from ..frontends.jit import JitFunction, _sim_request, request_set
from ..frontends.tile import TileFunction
from ..whitebox.sim_report import InfoRecord, Machine, SimReport, _machine, machine, machines  # noqa: F401 - pypto.sim's names

__all__ = ["simulate", "SimReport", "Machine", "machine", "machines", "links", "collective_time", "Link",
           "CollectiveTime"]


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


def _link_fn(name: str) -> Callable[..., Any]:
    """A link-model function of pypto._core (src/bindings/sim_bindings.cpp BindLinks)."""
    return getattr(_core, name)


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n:.0f} B"


class Link(InfoRecord):
    """The link a rank uses to reach the other ranks of one level: ``level``, ``name`` ("HCCS",
    "UB", "RoCE", ...), ``topology`` ("shared", "mesh": a link to every peer, "switch"), ``gbps``
    (one link, one direction), ``links`` (per rank), ``rank_gbps`` (all of them), ``fabric_gbps``
    (a shared medium's total), ``latency_us`` (one step), ``max_ranks`` (ranks one domain of the
    level holds, inner levels included; 0: unbounded), ``reduce_gbps`` and ``source``."""

    def __repr__(self) -> str:
        i = self._info
        size = f"up to {i['max_ranks']} ranks" if i["max_ranks"] else "unbounded"
        return (f"Link({i['level']}: {i['name']} {i['topology']}, {i['links']} x {i['gbps']:g} GB/s each way, "
                f"{i['latency_us']:g} us, {size})")


class CollectiveTime(InfoRecord):
    """The link model's prediction for one collective: ``total_us`` = ``latency_us`` (steps x
    the links' latency) + ``bandwidth_us`` (bytes over the busiest link) + ``reduce_us`` (the
    local additions); ``steps``, ``link`` (the links used, innermost first), ``phases`` (one dict
    per level crossed: op, level, link, nranks, nbytes, steps and the three parts) and the
    arguments (op, algorithm, level, nbytes, nranks, machine)."""

    @property
    def algbw_gbps(self) -> float:
        """nbytes / total time, GB/s (HCCL Test's alg_bandwidth)."""
        return self.nbytes / (self.total_us * 1e3) if self.total_us > 0 else float("inf")

    def __repr__(self) -> str:
        return (f"CollectiveTime({self.op} of {_bytes(self.nbytes)} among {self.nranks} ranks at {self.level} on "
                f"{self.machine} ({self.link}, {self.algorithm}): {self.total_us:.2f} us = latency "
                f"{self.latency_us:.2f} + bandwidth {self.bandwidth_us:.2f} + reduce {self.reduce_us:.2f}, "
                f"{self.steps} steps)")


def links(machine: str = "a2a3") -> Dict[str, Link]:
    """The link of each level of NPU machine `machine` ("a2a3" or "a5"), innermost level first,
    by level name ("CHIP_DIE", "CHIP", "HOST", "CLUSTER_0", ...). docs/sim.md gives each number's
    source."""
    if not isinstance(machine, str):
        raise _core.UserError(f"pypto.sim.links: machine must be a machine name (str), got {machine!r}")
    try:
        specs = _link_fn("link_specs")(machine)
    except _core.UserError as e:
        raise _core.UserError("pypto.sim.links: " + str(e)) from None
    return {d["level"]: Link(d) for d in specs}


def collective_time(op: str, nbytes: float, nranks: int, level: Any = "HOST", algorithm: str = "ring",
                    machine: str = "a2a3") -> CollectiveTime:
    """The predicted time of collective `op` ("allreduce", "allgather", "reduce_scatter",
    "broadcast", "all_to_all", "barrier") among `nranks` ranks packed into domains of `level` (a
    name or a ``pl.Level``: 16 ranks at "HOST" are two hosts of 8, composed over the next level).
    `nbytes` is one rank's buffer: allreduce's and broadcast's, allgather's output,
    reduce_scatter's input, all that all_to_all sends. `algorithm`: "ring" (2(n-1) neighbour steps
    of nbytes/n for allreduce), "mesh" (pld.tensor's mode="mesh": one step reading every peer),
    "fullmesh" (HCCL's Mesh: a reduce-scatter step and an allgather step over all links at once)."""
    where = "pypto.sim.collective_time: "
    level = getattr(level, "value", level)
    for name, value in (("op", op), ("level", level), ("algorithm", algorithm), ("machine", machine)):
        if not isinstance(value, str):
            raise _core.UserError(f"{where}{name} must be a str, got {value!r}")
    if isinstance(nranks, bool) or not isinstance(nranks, numbers.Integral):
        raise _core.UserError(f"{where}nranks must be an int (the number of ranks, at least 1), got {nranks!r}")
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Real):
        raise _core.UserError(f"{where}nbytes must be a number of bytes, got {nbytes!r}")
    try:
        info = _link_fn("collective_time")(op, float(nbytes), int(nranks), level, algorithm, machine)
    except _core.UserError as e:
        raise _core.UserError(where + str(e)) from None
    return CollectiveTime(info)
