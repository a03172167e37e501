"""Swimlanes: the runtime's task trace as a Chrome trace (``swimlane.json``, opens in Perfetto
and chrome://tracing) and as a text summary (``swimlane.txt``).

One trace, two consumers: :func:`build_trace` turns ``Program.run(..., trace=True)`` events
into the trace dict; :func:`summarize` reads only that dict (or the file), so
``pypto summary swimlane.json`` prints exactly what ``swimlane.txt`` holds.

Layout: process 1 is the compiled function; tid 0 is the scheduler (the control-program walk
that builds the launch instances, then one marker per launch when its first task starts);
tid ``w + 1`` is worker ``w``. Each task is a complete event (``"ph": "X"``) whose args carry
the kernel, the launch instance, the task id, the grid points it ran and the iteration of
the launch. Dependencies between launches are flow events (``"ph": "s"`` / ``"f"``) from the
last task of the predecessor to the first task of the successor.

Times: the runtime stamps tasks from the start of execution; the trace puts the control
program walk (``build_ms``) first, so ts 0 is the start of the call's runtime work.
"""

from __future__ import annotations

import bisect
import json
import os
from collections import defaultdict
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

SCHEDULER_TID = 0
PID = 1

Event = Tuple[int, int, int, int, int, int, int]  # worker, launch, kernel, first, num, start_ns, end_ns


def _static_launches(exec_json: Dict[str, Any]) -> Tuple[Dict[int, Dict[str, Any]], Dict[int, List[int]]]:
    """Launch nodes of the execution graph by id, and the nodes of each kernel."""
    nodes: Dict[int, Dict[str, Any]] = {}
    by_kernel: Dict[int, List[int]] = defaultdict(list)

    def walk(region: List[Dict[str, Any]], loops: Tuple[Dict[str, Any], ...]) -> None:
        for e in region:
            if e["kind"] == "loop":
                walk(e["body"], loops + (e,))
            else:
                nodes[e["id"]] = dict(e, loops=list(loops))
                by_kernel[e["kernel"]].append(e["id"])
    walk(exec_json.get("body", []), ())
    return nodes, by_kernel


def loop_indices(loops: Sequence[Dict[str, Any]], iteration: int) -> Optional[Dict[str, int]]:
    """The loop index values of the `iteration`-th run of a launch inside `loops` (outermost
    first), when every bound is a constant; None otherwise (symbolic bounds need the call's
    shapes)."""
    try:
        ranges = [range(int(l["start"]), int(l["stop"]), int(l["step"])) for l in loops]
    except (TypeError, ValueError):
        return None
    out: Dict[str, int] = {}
    rest = iteration
    for l, r in reversed(list(zip(loops, ranges))):
        if len(r) == 0:
            return None
        out[l["var"]] = r[rest % len(r)]
        rest //= len(r)
    return dict(reversed(list(out.items())))


def instance_loops(instances: Sequence[Tuple[int, int]], iteration: Dict[int, int],
                   exec_json: Dict[str, Any]) -> Dict[int, Dict[str, int]]:
    """Loop index values of each launch instance whose kernel is launched from one place."""
    nodes, by_kernel = _static_launches(exec_json)
    out: Dict[int, Dict[str, int]] = {}
    for iid, kernel in instances:
        ns = by_kernel.get(kernel, [])
        if len(ns) == 1 and nodes[ns[0]]["loops"]:
            idx = loop_indices(nodes[ns[0]]["loops"], iteration[iid])
            if idx is not None:
                out[iid] = idx
    return out


def launch_dependencies(instances: Sequence[Tuple[int, int]], exec_json: Dict[str, Any],
                        runtime_deps: Optional[Sequence[Sequence[int]]] = None
                        ) -> Tuple[Dict[int, List[int]], Dict[int, int], str]:
    """Predecessors of each launch instance, the iteration of each instance, and the source.

    `instances` are (instance id, kernel id) in call order. With `runtime_deps` (one list per
    instance, from a runtime that exposes them) the edges are exact ("runtime"). Otherwise
    they come from the static execution graph ("static"): instance i is the k-th run of its
    kernel's launch node; it depends on the k-th run of every node that node depends on (the
    exec graph's deps are between launches of one region, i.e. of one loop iteration).
    Dependencies across iterations or across regions are then missing.
    """
    iteration: Dict[int, int] = {}
    count: Dict[int, int] = defaultdict(int)
    for iid, kernel in instances:
        iteration[iid] = count[kernel]
        count[kernel] += 1
    if runtime_deps is not None:
        return {i: list(runtime_deps[i]) for i, _ in instances if i < len(runtime_deps)}, iteration, "runtime"
    nodes, by_kernel = _static_launches(exec_json)
    # (static node, iteration) -> instance
    at: Dict[Tuple[int, int], int] = {}
    node_of: Dict[int, int] = {}
    for iid, kernel in instances:
        ns = by_kernel.get(kernel, [])
        if len(ns) == 1:  # a kernel launched from one place: its instances are that node's runs
            node_of[iid] = ns[0]
            at[(ns[0], iteration[iid])] = iid
    deps: Dict[int, List[int]] = {}
    for iid, _ in instances:
        n = node_of.get(iid)
        preds = []
        if n is not None:
            for d in nodes[n].get("deps", []):
                p = at.get((d, iteration[iid]))
                if p is not None and p < iid:
                    preds.append(p)
        deps[iid] = sorted(preds)
    return deps, iteration, "static"


def build_trace(events: Iterable[Event], stats: Dict[str, Any], exec_json: Dict[str, Any],
                function: str = "", workers: int = 0) -> Dict[str, Any]:
    """The Chrome trace (a dict in the JSON object format) of one traced run."""
    events = sorted((tuple(e) for e in events), key=lambda e: (e[5], e[0]))
    kernels = {k["id"]: k for k in exec_json.get("kernels", [])}
    function = function or exec_json.get("function", "")
    build_us = float(stats.get("build_ms", 0.0)) * 1000.0
    exec_us = float(stats.get("exec_ms", 0.0)) * 1000.0

    def kname(k: int) -> str:
        return kernels[k]["name"] if k in kernels else f"kernel{k}"

    # Launch instances seen in the trace, with their tasks.
    inst_tasks: Dict[int, List[int]] = defaultdict(list)
    inst_kernel: Dict[int, int] = {}
    for i, e in enumerate(events):
        inst_tasks[e[1]].append(i)
        inst_kernel[e[1]] = e[2]
    instances = sorted(inst_kernel.items())
    deps, iteration, dep_source = launch_dependencies(instances, exec_json, stats.get("deps"))
    loops = instance_loops(instances, iteration, exec_json)

    worker_ids = sorted({e[0] for e in events} | set(range(workers)))
    out: List[Dict[str, Any]] = [
        {"ph": "M", "pid": PID, "name": "process_name", "args": {"name": f"pypto {function}"}},
        {"ph": "M", "pid": PID, "tid": SCHEDULER_TID, "name": "thread_name", "args": {"name": "scheduler"}},
        {"ph": "M", "pid": PID, "tid": SCHEDULER_TID, "name": "thread_sort_index", "args": {"sort_index": 0}},
    ]
    for w in worker_ids:
        out.append({"ph": "M", "pid": PID, "tid": w + 1, "name": "thread_name", "args": {"name": f"worker {w}"}})
        out.append({"ph": "M", "pid": PID, "tid": w + 1, "name": "thread_sort_index", "args": {"sort_index": w + 1}})
    # build_ms covers the kernels' compilation or loading (compile_ms), then the control program.
    compile_us = min(float(stats.get("compile_ms", 0.0)) * 1000.0, build_us)
    if compile_us > 0:
        out.append({"ph": "X", "pid": PID, "tid": SCHEDULER_TID, "name": "compile kernels", "cat": "scheduler",
                    "ts": 0.0, "dur": compile_us, "args": {"what": "generate and compile the native kernels"}})
    # The control program runs before execution, or (many launches) beside it from its start.
    overlapped = bool(stats.get("control_overlapped", False))
    out.append({"ph": "X", "pid": PID, "tid": SCHEDULER_TID, "name": "control program", "cat": "scheduler",
                "ts": build_us if overlapped else compile_us,
                "dur": float(stats.get("control_ms", 0.0)) * 1000.0 if overlapped else build_us - compile_us,
                "args": {"what": "walk runtime loops, bind windows, make launch instances and their dependencies",
                         "launches": len(instances)}})
    for i, e in enumerate(events):
        worker, launch, kernel, first, num, t0, t1 = e
        k = kernels.get(kernel, {})
        out.append({"ph": "X", "pid": PID, "tid": worker + 1, "name": kname(kernel), "cat": k.get("core", "task"),
                    "ts": build_us + t0 / 1000.0, "dur": max(0.0, (t1 - t0) / 1000.0),
                    "args": {"kernel": kname(kernel), "kernel_id": kernel, "core": k.get("core", ""),
                             "launch": launch, "task": i, "iteration": iteration.get(launch, 0),
                             "loop": loops.get(launch, {}),
                             "grid": k.get("grid", []), "points": [first, first + num]}})
    launches = []
    for iid, kernel in instances:
        ts = inst_tasks[iid]
        start = min(events[t][5] for t in ts)
        end = max(events[t][6] for t in ts)
        busy = sum(events[t][6] - events[t][5] for t in ts)
        out.append({"ph": "i", "s": "t", "pid": PID, "tid": SCHEDULER_TID, "name": f"launch#{iid} {kname(kernel)}",
                    "cat": "launch", "ts": build_us + start / 1000.0,
                    "args": {"launch": iid, "kernel": kname(kernel), "deps": deps.get(iid, []),
                             "iteration": iteration.get(iid, 0)}})
        launches.append({"id": iid, "kernel": kname(kernel), "kernel_id": kernel,
                         "core": kernels.get(kernel, {}).get("core", ""), "iteration": iteration.get(iid, 0),
                         "loop": loops.get(iid, {}),
                         "deps": deps.get(iid, []), "tasks": len(ts), "start_us": build_us + start / 1000.0,
                         "end_us": build_us + end / 1000.0, "busy_us": busy / 1000.0})
    # Flow events: from the predecessor's last-ending task to the successor's first task.
    flow = 0
    for iid, _ in instances:
        first_task = min(inst_tasks[iid], key=lambda t: events[t][5])
        fe = events[first_task]
        for p in deps.get(iid, []):
            if p not in inst_tasks:
                continue
            last = max(inst_tasks[p], key=lambda t: events[t][6])
            pe = events[last]
            flow += 1
            s_ts = build_us + (pe[5] + pe[6]) / 2000.0  # inside the predecessor's slice
            out.append({"ph": "s", "pid": PID, "tid": pe[0] + 1, "id": flow, "name": "dep", "cat": "dep",
                        "ts": s_ts})
            out.append({"ph": "f", "bp": "e", "pid": PID, "tid": fe[0] + 1, "id": flow, "name": "dep", "cat": "dep",
                        "ts": build_us + (fe[5] + fe[6]) / 2000.0})
    return {
        "traceEvents": out,
        "displayTimeUnit": "ns",
        "otherData": {
            "format": "pypto-swimlane-1",
            "function": function,
            "tasks": int(stats.get("tasks", len(events))),
            "launches": int(stats.get("launches", len(instances))),
            "build_ms": float(stats.get("build_ms", 0.0)),
            "compile_ms": float(stats.get("compile_ms", 0.0)),
            "exec_ms": float(stats.get("exec_ms", 0.0)),
            "workers": len(worker_ids),
            "exec_start_us": build_us,
            "exec_end_us": build_us + exec_us,
            "dep_source": dep_source,
            "flows": flow,
            "launch_instances": launches,
        },
    }


PIPE_PID = 2  # a simulated trace: the modeled pipes of each core


def build_sim_trace(report: Any, exec_json: Dict[str, Any]) -> Dict[str, Any]:
    """The schedule pypto.sim predicts, in the format of build_trace: process 1 has a lane per
    modeled core (AIC first, then AIV) holding its tasks, and the scheduler lane with a marker per
    launch; process 2 has a lane per core and pipe (MTE2, MTE1, M, FIX, V, MTE3) showing each
    pipe's busy time within the task (from the task's start: the model gives busy times, not the
    order inside a task)."""
    kernels = {k["id"]: k for k in exec_json.get("kernels", [])}
    t = report.tasks
    n = len(t["start_us"])
    cores = sorted({(t["kind"][i], t["core"][i]) for i in range(n)}, key=lambda kc: (kc[0] != "AIC", kc[1]))
    tid = {kc: i + 1 for i, kc in enumerate(cores)}
    pipes = ["MTE2", "MTE1", "M", "FIX", "V", "MTE3"]
    fn = report.function
    out: List[Dict[str, Any]] = [
        {"ph": "M", "pid": PID, "name": "process_name", "args": {"name": f"pypto sim {fn} on {report.machine.name}"}},
        {"ph": "M", "pid": PID, "tid": SCHEDULER_TID, "name": "thread_name", "args": {"name": "scheduler"}},
        {"ph": "M", "pid": PIPE_PID, "name": "process_name", "args": {"name": "pipes"}},
    ]
    for kc, i in tid.items():
        out.append({"ph": "M", "pid": PID, "tid": i, "name": "thread_name", "args": {"name": f"{kc[0]} {kc[1]}"}})
        out.append({"ph": "M", "pid": PID, "tid": i, "name": "thread_sort_index", "args": {"sort_index": i}})
    pipe_tid: Dict[Tuple[Tuple[str, int], str], int] = {}
    launch_rows: Dict[int, Dict[str, Any]] = {}
    for i in range(n):
        kc = (t["kind"][i], t["core"][i])
        k = t["kernel"][i]
        name = kernels.get(k, {}).get("name", f"kernel{k}")
        s0, s1 = t["start_us"][i], t["end_us"][i]
        launch = t["launch"][i]
        out.append({"ph": "X", "pid": PID, "tid": tid[kc], "name": name, "cat": kc[0], "ts": s0,
                    "dur": max(0.0, s1 - s0),
                    "args": {"kernel": name, "kernel_id": k, "core": kc[0], "launch": launch,
                             "point": t["point"][i], **{p: round(t[p][i], 4) for p in pipes if t[p][i] > 0}}})
        for p in pipes:
            d = t[p][i]
            if d <= 0:
                continue
            key = (kc, p)
            if key not in pipe_tid:
                pipe_tid[key] = len(pipe_tid) + 1
            out.append({"ph": "X", "pid": PIPE_PID, "tid": pipe_tid[key], "name": p, "cat": "pipe", "ts": s0,
                        "dur": min(d, max(0.0, s1 - s0)), "args": {"kernel": name, "launch": launch}})
        row = launch_rows.setdefault(launch, {"id": launch, "kernel": name, "kernel_id": k, "core": kc[0],
                                              "iteration": 0, "loop": {}, "deps": [], "tasks": 0,
                                              "start_us": s0, "end_us": s1, "busy_us": 0.0})
        row["tasks"] += 1
        row["start_us"] = min(row["start_us"], s0)
        row["end_us"] = max(row["end_us"], s1)
        row["busy_us"] += s1 - s0
    for (kc, p), i in sorted(pipe_tid.items(), key=lambda x: x[1]):
        out.append({"ph": "M", "pid": PIPE_PID, "tid": i, "name": "thread_name",
                    "args": {"name": f"{kc[0]} {kc[1]} {p}"}})
        out.append({"ph": "M", "pid": PIPE_PID, "tid": i, "name": "thread_sort_index", "args": {"sort_index": i}})
    for row in sorted(launch_rows.values(), key=lambda r: r["id"]):
        out.append({"ph": "i", "s": "t", "pid": PID, "tid": SCHEDULER_TID, "name": f"launch#{row['id']} {row['kernel']}",
                    "cat": "launch", "ts": row["start_us"], "args": {"launch": row["id"], "kernel": row["kernel"]}})
    return {
        "traceEvents": out,
        "displayTimeUnit": "ns",
        "otherData": {
            "format": "pypto-sim-swimlane-1",
            "function": fn,
            "machine": report.machine.as_dict(),
            "total_us": report.total_us,
            "bound": report.bound,
            "bounds_us": report.bounds_us,
            "utilization": report.utilization,
            "pipes_us": report.pipes_us,
            "tasks": n,
            "launches": len(launch_rows),
            "workers": len(cores),
            "exec_start_us": 0.0,
            "exec_end_us": report.total_us,
            "dep_source": "simulated",
            "launch_instances": sorted(launch_rows.values(), key=lambda r: r["id"]),
        },
    }


# --- the text summary -------------------------------------------------------------------------

def load(path: str) -> Dict[str, Any]:
    with open(path) as fh:
        trace = json.load(fh)
    if isinstance(trace, list):  # the JSON array format
        trace = {"traceEvents": trace}
    return trace


def _lanes(trace: Dict[str, Any]) -> Dict[int, str]:
    names = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid", PID) == PID:
            names[e["tid"]] = e["args"]["name"]
    return names


def critical_path(launches: List[Dict[str, Any]]) -> List[Tuple[Dict[str, Any], str]]:
    """Approximate critical path: from the launch that ends last, repeatedly step to the
    predecessor that ended last (the one that released it); for a launch with no known
    predecessor, step to the launch that ended last before it started (it waited for a worker
    or an unrecorded dependency), if any. Returns (launch, how it was entered) from first to
    last; "how" is "start" for the first, then "dep" or "time"."""
    if not launches:
        return []
    by_id = {l["id"]: l for l in launches}
    by_end = sorted(launches, key=lambda l: (l["end_us"], l["id"]))
    ends = [l["end_us"] for l in by_end]
    cur = by_end[-1]
    chain = [cur]       # last to first
    entered = []        # entered[i]: how chain[i] was released by chain[i + 1]
    seen = {cur["id"]}
    while True:
        preds = [by_id[p] for p in cur["deps"] if p in by_id and p not in seen]
        how = "dep"
        if not preds:
            i = bisect.bisect_right(ends, cur["start_us"]) - 1
            while i >= 0 and by_end[i]["id"] in seen:
                i -= 1
            preds = [by_end[i]] if i >= 0 else []
            how = "time"
        if not preds:
            break
        cur = max(preds, key=lambda l: (l["end_us"], l["id"]))
        entered.append(how)
        chain.append(cur)
        seen.add(cur["id"])
    entered.append("start")
    return list(zip(reversed(chain), reversed(entered)))


def summary_data(trace: Dict[str, Any]) -> Dict[str, Any]:
    """The numbers of the summary, as a dict (tests and programs read this)."""
    other = trace.get("otherData", {})
    lanes = _lanes(trace)
    # (a simulated trace also has pipe lanes, in their own process: not tasks)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid", PID) == PID]
    tasks = [e for e in events if e.get("tid", 0) != SCHEDULER_TID]
    sched = [e for e in events if e.get("tid", 0) == SCHEDULER_TID]
    if tasks:
        t_lo = min(e["ts"] for e in tasks)
        t_hi = max(e["ts"] + e["dur"] for e in tasks)
    else:
        t_lo = t_hi = 0.0
    t_lo = min(t_lo, other.get("exec_start_us", t_lo))
    t_hi = max(t_hi, other.get("exec_end_us", t_hi))
    span = max(t_hi - t_lo, 1e-9)
    total = max(t_hi, max((e["ts"] + e["dur"] for e in sched), default=0.0))
    lane_rows = []
    for tid in sorted(lanes):
        evs = sched if tid == SCHEDULER_TID else [e for e in tasks if e["tid"] == tid]
        busy = sum(e["dur"] for e in evs)
        denom = total if tid == SCHEDULER_TID else span
        lane_rows.append({"tid": tid, "lane": lanes[tid], "events": len(evs), "busy_us": busy,
                          "utilization": busy / denom if denom > 0 else 0.0})
    per_kernel: Dict[str, Dict[str, Any]] = {}
    for e in tasks:
        k = per_kernel.setdefault(e["name"], {"kernel": e["name"], "core": e.get("args", {}).get("core", ""),
                                               "tasks": 0, "time_us": 0.0, "launches": set()})
        k["tasks"] += 1
        k["time_us"] += e["dur"]
        k["launches"].add(e.get("args", {}).get("launch"))
    kernels = sorted(per_kernel.values(), key=lambda k: -k["time_us"])
    for k in kernels:
        k["launches"] = len(k["launches"])
    launches = other.get("launch_instances", [])
    path = critical_path(launches)
    return {
        "function": other.get("function", ""),
        "tasks": len(tasks),
        "launches": len(launches) if launches else len({e.get("args", {}).get("launch") for e in tasks}),
        "workers": sum(1 for r in lane_rows if r["tid"] != SCHEDULER_TID),
        "exec_span_us": span,
        "total_us": total,
        "busy_us": sum(e["dur"] for e in tasks),
        "lanes": lane_rows,
        "kernels": kernels,
        "critical_path": [{"launch": l["id"], "kernel": l["kernel"], "start_us": l["start_us"], "end_us": l["end_us"],
                           "via": how} for l, how in path],
        "critical_path_us": sum(l["end_us"] - l["start_us"] for l, _ in path),
        "dep_source": other.get("dep_source", "unknown"),
        "flows": sum(1 for e in trace["traceEvents"] if e.get("ph") == "s"),
    }


def _us(v: float) -> str:
    if v >= 1000.0:
        return f"{v / 1000.0:.3f} ms"
    return f"{v:.1f} us"


def summarize(trace: Dict[str, Any], top: int = 10) -> str:
    """The text summary of a trace (what swimlane.txt holds)."""
    d = summary_data(trace)
    out = []
    out.append(f"swimlane summary: {d['function'] or '?'}")
    out.append(f"  tasks {d['tasks']}, launches {d['launches']}, workers {d['workers']}, "
               f"execution span {_us(d['exec_span_us'])}, total with control program {_us(d['total_us'])}")
    par = d["busy_us"] / d["exec_span_us"] if d["exec_span_us"] > 0 else 0.0
    out.append(f"  busy time {_us(d['busy_us'])} over all workers, average parallelism {par:.2f}")
    other = trace.get("otherData", {})
    if str(other.get("format", "")).startswith("pypto-sim"):  # pypto.sim: the modeled chip
        m = other.get("machine", {})
        out.append(f"  simulated on {m.get('name', '?')} ({m.get('aic_cores', '?')} AIC + {m.get('aiv_cores', '?')} "
                   f"AIV): {_us(other.get('total_us', 0.0))}, {other.get('bound', '?')}-bound; lower bounds "
                   + ", ".join(f"{k} {_us(v)}" for k, v in other.get("bounds_us", {}).items()))
        out.append("  pipes (busy over all cores): "
                   + ", ".join(f"{k} {_us(v)}" for k, v in other.get("pipes_us", {}).items() if v > 0))
    out.append("")
    out.append("lanes (utilization = busy / execution span; the scheduler's = its busy / total)")
    out.append(f"  {'lane':<12} {'events':>7} {'busy':>12} {'util':>7}")
    for r in d["lanes"]:
        out.append(f"  {r['lane']:<12} {r['events']:>7} {_us(r['busy_us']):>12} {100 * r['utilization']:>6.1f}%")
    out.append("")
    out.append(f"top kernels by time (of {len(d['kernels'])})")
    out.append(f"  {'kernel':<32} {'core':<5} {'launches':>8} {'tasks':>6} {'time':>12} {'share':>7} {'avg/task':>10}")
    busy = d["busy_us"] or 1e-9
    for k in d["kernels"][:top]:
        out.append(f"  {k['kernel'][:32]:<32} {k['core']:<5} {k['launches']:>8} {k['tasks']:>6} "
                   f"{_us(k['time_us']):>12} {100 * k['time_us'] / busy:>6.1f}% "
                   f"{_us(k['time_us'] / max(k['tasks'], 1)):>10}")
    out.append("")
    cp = d["critical_path"]
    share = d["critical_path_us"] / d["exec_span_us"] if d["exec_span_us"] > 0 else 0.0
    out.append(f"critical path: {len(cp)} launches, {_us(d['critical_path_us'])} of launch time "
               f"({100 * share:.0f}% of the execution span)")
    out.append("  how: from the launch that ends last, step to its predecessor that ended last (via=dep,"
               f" dependencies from the {d['dep_source']} graph);")
    out.append("  with none known, to the launch that ended last before it started (via=time). Approximate.")
    out.append("  wait = from the end of the previous launch on the path to this one's first task (queueing).")
    rows = [(c, c["start_us"] - cp[i - 1]["end_us"] if i else 0.0) for i, c in enumerate(cp)]
    shown = rows if len(rows) <= 2 * top else rows[:top] + [None] + rows[-top:]
    for r in shown:
        if r is None:
            out.append(f"  ... {len(cp) - 2 * top} more")
            continue
        c, wait = r
        out.append(f"  launch#{c['launch']:<5} {c['kernel'][:32]:<32} {_us(c['start_us']):>12} -> "
                   f"{_us(c['end_us']):>12}  ({_us(c['end_us'] - c['start_us'])}, wait {_us(wait)}, via {c['via']})")
    out.append("")
    out.append(f"dependencies: {d['flows']} flow events ({d['dep_source']})")
    return "\n".join(out) + "\n"


def write(dump_dir: str, events: Iterable[Event], stats: Dict[str, Any], exec_json: Dict[str, Any],
          function: str = "", workers: int = 0) -> Tuple[str, str]:
    """Writes dump_dir/swimlane.json, swimlane.txt and swimlane.html; returns the first two paths."""
    os.makedirs(dump_dir, exist_ok=True)
    trace = build_trace(events, stats, exec_json, function, workers)
    jpath = os.path.join(dump_dir, "swimlane.json")
    tpath = os.path.join(dump_dir, "swimlane.txt")
    with open(jpath, "w") as fh:
        json.dump(trace, fh, separators=(",", ":"))
    with open(tpath, "w") as fh:
        fh.write(summarize(trace))
    with open(os.path.join(dump_dir, "swimlane.html"), "w") as fh:
        fh.write(render_html(trace))
    return jpath, tpath


# --- swimlane.html: the same trace drawn without a trace viewer -------------------------------

_PALETTE = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
            "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6"]

_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pypto swimlanes: __TITLE__</title>
<style>
body { font: 13px sans-serif; margin: 0; }
header { padding: 6px 10px; background: #263238; color: #fff; }
#wrap { overflow: auto; border-bottom: 1px solid #ccc; }
#info { padding: 6px 10px; white-space: pre-wrap; font-family: monospace; }
rect.task { stroke: #37474f; stroke-width: 0.5; cursor: pointer; }
rect.task.selected { stroke: #d50000; stroke-width: 2; }
line.flow { stroke: #e65100; stroke-width: 1; opacity: 0.7; }
text { font-size: 11px; }
#summary { padding: 6px 10px; white-space: pre; font-family: monospace; font-size: 12px; }
</style></head><body>
<header><b>pypto swimlanes: <span id="fn"></span></b> <span id="stat"></span>
 <label><input type="checkbox" id="flows" checked> dependencies</label>
 <button id="zin">zoom +</button> <button id="zout">zoom -</button></header>
<div id="wrap"><svg id="lanes"></svg></div>
<div id="info">click a task</div>
<div id="summary"></div>
<script type="application/json" id="trace-data">__DATA__</script>
<script type="application/json" id="summary-data">__SUMMARY__</script>
<script>
(function () {
  "use strict";
  var trace = JSON.parse(document.getElementById("trace-data").textContent);
  document.getElementById("summary").textContent = JSON.parse(document.getElementById("summary-data").textContent);
  var NS = "http://www.w3.org/2000/svg", LANE = 28, LEFT = 90, palette = __PALETTE__;
  var ev = trace.traceEvents, lanes = {}, tasks = [], flows = {}, colors = {}, nk = 0, tmax = 0;
  ev.forEach(function (e) {
    if (e.ph === "M" && e.name === "thread_name") lanes[e.tid] = e.args.name;
    if (e.ph === "X") { tasks.push(e); tmax = Math.max(tmax, e.ts + e.dur); }
    if (e.ph === "s" || e.ph === "f") { (flows[e.id] = flows[e.id] || {})[e.ph] = e; }
  });
  var tids = Object.keys(lanes).map(Number).sort(function (a, b) { return a - b; });
  var row = {}; tids.forEach(function (t, i) { row[t] = i; });
  document.getElementById("fn").textContent = (trace.otherData || {}).function || "";
  document.getElementById("stat").textContent = tasks.length + " events, " + tids.length + " lanes, " +
      tmax.toFixed(1) + " us";
  var scale = 1;
  function el(tag, a, p) { var e = document.createElementNS(NS, tag); for (var k in a) e.setAttribute(k, a[k]);
                           if (p) p.appendChild(e); return e; }
  function draw() {
    var svg = document.getElementById("lanes"), W = Math.max(800, (window.innerWidth - 40) * scale);
    svg.innerHTML = "";
    var px = (W - LEFT - 10) / Math.max(tmax, 1e-9);
    svg.setAttribute("width", W); svg.setAttribute("height", tids.length * LANE + 24);
    for (var g = 0; g <= 10; g++) {
      var x = LEFT + g * (W - LEFT - 10) / 10;
      el("line", {x1: x, x2: x, y1: 0, y2: tids.length * LANE, stroke: "#eee"}, svg);
      el("text", {x: x + 2, y: tids.length * LANE + 16, fill: "#777"}, svg).textContent = (g * tmax / 10).toFixed(1) + " us";
    }
    tids.forEach(function (t, i) {
      el("text", {x: 4, y: i * LANE + 18}, svg).textContent = lanes[t];
      el("line", {x1: 0, x2: W, y1: (i + 1) * LANE, y2: (i + 1) * LANE, stroke: "#ddd"}, svg);
    });
    tasks.forEach(function (e) {
      // Same color per kernel as graph.html (by kernel id).
      if (!(e.name in colors)) colors[e.name] = palette[(e.args && e.args.kernel_id !== undefined ?
                                                         e.args.kernel_id : nk++) % palette.length];
      var r = el("rect", {"class": "task", x: LEFT + e.ts * px, y: row[e.tid] * LANE + 4,
                          width: Math.max(1, e.dur * px), height: LANE - 8,
                          fill: e.tid === 0 ? "#cfd8dc" : colors[e.name]}, svg);
      el("title", {}, r).textContent = e.name + " " + e.dur.toFixed(2) + " us";
      r.addEventListener("click", function () {
        var old = svg.querySelector("rect.selected");
        if (old) old.setAttribute("class", "task");
        r.setAttribute("class", "task selected");
        document.getElementById("info").textContent = e.name + "  ts " + e.ts.toFixed(2) + " us  dur " +
            e.dur.toFixed(2) + " us  lane " + lanes[e.tid] + "\n" + JSON.stringify(e.args || {});
      });
    });
    if (document.getElementById("flows").checked) {
      Object.keys(flows).forEach(function (id) {
        var f = flows[id];
        if (!f.s || !f.f) return;
        el("line", {"class": "flow", x1: LEFT + f.s.ts * px, y1: row[f.s.tid] * LANE + LANE / 2,
                    x2: LEFT + f.f.ts * px, y2: row[f.f.tid] * LANE + LANE / 2}, svg);
      });
    }
  }
  document.getElementById("flows").addEventListener("change", draw);
  document.getElementById("zin").addEventListener("click", function () { scale *= 2; draw(); });
  document.getElementById("zout").addEventListener("click", function () { scale = Math.max(1, scale / 2); draw(); });
  draw();
  document.body.setAttribute("data-ready", "1");
})();
</script></body></html>
"""


def render_html(trace: Dict[str, Any]) -> str:
    """swimlane.html: a self-contained timeline of the trace (no network), with the summary."""
    import html as _html

    def blob(x: Any) -> str:
        return json.dumps(x, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")
    fn = trace.get("otherData", {}).get("function", "")
    return (_PAGE.replace("__TITLE__", _html.escape(fn)).replace("__PALETTE__", json.dumps(_PALETTE))
            .replace("__SUMMARY__", blob(summarize(trace))).replace("__DATA__", blob(trace)))
