"""White-box tools: swimlane.json / swimlane.txt, JSON pass dumps, graph.html, the `pypto` CLI."""

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

import pypto
from pypto import cli
from pypto.tools import graph_html, swimlane

F32 = pypto.DT_FP32
PASSES = ["tensor_graph", "infer_shapes", "expand_tiles", "partition", "fuse_instructions", "allocate_buffers",
          "build_exec_graph"]
LEVEL_OF = {"tensor_graph": "tensor_graph", "infer_shapes": "tensor_graph", "expand_tiles": "tile_graph",
            "partition": "block_graph", "fuse_instructions": "block_graph", "allocate_buffers": "block_graph",
            "build_exec_graph": "exec_graph"}


@pytest.fixture
def debug_all(tmp_path):
    before = pypto.get_debug_options()
    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True, swimlane=True, graph=True)
    yield str(tmp_path)
    pypto.set_debug_options(**before)


def make_softmax(run_mode="interp"):
    # Tiles of 8 x 128 over 256 columns: four kernels (max, sub-exp, sum, divide) with dependencies.
    @pypto.jit(runtime_options={"workers": 2, "run_mode": run_mode})
    def smx(x: pypto.Tensor((64, 256), F32)) -> pypto.Tensor((64, 256), F32):
        pypto.set_vec_tile_shapes(8, 128)
        o = pypto.tensor((64, 256), F32)
        m = pypto.amax(x, dim=-1, keepdim=True)  # L:amax
        e = pypto.exp(x - m)
        o[:] = e / pypto.sum(e, dim=-1, keepdim=True)
        return o
    return smx


def make_loop_softmax():
    @pypto.jit(runtime_options={"workers": 2, "run_mode": "interp"})
    def lsm(x: pypto.Tensor((4, 8, 64), F32)) -> pypto.Tensor((4, 8, 64), F32):
        pypto.set_vec_tile_shapes(1, 4, 64)
        o = pypto.tensor((4, 8, 64), F32)
        for idx in pypto.loop(0, 4, 1, name="LOOP_b", idx_name="idx"):
            v = x[idx:idx + 1, :, :]
            e = pypto.exp(v - pypto.amax(v, dim=-1, keepdim=True))
            pypto.assemble(e / pypto.sum(e, dim=-1, keepdim=True), [idx, 0, 0], o)
        return o
    return lsm


def softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def line_of(marker):
    with open(__file__) as fh:
        for n, text in enumerate(fh, 1):
            if text.rstrip().endswith("# " + marker):
                return n
    raise AssertionError(marker)


def run_softmax(f, shape=(64, 256)):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(f(x), softmax_ref(x), rtol=1e-5, atol=1e-6)
    return x


# --- swimlanes -------------------------------------------------------------------------------

def worker_tasks(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] != swimlane.SCHEDULER_TID]


def test_swimlane_json_matches_the_run(debug_all):
    f = make_softmax()
    run_softmax(f)
    stats = f.last_stats
    with open(os.path.join(debug_all, "smx", "swimlane.json")) as fh:
        trace = json.load(fh)
    tasks = worker_tasks(trace)
    # One complete event per task run, on the lane of the worker that ran it.
    assert len(tasks) == stats["tasks"] == len(stats["events"])
    assert {e["tid"] - 1 for e in tasks} == {ev[0] for ev in stats["events"]}
    lanes = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert lanes[0] == "scheduler" and all(lanes[e["tid"]] == f"worker {e['tid'] - 1}" for e in tasks)
    kernels = json.loads(f.last.program.to_json("exec_graph"))["kernels"]
    names = {k["name"] for k in kernels}
    assert len(names) == 4 and {e["name"] for e in tasks} == names
    for e in tasks:
        a = e["args"]
        assert a["kernel"] == e["name"] and a["core"] == "AIV" and e["dur"] >= 0
        assert 0 <= a["points"][0] < a["points"][1]
    # Grid points: every launch's tasks cover its grid exactly once.
    by_launch = {}
    for e in tasks:
        by_launch.setdefault(e["args"]["launch"], []).append(tuple(e["args"]["points"]))
    assert len(by_launch) == stats["launches"] == 4
    grids = {k["name"]: int(np.prod([int(g) for g in k["grid"]])) for k in kernels}
    for lid, pts in by_launch.items():
        name = next(e["name"] for e in tasks if e["args"]["launch"] == lid)
        covered = sorted(pts)
        assert covered[0][0] == 0 and covered[-1][1] == grids[name]
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
    # The scheduler lane holds the control program and one marker per launch.
    sched = [e for e in trace["traceEvents"] if e.get("tid") == 0 and e["ph"] in ("X", "i")]
    assert any(e["name"] == "control program" for e in sched)
    assert sum(1 for e in sched if e["ph"] == "i") == 4
    # Dependencies as flow events: sub-exp after max, sum after sub-exp, divide after both.
    starts = [e for e in trace["traceEvents"] if e["ph"] == "s"]
    ends = [e for e in trace["traceEvents"] if e["ph"] == "f"]
    assert len(starts) == len(ends) == 4 == trace["otherData"]["flows"]
    assert {e["id"] for e in starts} == {e["id"] for e in ends}
    deps = {l["id"]: l["deps"] for l in trace["otherData"]["launch_instances"]}
    assert deps == {0: [], 1: [0], 2: [1], 3: [1, 2]}
    # A flow starts inside a task of the predecessor and ends inside one of the successor.
    for s in starts:
        assert any(t["tid"] == s["tid"] and t["ts"] <= s["ts"] <= t["ts"] + t["dur"] for t in tasks)


def test_swimlane_txt_is_the_summary_of_the_json(debug_all):
    f = make_softmax()
    run_softmax(f)
    d = os.path.join(debug_all, "smx")
    trace = swimlane.load(os.path.join(d, "swimlane.json"))
    with open(os.path.join(d, "swimlane.txt")) as fh:
        text = fh.read()
    assert text == swimlane.summarize(trace)
    data = swimlane.summary_data(trace)
    tasks = worker_tasks(trace)
    assert data["tasks"] == len(tasks) == f.last_stats["tasks"]
    assert data["launches"] == 4
    assert sum(k["tasks"] for k in data["kernels"]) == len(tasks)
    assert sum(k["time_us"] for k in data["kernels"]) == pytest.approx(sum(e["dur"] for e in tasks))
    for lane in data["lanes"]:
        if lane["tid"]:
            evs = [e for e in tasks if e["tid"] == lane["tid"]]
            assert lane["events"] == len(evs)
            assert lane["busy_us"] == pytest.approx(sum(e["dur"] for e in evs))
            assert 0 <= lane["utilization"] <= 1.0 + 1e-6
            assert f"{lane['lane']:<12} {lane['events']:>7}" in text
    times = [k["time_us"] for k in data["kernels"]]
    assert times == sorted(times, reverse=True)
    assert f"tasks {len(tasks)}, launches 4" in text
    # The critical path ends at the launch that finishes last and follows the dependency chain.
    cp = data["critical_path"]
    launches = trace["otherData"]["launch_instances"]
    assert cp[-1]["launch"] == max(launches, key=lambda l: l["end_us"])["id"]
    assert [c["launch"] for c in cp] == [0, 1, 2, 3]
    assert [c["via"] for c in cp] == ["start", "dep", "dep", "dep"]
    assert "critical path: 4 launches" in text


def test_swimlane_loop_iterations(debug_all):
    f = make_loop_softmax()
    run_softmax(f, (4, 8, 64))
    trace = swimlane.load(os.path.join(debug_all, "lsm", "swimlane.json"))
    launches = trace["otherData"]["launch_instances"]
    assert len(launches) == f.last_stats["launches"] == 4
    assert [l["iteration"] for l in launches] == [0, 1, 2, 3]
    assert [l["loop"] for l in launches] == [{"idx": i} for i in range(4)]
    assert len(worker_tasks(trace)) == f.last_stats["tasks"]
    for e in worker_tasks(trace):
        assert e["args"]["loop"] == {"idx": e["args"]["iteration"]}


def test_loop_indices_of_nested_loops():
    loops = [{"var": "i", "start": "0", "stop": "2", "step": "1"},
             {"var": "j", "start": "4", "stop": "10", "step": "3"}]
    assert [swimlane.loop_indices(loops, k) for k in range(4)] == \
        [{"i": 0, "j": 4}, {"i": 0, "j": 7}, {"i": 1, "j": 4}, {"i": 1, "j": 7}]
    assert swimlane.loop_indices([{"var": "i", "start": "0", "stop": "N", "step": "1"}], 0) is None


def test_swimlane_native_run(debug_all):
    f = make_softmax(run_mode="cpu")
    run_softmax(f)
    trace = swimlane.load(os.path.join(debug_all, "smx", "swimlane.json"))
    assert len(worker_tasks(trace)) == f.last_stats["tasks"]


def test_swimlane_off_by_default(tmp_path):
    f = make_softmax()
    run_softmax(f)
    assert f.last_stats["events"] == []


# --- JSON pass dumps -------------------------------------------------------------------------

def test_json_dumps_beside_text_dumps(debug_all):
    f = make_softmax()
    run_softmax(f)
    d = os.path.join(debug_all, "smx", "passes")
    files = sorted(os.listdir(d))
    assert files == sorted([f"{i:02d}_{p}.{ext}" for i, p in enumerate(PASSES) for ext in ("txt", "json")])
    amax_line = line_of("L:amax")
    for i, p in enumerate(PASSES):
        with open(os.path.join(d, f"{i:02d}_{p}.json")) as fh:
            j = json.load(fh)
        assert j["pass"] == p and j["index"] == i and j["level"] == LEVEL_OF[p] and j["function"] == "smx"
        assert isinstance(j["ms"], float)
        assert [v["id"] for v in j["values"]] == list(range(len(j["values"])))
        if j["level"] in ("tensor_graph", "tile_graph"):
            amax = [it for it in j["body"] if it["op"] == "amax"]
            assert amax and amax[0]["loc"]["line"] == amax_line
            assert amax[0]["loc"]["file"].endswith("test_tools.py")
        if j["level"] == "tile_graph":
            assert all(it["tile"] == [8, 128] and it["tile_reason"] for it in j["body"])
        if p == "allocate_buffers":
            assert len(j["kernels"]) == 4
            for k in j["kernels"]:
                assert k["core"] == "AIV" and k["ub_bytes"] > 0 and k["reason"]
                assert all(b["offset"] >= 0 or b["offset"] == -1 for b in k["bufs"])
                assert any(i["opcode"] == "TLOAD" for i in k["body"])
        if j["level"] == "exec_graph":
            deps = {it["id"]: it["deps"] for it in j["body"]}
            assert deps == {0: [], 1: [0], 2: [1], 3: [1, 2]}
    # The text dumps are unchanged by the JSON ones.
    with open(os.path.join(d, "06_build_exec_graph.txt")) as fh:
        assert fh.read().startswith("execution_graph @smx")


def test_json_dump_of_a_chosen_pass(tmp_path):
    before = pypto.get_debug_options()
    try:
        pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=["partition"])
        run_softmax(make_softmax())
    finally:
        pypto.set_debug_options(**before)
    assert sorted(os.listdir(tmp_path / "smx" / "passes")) == ["03_partition.json", "03_partition.txt"]


def test_to_json_levels_and_escaping():
    f = make_loop_softmax()
    run_softmax(f, (4, 8, 64))
    p = f.last.program
    for level in graph_html.LEVELS:
        j = json.loads(p.to_json(level))
        assert j["level"] == level
    t = json.loads(p.to_json("tensor_graph"))
    loop = t["body"][0]
    assert loop["kind"] == "loop" and loop["name"] == "LOOP_b" and loop["stop"] == "4"
    assert any(v["kind"] == "view" and v["offsets"][0] == "idx" for v in t["values"])
    with pytest.raises(pypto.UserError, match="unknown IR level"):
        p.to_json("nope")


# --- graph.html ------------------------------------------------------------------------------

def page_data(path):
    with open(path) as fh:
        page = fh.read()
    m = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page, re.S)
    assert m
    return page, json.loads(m.group(1))


def test_graph_html(debug_all):
    f = make_softmax()
    run_softmax(f)
    page, data = page_data(os.path.join(debug_all, "smx", "graph.html"))
    # Self-contained: no scripts, styles or images from elsewhere.
    assert not re.search(r'(src|href)\s*=\s*["\']?https?:', page)
    assert "<link" not in page and "@import" not in page
    assert [l["name"] for l in data["levels"]] == graph_html.LEVELS
    kernels = {k["name"]: k["color"] for k in data["kernels"]}
    assert len(kernels) == 4
    amax_line = line_of("L:amax")
    for level in data["levels"]:
        ids = {n["id"] for n in level["nodes"]}
        assert set(level["layout"]["pos"]) == ids
        assert all(a in ids and b in ids for a, b, _ in level["edges"])
        for n in level["nodes"]:
            if n["kind"] != "tensor":
                assert n["kernel"] in kernels and n["color"] == kernels[n["kernel"]] and n["core"] == "AIV"
        details = {n["label"].split()[0]: dict(n["details"]) for n in level["nodes"]}
        if level["name"] in ("tensor_graph", "tile_graph"):
            amax = details["amax"]
            assert f"test_tools.py:{amax_line}" in amax["source"]
            assert "[8, 128]" in amax["tile shape"]
            assert "ub+" in amax["buffers"]
            assert "fp32(64, 1)" in amax["output"]
    ex = data["levels"][3]
    assert sorted((a, b) for a, b, label in ex["edges"] if label.startswith("after")) == \
        [("l0", "l1"), ("l1", "l2"), ("l1", "l3"), ("l2", "l3")]


def test_graph_html_loop_marks(debug_all):
    f = make_loop_softmax()
    run_softmax(f, (4, 8, 64))
    _, data = page_data(os.path.join(debug_all, "lsm", "graph.html"))
    ops = [n for n in data["levels"][0]["nodes"] if n["kind"] == "op"]
    assert ops and all(n["loops"] and "LOOP_b" in n["loops"][0] for n in ops)


# --- the pypto command -----------------------------------------------------------------------

def test_cli_summary_prints_the_txt(debug_all, capsys):
    run_softmax(make_softmax())
    d = os.path.join(debug_all, "smx")
    assert cli.main(["summary", os.path.join(d, "swimlane.json")]) == 0
    with open(os.path.join(d, "swimlane.txt")) as fh:
        assert capsys.readouterr().out == fh.read()
    assert cli.main(["summary", os.path.join(d, "missing.json")]) == 2


def test_cli_entry_point_runs(debug_all):
    run_softmax(make_softmax())
    out = subprocess.run([sys.executable, "-m", "pypto.cli", "summary",
                          os.path.join(debug_all, "smx", "swimlane.json"), "--top", "2"],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("swimlane summary: smx") and "top kernels by time (of 4)" in out


def test_cli_view_lists_and_serves(debug_all, capsys):
    run_softmax(make_softmax())
    assert cli.main(["view", debug_all]) == 0
    out = capsys.readouterr().out
    for name in ("graph.html", "swimlane.json", "swimlane.txt"):
        assert os.path.join(debug_all, "smx", name) in out
    got = {}

    def fetch():
        for _ in range(100):
            time.sleep(0.05)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", buf.getvalue())
            if m:
                with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/smx/graph.html", timeout=5) as r:
                    got["page"] = r.read().decode()
                return
    import io
    buf = io.StringIO()
    t = threading.Thread(target=fetch)
    t.start()
    cli.serve(debug_all, 0, 1.5, out=buf)
    t.join()
    assert 'id="graph-data"' in got["page"]


def test_cli_view_makes_graph_from_dumps(tmp_path, capsys):
    before = pypto.get_debug_options()
    try:
        pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True)
        run_softmax(make_softmax())
    finally:
        pypto.set_debug_options(**before)
    assert not (tmp_path / "smx" / "graph.html").exists()
    assert cli.main(["view", str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    _, data = page_data(str(tmp_path / "smx" / "graph.html"))
    assert [l["name"] for l in data["levels"]] == graph_html.LEVELS


def test_swimlane_html_embeds_the_trace(debug_all):
    run_softmax(make_softmax())
    d = os.path.join(debug_all, "smx")
    with open(os.path.join(d, "swimlane.html")) as fh:
        page = fh.read()
    assert not re.search(r'(src|href)\s*=\s*["\']?https?:', page) and "<link" not in page
    m = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S)
    assert json.loads(m.group(1)) == swimlane.load(os.path.join(d, "swimlane.json"))
    m = re.search(r'<script type="application/json" id="summary-data">(.*?)</script>', page, re.S)
    with open(os.path.join(d, "swimlane.txt")) as fh:
        assert json.loads(m.group(1)) == fh.read()


def test_graph_layout_of_a_long_chain():
    # 3000 chained ops: the layout is iterative (no recursion limit) and one layer per op.
    n = 3000
    values = [{"id": i, "name": f"v{i}", "dtype": "fp32", "shape": ["8"], "kind": "input" if i == 0 else "temp"}
              for i in range(n + 1)]
    body = [{"kind": "op", "id": i, "op": "exp", "inputs": [i], "output": i + 1, "attrs": {}, "tile_shape": [8],
             "loc": None} for i in range(n)]
    data = graph_html.build_levels({"tensor_graph": {"level": "tensor_graph", "function": "chain", "values": values,
                                                     "body": body}})
    level = data["levels"][0]
    assert len(level["nodes"]) == n + 1 and len(level["edges"]) == n
    ys = sorted({p[1] for p in level["layout"]["pos"].values()})
    assert len(ys) == n + 1
