"""The machine model's report of a simulated call (SimReport: predicted time, bound, utilization,
the swimlane) and the modeled chips (Machine, machine, machines). pypto.sim (tools/sim.py) runs
the simulation and describes the model; docs/sim.md."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List

import pypto._core as _core
from . import swimlane

__all__ = ["SimReport", "Machine", "machine", "machines"]


class InfoRecord:
    """A description the model returns as a dict, its entries as attributes (``as_dict()`` gives
    the dict back)."""

    def __init__(self, info: Dict[str, Any]) -> None:
        self._info = dict(info)
        for k, v in info.items():
            setattr(self, k, v)

    def as_dict(self) -> Dict[str, Any]:
        return dict(self._info)


class Machine(InfoRecord):
    """A chip description: every number of the model as an attribute (``gm_bandwidth_gbps``,
    ``cube_fp16_tflops``, ``aic_cores``, ``ub_bytes``, ...)."""

    def __repr__(self) -> str:
        i = self._info
        return (f"Machine({i['name']!r}: {i['aic_cores']} AIC + {i['aiv_cores']} AIV at {i['clock_ghz']} GHz, "
                f"{i['gm_bandwidth_gbps']:.0f} GB/s, {i['cube_fp16_tflops']:.0f} fp16 TFLOPS)")


def machine(name: str = "a2a3") -> Machine:
    """The description of machine `name` ("a2a3": Ascend 910B class, "a5": Ascend 950 class)."""
    info = _core.machine_info(name)
    if not info["has_model"]:
        raise _core.UserError(f"machine {name!r} has no performance model\nhint: use one of "
                              f"{[n for n in _core.machine_names() if _core.machine_info(n)['has_model']]}")
    return Machine(info)


_machine = machine


def machines() -> List[str]:
    """The machines with a performance model."""
    return [n for n in _core.machine_names() if _core.machine_info(n)["has_model"]]


class SimReport:
    """What the model predicts for one call.

    ``outputs`` (the call's results, computed on the CPU), ``total_us``, ``bound`` ("memory",
    "cube", "vector" or "dispatch": the resource whose lower bound is largest), ``bounds_us``
    (each resource's lower bound), ``utilization`` ({"AIC": ..., "AIV": ...}), ``machine``,
    ``kernels`` (per kernel: tasks, busy time, pipe times, bytes, flops), ``pipes_us`` (each pipe's
    busy time over all cores), ``hbm_read_bytes``, ``l2_read_bytes``, ``write_bytes``,
    ``cube_flops``, ``tasks`` (columns: core kind, core, launch, kernel, start_us, end_us, pipes).
    """

    def __init__(self, function: str, data: Dict[str, Any], outputs: Any, exec_json: Dict[str, Any]) -> None:
        self.function = function
        self.outputs = outputs
        self.machine = machine(data["machine"])
        self.total_us: float = data["total_us"]
        self.bound: str = data["bound"]
        self.bounds_us: Dict[str, float] = dict(data["bounds_us"])
        self.utilization: Dict[str, float] = dict(data["utilization"])
        self.kernels: List[Dict[str, Any]] = sorted(data["kernels"], key=lambda k: -k["busy_us"])
        self.output_path = ""  # run_mode SIM: where write_outputs put merged_swimlane.json
        self.pipes_us: Dict[str, float] = dict(data["pipes_us"])
        self.hbm_read_bytes: float = data["hbm_read_bytes"]
        self.l2_read_bytes: float = data["l2_read_bytes"]
        self.write_bytes: float = data["write_bytes"]
        self.cube_flops: float = data["cube_flops"]
        self.tasks: Dict[str, List[Any]] = data["tasks"]
        self._exec_json = exec_json

    @classmethod
    def from_run(cls, function: str, compiled: Any, stats: Dict[str, Any], machine_name: str, outs: Any,
                 torch_in: bool) -> "SimReport":
        data = compiled.program.simulate(stats.get("launch_records", []), stats.get("deps", []), machine_name)
        exec_json = json.loads(compiled.program.to_json("exec_graph"))
        return cls(function, data, outs, exec_json)

    @property
    def gm_bytes(self) -> float:
        """Bytes moved between global memory (HBM or L2) and the cores."""
        return self.hbm_read_bytes + self.l2_read_bytes + self.write_bytes

    def summary(self) -> str:
        m = self.machine
        lines = [f"simulation of {self.function or '?'} on {m.name}: {self.total_us:.1f} us, {self.bound}-bound",
                 "  lower bounds: " + ", ".join(f"{k} {v:.1f} us" for k, v in self.bounds_us.items()),
                 f"  utilization: AIC {self.utilization['AIC']:.0%}, AIV {self.utilization['AIV']:.0%}",
                 f"  traffic: HBM read {self.hbm_read_bytes / 2**20:.1f} MiB, L2 read "
                 f"{self.l2_read_bytes / 2**20:.1f} MiB, written {self.write_bytes / 2**20:.1f} MiB"]
        if self.cube_flops:
            lines.append(f"  cube: {self.cube_flops / 1e9:.2f} GFLOP, "
                         f"{self.cube_flops / max(self.total_us, 1e-9) / 1e6:.1f} TFLOPS achieved of "
                         f"{m.cube_fp16_tflops:.0f} (fp16 peak)")
        lines.append("  kernels (busy us summed over all cores, tasks, pipes us summed over all cores):")
        for k in self.kernels:
            pipes = ", ".join(f"{p} {v:.1f}" for p, v in k["pipes_us"].items() if v > 0)
            lines.append(f"    {k['name']:<24} {k['core']} {k['busy_us']:10.1f} {k['tasks']:6d}  {pipes}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"SimReport({self.function!r} on {self.machine.name}: {self.total_us:.1f} us, {self.bound}-bound, "
                f"AIC {self.utilization['AIC']:.0%}, AIV {self.utilization['AIV']:.0%})")

    def trace(self) -> Dict[str, Any]:
        """The predicted schedule as a Chrome trace (pypto.tools.swimlane's format)."""
        return swimlane.build_sim_trace(self, self._exec_json)

    def write_swimlane(self, path: str) -> str:
        """Writes the predicted schedule (lanes per modeled core and pipe) as a Chrome trace."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(self.trace(), f)
        return path

    def write_outputs(self, dump_dir: str = "") -> str:
        """CANN PyPTO's layout of a SIM run: output/<fn>_<pid>_<time>/CostModelSimulationOutput/
        merged_swimlane.json (and sim_swimlane.json plus sim.txt in the dump directory, if any)."""
        stamp = time.strftime("%Y%m%d%H%M%S")
        out_dir = os.path.join(os.getcwd(), "output", f"{self.function}_{os.getpid()}_{stamp}",
                               "CostModelSimulationOutput")
        path = self.write_swimlane(os.path.join(out_dir, "merged_swimlane.json"))
        with open(os.path.join(out_dir, "sim.txt"), "w") as f:
            f.write(self.summary() + "\n")
        if dump_dir:
            self.write_swimlane(os.path.join(dump_dir, "sim_swimlane.json"))
            with open(os.path.join(dump_dir, "sim.txt"), "w") as f:
                f.write(self.summary() + "\n")
        return path
