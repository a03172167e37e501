"""CANN PyPTO's debug-mode output folder: with ``debug_options={"compile_debug_mode": 1}`` or
``{"runtime_debug_mode": 1}`` each call of a jit function writes
``$TILE_FWK_OUTPUT_DIR/<function>_<pid>_<time>/`` (``./output`` by default), where PyPTO's
tooling and its tests look:

* ``program.json``: the compiled program at every IR level (``tensor_graph``, ``tile_graph``,
  ``block_graph``, ``exec_graph``: the JSON of ``Program.to_json``);
* ``dyn_topo.txt``: the run's task graph, a CSV in PyPTO's columns (``seqNo, taskId, rootIndex,
  rootHash, opmagic, leafIndex, leafHash, coreType, psgId, wrapId, staticSuccCount,
  successors...``); a task here is one launch of a kernel (its grid), ``leafIndex`` / ``leafHash``
  the kernel's id and name, ``coreType`` 0 for vector and 1 for cube kernels (PyPTO's AIV / AIC),
  the successors the launches that waited for it;
* ``tilefwk_L1_prof_data.json``: per worker thread (PyPTO's block), the tasks it ran with their
  start and end in ns from the start of the run (a launch's grid runs as one or more tasks);
* ``merged_swimlane.json``: the run's swimlane (the Chrome trace of pypto.tools.swimlane).

``rootIndex`` / ``rootHash`` are the function, ``opmagic`` the kernel id and ``psgId`` /
``wrapId`` -1: they name NPU scheduling structures this backend does not have."""

from __future__ import annotations

import csv
import json
import os
import time
from collections import defaultdict
from typing import Any, Dict, List
from . import swimlane

_calls: Dict[str, int] = defaultdict(int)  # seqNo: calls per function in this process
last_folder = ""  # the folder the last call wrote (pypto_impl.LogTopFolder)


def output_dir(function: str) -> str:
    """A new ``<function>_<pid>_<time>`` folder under $TILE_FWK_OUTPUT_DIR (default ./output)."""
    root = os.environ.get("TILE_FWK_OUTPUT_DIR") or os.path.join(os.getcwd(), "output")
    base = os.path.join(root, f"{function}_{os.getpid()}_{time.strftime('%Y%m%d%H%M%S')}")
    path, n = base, 1
    while os.path.exists(path):
        path, n = f"{base}_{n}", n + 1
    os.makedirs(path)
    return path


def _core_type(kernel: Dict[str, Any]) -> int:
    return 1 if kernel.get("core") == "AIC" else 0


def write(program: Any, stats: Dict[str, Any], function: str, workers: int) -> str:
    """Writes the folder for one traced call (``stats`` with ``events`` and ``deps``); returns it."""
    global last_folder
    path = last_folder = output_dir(function)
    seq = _calls[function]
    _calls[function] += 1
    levels = {lvl: json.loads(program.to_json(lvl))
              for lvl in ("tensor_graph", "tile_graph", "block_graph", "exec_graph")}
    with open(os.path.join(path, "program.json"), "w") as fh:
        json.dump({"function": function, **levels}, fh)
    exec_json = levels["exec_graph"]
    kernels = {k["id"]: k for k in exec_json.get("kernels", [])}
    events = sorted((tuple(e) for e in stats.get("events", [])), key=lambda e: (e[5], e[0]))
    launch_kernel: Dict[int, int] = {}
    for e in events:
        launch_kernel[e[1]] = e[2]
    successors: Dict[int, List[int]] = defaultdict(list)
    for launch, deps in enumerate(stats.get("deps", [])):
        for d in deps:
            successors[d].append(launch)
            launch_kernel.setdefault(launch, -1)
    with open(os.path.join(path, "dyn_topo.txt"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["seqNo", "taskId", "rootIndex", "rootHash", "opmagic", "leafIndex", "leafHash", "coreType",
                    "psgId", "wrapId", "staticSuccCount", "successors"])
        for launch in sorted(launch_kernel):
            k = launch_kernel[launch]
            kern = kernels.get(k, {})
            succ = sorted(successors.get(launch, []))
            w.writerow([seq, launch, 0, function, k, k, kern.get("name", f"kernel{k}"), _core_type(kern), -1, -1,
                        len(succ), *succ])
    blocks: Dict[int, List[Dict[str, Any]]] = defaultdict(list)
    for worker, launch, k, first, count, start, end in events:
        blocks[worker].append({"seqNo": seq, "taskId": launch, "leafIndex": k, "leafHash": kernels.get(k, {}).get(
            "name", f"kernel{k}"), "firstPoint": first, "numPoints": count, "execStart": start, "execEnd": end})
    with open(os.path.join(path, "tilefwk_L1_prof_data.json"), "w") as fh:
        json.dump([{"blockIdx": b, "coreType": "CPU", "tasks": blocks[b]} for b in sorted(blocks)], fh)
    with open(os.path.join(path, "merged_swimlane.json"), "w") as fh:
        json.dump(swimlane.build_trace(events, stats, exec_json, function, workers=workers), fh)
    return path
