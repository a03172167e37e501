"""graph.html: a self-contained page (inline JS and SVG, no network) with one tab per IR level.

Built from the levels' JSON (``Program.to_json(level)``, the same schema as the
``passes/NN_<pass>.json`` dumps). Nodes are the level's items (tensor ops, tile ops, kernel
launches, task groups) and the function's tensors; edges follow the values (producer to
consumer) and, in the execution graph, the launches' dependencies. Nodes are colored by the
kernel they end up in (Partition's grouping, so the same color marks the same kernel on every
level); the core type is the border (AIV solid, AIC dashed) and a tag. Clicking a node shows
its shapes, tile shape, kernel, UB buffers and the user's source line.

The layout (layers by longest path from the inputs, in program order within a layer) is
computed here in Python; the page only draws it.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Dict, List, Optional, Tuple

LEVELS = ["tensor_graph", "tile_graph", "block_graph", "exec_graph"]
LEVEL_TITLES = {"tensor_graph": "tensor graph (level 0)", "tile_graph": "tile graph (level 1)",
                "block_graph": "block graph (level 2)", "exec_graph": "execution graph (level 3)"}

PALETTE = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
           "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6"]
TENSOR_COLOR = "#e0e0e0"


def _items(region: List[Dict[str, Any]], loops: Tuple[str, ...] = ()) -> List[Tuple[Dict[str, Any], Tuple[str, ...]]]:
    """Items of a region in program order, with the names of the loops around each."""
    out = []
    for e in region:
        if e["kind"] == "loop":
            out.extend(_items(e["body"], loops + (f'{e["name"] or e["var"]}: {e["var"]} in range({e["start"]}, '
                                                   f'{e["stop"]}, {e["step"]})',)))
        else:
            out.append((e, loops))
    return out


def _loc(loc: Optional[Dict[str, Any]]) -> str:
    if not loc:
        return ""
    s = f'{loc["file"]}:{loc["line"]}'
    if loc.get("text"):
        s += "  " + loc["text"].strip()
    return s


def _shape(v: Dict[str, Any]) -> str:
    return f'{v["dtype"]}({", ".join(v["shape"])})'


class _Builder:
    """Nodes and edges of one level."""

    def __init__(self, level: Dict[str, Any], kernel_of_tile_op: Dict[int, Dict[str, Any]]) -> None:
        self.level = level
        self.values = {v["id"]: v for v in level["values"]}
        self.kernel_of_tile_op = kernel_of_tile_op
        self.nodes: List[Dict[str, Any]] = []
        self.edges: List[Tuple[str, str, str]] = []
        self.producer: Dict[int, str] = {}
        self.tensor_nodes: Dict[int, str] = {}

    def root(self, v: int) -> int:
        val = self.values[v]
        return val["base"] if val["kind"] == "view" and val.get("base", -1) >= 0 else v

    def value_desc(self, v: int) -> str:
        val = self.values[v]
        s = f'%{val["name"]}: {_shape(val)} ({val["kind"]}'
        if val.get("materialized"):
            s += ", workspace"
        s += ")"
        if val["kind"] == "view":
            s += f' = view %{self.values[val["base"]]["name"]}({", ".join(val["offsets"])})'
        return s

    def tensor_node(self, v: int) -> str:
        r = self.root(v)
        if r not in self.tensor_nodes:
            val = self.values[r]
            nid = f"v{r}"
            self.tensor_nodes[r] = nid
            self.nodes.append({"id": nid, "label": f'%{val["name"]}', "sub": _shape(val), "kind": "tensor",
                               "color": TENSOR_COLOR, "core": "", "kernel": "",
                               "details": [["tensor", self.value_desc(r)], ["kind", val["kind"]],
                                           ["source", _loc(val.get("loc"))]]})
        return self.tensor_nodes[r]

    def read(self, v: int, dst: str, label: str = "") -> None:
        src = self.producer.get(v) or self.producer.get(self.root(v))
        if src is None:
            src = self.tensor_node(v)
        if src != dst:
            self.edges.append((src, dst, label or "%" + self.values[v]["name"]))

    def write(self, v: int, node: str) -> None:
        self.producer[v] = node
        r = self.root(v)
        if r != v or self.values[r]["kind"] in ("output", "tensor"):
            self.producer[r] = node
        if self.values[r]["kind"] in ("output",):
            out = self.tensor_node(r) if r not in self.tensor_nodes else self.tensor_nodes[r]
            if out != node:
                self.edges.append((node, out, "%" + self.values[r]["name"]))


def _kernel_style(k: Optional[Dict[str, Any]]) -> Tuple[str, str, str]:
    if k is None:
        return TENSOR_COLOR, "", ""
    return PALETTE[k["id"] % len(PALETTE)], k.get("core", ""), k["name"]


def _bufs_for(kernel: Optional[Dict[str, Any]], values: List[int]) -> List[str]:
    if kernel is None:
        return []
    out = []
    for b in kernel.get("bufs", []):
        if b["value"] in values:
            off = f'ub+{b["offset"]}' if b["offset"] >= 0 else "not allocated (fused away)"
            out.append(f'%{b["name"]}#{b["id"]}: {b["dtype"]}{b["shape"]} valid=({", ".join(b["valid"])}) '
                       f'@ {off}, {b["bytes"]} B')
    return out


def _tensor_level(level: Dict[str, Any], kernel_of_op: Dict[int, Dict[str, Any]]) -> _Builder:
    b = _Builder(level, {})
    for op, loops in _items(level["body"]):
        nid = f'op{op["id"]}'
        k = kernel_of_op.get(op["id"])
        color, core, kname = _kernel_style(k)
        det = [["op", f'{op["op"]}#{op["id"]}'],
               ["inputs", "; ".join(b.value_desc(v) for v in op["inputs"])],
               ["output", b.value_desc(op["output"]) if op["output"] >= 0 else "(writes its second input)"],
               ["attrs", json.dumps(op["attrs"])], ["tile shape", str(op["tile_shape"])],
               ["kernel", f"{kname} [{core}]" if k else ""],
               ["buffers", "\n".join(_bufs_for(k, [op["output"]] + list(op["inputs"])))],
               ["loops", "\n".join(loops)], ["source", _loc(op.get("loc"))]]
        out = b.values.get(op["output"])
        b.nodes.append({"id": nid, "label": op["op"], "sub": _shape(out) if out else "", "kind": "op",
                        "color": color, "core": core, "kernel": kname, "details": det, "loops": list(loops)})
        for v in op["inputs"][:1] if op["op"] == "assemble" else op["inputs"]:
            b.read(v, nid)
        if op["output"] >= 0:
            b.write(op["output"], nid)
        elif op["op"] == "assemble" and len(op["inputs"]) > 1:
            b.write(op["inputs"][1], nid)
    return b


def _tile_level(level: Dict[str, Any], kernel_of_tile_op: Dict[int, Dict[str, Any]]) -> _Builder:
    b = _Builder(level, kernel_of_tile_op)
    for t, loops in _items(level["body"]):
        nid = f't{t["id"]}'
        k = kernel_of_tile_op.get(t["id"])
        color, core, kname = _kernel_style(k)
        ins = [i["value"] for i in t["inputs"]]
        bc = ["".join(str(d) for d, x in enumerate(i["broadcast"]) if x) for i in t["inputs"]]
        det = [["tile op", f'{t["op"]}#{t["id"]} (from tensor op #{t["tensor_op"]})'],
               ["inputs", "; ".join(b.value_desc(v) + (f" broadcast dims {d}" if d else "") for v, d in zip(ins, bc))],
               ["output", b.value_desc(t["output"])],
               ["iteration space", f'({", ".join(t["extent"])})'], ["tile shape", str(t["tile"])],
               ["tile grid", f'({", ".join(t.get("grid", []))})'], ["why this tile", t["tile_reason"]],
               ["reduce axis", str(t["reduce_axis"]) if t["reduce_axis"] >= 0 else ""],
               ["kernel", f"{kname} [{core}]" if k else ""],
               ["buffers", "\n".join(_bufs_for(k, [t["output"]] + ins))],
               ["loops", "\n".join(loops)], ["source", _loc(t.get("loc"))]]
        out = b.values[t["output"]]
        b.nodes.append({"id": nid, "label": f'{t["op"]} tile{t["tile"]}', "sub": _shape(out), "kind": "op",
                        "color": color, "core": core, "kernel": kname, "details": det, "loops": list(loops)})
        for v in ins:
            b.read(v, nid)
        b.write(t["output"], nid)
    return b


def _launch_level(level: Dict[str, Any], exec_level: bool) -> _Builder:
    b = _Builder(level, {})
    kernels = {k["id"]: k for k in level["kernels"]}
    for n, loops in _items(level["body"]):
        nid = f'l{n["id"]}'
        k = kernels[n["kernel"]]
        color, core, kname = _kernel_style(k)
        reads = [p["value"] for p in k["params"] if p["read"]]
        writes = [p["value"] for p in k["params"] if p["write"]]
        det = [["launch", f'#{n["id"]} of kernel {kname} on {core}'], ["grid", f'({", ".join(k["grid"])})'],
               ["why this kernel", k["reason"]],
               ["reads", "\n".join(b.value_desc(v) for v in reads)],
               ["writes", "\n".join(b.value_desc(v) for v in writes)],
               ["UB", f'{k["ub_bytes"]} B'],
               ["buffers", "\n".join(_bufs_for(k, [bb["value"] for bb in k["bufs"]]))],
               ["instructions", str(_count_instrs(k["body"]))],
               ["tile ops", ", ".join(f"#{t}" for t in k["tile_ops"])],
               ["loops", "\n".join(loops)], ["source", _loc(_first_loc(k["body"]))]]
        if exec_level:
            det.insert(3, ["after", ", ".join(f"#{d}" for d in n["deps"]) or "(nothing in its region)"])
        b.nodes.append({"id": nid, "label": kname, "sub": f'grid ({", ".join(k["grid"])}) {core}', "kind": "launch",
                        "color": color, "core": core, "kernel": kname, "details": det, "loops": list(loops)})
        for v in reads:
            b.read(v, nid)
        for v in writes:
            b.write(v, nid)
        if exec_level:
            for d in n["deps"]:
                b.edges.append((f"l{d}", nid, "after"))
    return b


def _count_instrs(body: List[Dict[str, Any]]) -> int:
    return sum(1 + _count_instrs(i.get("body", [])) for i in body)


def _first_loc(body: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    for i in body:
        if i.get("loc"):
            return i["loc"]
    return None


def _layout(nodes: List[Dict[str, Any]], edges: List[Tuple[str, str, str]]) -> Dict[str, Any]:
    """Layers by longest path from the sources (Kahn's order, O(nodes + edges)); nodes left
    on a cycle (none in a well-formed program) go below everything else."""
    index = {n["id"]: i for i, n in enumerate(nodes)}
    succs: Dict[str, List[str]] = {n["id"]: [] for n in nodes}
    indeg = {n["id"]: 0 for n in nodes}
    for s, d, _ in edges:
        if s in index and d in index and s != d:
            succs[s].append(d)
            indeg[d] += 1
    layer = {n["id"]: 0 for n in nodes}
    ready = [n["id"] for n in nodes if indeg[n["id"]] == 0]
    done = 0
    while ready:
        nid = ready.pop()
        done += 1
        for d in succs[nid]:
            layer[d] = max(layer[d], layer[nid] + 1)
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    if done < len(nodes):
        top = max(layer.values(), default=0) + 1
        for nid, k in indeg.items():
            if k > 0:
                layer[nid] = top
    rows: Dict[int, List[str]] = {}
    for n in nodes:
        rows.setdefault(layer[n["id"]], []).append(n["id"])
    w, h, gx, gy = 190, 46, 30, 56
    pos = {}
    width = max((len(r) for r in rows.values()), default=1) * (w + gx) + gx
    for li, ids in rows.items():
        row_w = len(ids) * (w + gx) - gx
        x0 = (width - row_w) / 2
        for i, nid in enumerate(ids):
            pos[nid] = [round(x0 + i * (w + gx), 1), gy / 2 + li * (h + gy)]
    height = (max(rows, default=0) + 1) * (h + gy)
    return {"pos": pos, "width": width, "height": height, "w": w, "h": h}


def build_levels(levels: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The page's data: per level, nodes (with details), edges and the layout."""
    kernels = (levels.get("block_graph") or levels.get("exec_graph") or {}).get("kernels", [])
    kernel_of_tile_op = {t: k for k in kernels for t in k.get("tile_ops", [])}
    kernel_of_op: Dict[int, Dict[str, Any]] = {}
    if "tile_graph" in levels:
        for t, _ in _items(levels["tile_graph"]["body"]):
            if t["id"] in kernel_of_tile_op:
                kernel_of_op[t["tensor_op"]] = kernel_of_tile_op[t["id"]]
    out: Dict[str, Any] = {"function": "", "levels": [], "kernels": []}
    for name in LEVELS:
        lv = levels.get(name)
        if lv is None:
            continue
        out["function"] = out["function"] or lv.get("function", "")
        if name == "tensor_graph":
            b = _tensor_level(lv, kernel_of_op)
        elif name == "tile_graph":
            b = _tile_level(lv, kernel_of_tile_op)
        else:
            b = _launch_level(lv, name == "exec_graph")
        # One edge per pair of nodes, labeled with every value (and "after" for a dependency).
        merged: Dict[Tuple[str, str], List[str]] = {}
        for src, dst, label in b.edges:
            labels = merged.setdefault((src, dst), [])
            if label not in labels:
                labels.append(label)
        edges = [[src, dst, ", ".join(sorted(labels, key=lambda x: x != "after"))]
                 for (src, dst), labels in merged.items()]
        out["levels"].append({"name": name, "title": LEVEL_TITLES[name], "nodes": b.nodes, "edges": edges,
                              "layout": _layout(b.nodes, [tuple(e) for e in edges])})
    out["kernels"] = [{"name": k["name"], "core": k["core"], "color": PALETTE[k["id"] % len(PALETTE)]}
                      for k in kernels]
    return out


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>pypto graph: __TITLE__</title>
<style>
body { font: 13px sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; }
header { padding: 6px 10px; background: #263238; color: #fff; }
header b { margin-right: 16px; }
#tabs button { margin-right: 4px; padding: 4px 10px; border: 1px solid #90a4ae; background: #eceff1; cursor: pointer; }
#tabs button.active { background: #fff; font-weight: bold; }
#main { display: flex; flex: 1; min-height: 0; }
#canvas { flex: 1; overflow: auto; background: #fafafa; }
#side { width: 380px; overflow: auto; border-left: 1px solid #ccc; padding: 8px; }
#side table { border-collapse: collapse; width: 100%; }
#side td { border-bottom: 1px solid #eee; vertical-align: top; padding: 3px; white-space: pre-wrap; word-break: break-word; }
#side td.k { color: #555; width: 90px; }
#legend span { display: inline-block; padding: 1px 6px; margin: 2px; border: 1px solid #999; }
g.node { cursor: pointer; }
g.node rect { stroke: #455a64; stroke-width: 1.2; }
g.node.aic rect { stroke-dasharray: 5 3; stroke-width: 2; }
g.node.tensor rect { rx: 18; }
g.node.selected rect { stroke: #d50000; stroke-width: 3; }
g.node text { font-size: 11px; pointer-events: none; }
path.edge { fill: none; stroke: #78909c; stroke-width: 1.2; marker-end: url(#arrow); }
path.edge.after { stroke: #e65100; stroke-dasharray: 4 3; }
</style></head>
<body>
<header><b>pypto graph: <span id="fn"></span></b><span id="tabs"></span></header>
<div id="main"><div id="canvas"></div>
<div id="side"><div id="legend"></div><h3 id="sel-title">click a node</h3><table id="details"></table>
<p id="status"></p></div></div>
<script type="application/json" id="graph-data">__DATA__</script>
<script>
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  document.getElementById("fn").textContent = data.function;
  var legend = document.getElementById("legend");
  data.kernels.forEach(function (k) {
    var s = document.createElement("span");
    s.style.background = k.color;
    s.textContent = k.name + " [" + k.core + "]";
    legend.appendChild(s);
  });
  function show(node) {
    document.getElementById("sel-title").textContent = node.label;
    var t = document.getElementById("details");
    t.innerHTML = "";
    node.details.forEach(function (kv) {
      if (!kv[1]) return;
      var tr = document.createElement("tr");
      var a = document.createElement("td"); a.className = "k"; a.textContent = kv[0];
      var b = document.createElement("td"); b.textContent = kv[1];
      tr.appendChild(a); tr.appendChild(b); t.appendChild(tr);
    });
  }
  function draw(level) {
    var L = level.layout, canvas = document.getElementById("canvas");
    canvas.innerHTML = "";
    var svg = el("svg", {width: L.width, height: L.height, "class": "graph", "data-level": level.name}, canvas);
    var defs = el("defs", {}, svg);
    var m = el("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7,
                          orient: "auto-start-reverse"}, defs);
    el("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: "#78909c"}, m);
    level.edges.forEach(function (e) {
      var a = L.pos[e[0]], b = L.pos[e[1]];
      if (!a || !b) return;
      var x1 = a[0] + L.w / 2, y1 = a[1] + L.h, x2 = b[0] + L.w / 2, y2 = b[1];
      if (y2 <= y1) { y1 = a[1] + L.h / 2; y2 = b[1] + L.h / 2; x1 = a[0] + L.w; x2 = b[0]; }
      var my = (y1 + y2) / 2;
      var p = el("path", {d: "M" + x1 + "," + y1 + " C" + x1 + "," + my + " " + x2 + "," + my + " " + x2 + "," + y2,
                          "class": "edge" + (e[2].indexOf("after") === 0 ? " after" : "")}, svg);
      el("title", {}, p).textContent = e[2];
    });
    level.nodes.forEach(function (n) {
      var p = L.pos[n.id];
      var g = el("g", {"class": "node " + n.kind + (n.core === "AIC" ? " aic" : ""), "data-id": n.id,
                       transform: "translate(" + p[0] + "," + p[1] + ")"}, svg);
      el("rect", {width: L.w, height: L.h, rx: n.kind === "tensor" ? 18 : 4, fill: n.color}, g);
      var t1 = el("text", {x: 8, y: 18}, g);
      t1.textContent = (n.loops && n.loops.length ? "\u21bb " : "") + n.label.slice(0, 30);
      var t2 = el("text", {x: 8, y: 35, fill: "#37474f"}, g);
      t2.textContent = (n.sub || "").slice(0, 32) + (n.core ? "  " + n.core : "");
      el("title", {}, g).textContent = n.kernel ? "kernel " + n.kernel : n.label;
      g.addEventListener("click", function () {
        var old = svg.querySelector("g.selected");
        if (old) old.setAttribute("class", old.getAttribute("class").replace(" selected", ""));
        g.setAttribute("class", g.getAttribute("class") + " selected");
        show(n);
      });
    });
    document.getElementById("status").textContent =
        level.title + ": " + level.nodes.length + " nodes, " + level.edges.length + " edges";
  }
  var tabs = document.getElementById("tabs");
  data.levels.forEach(function (level, i) {
    var b = document.createElement("button");
    b.textContent = level.title;
    b.setAttribute("data-level", level.name);
    b.addEventListener("click", function () {
      tabs.querySelectorAll("button").forEach(function (x) { x.className = ""; });
      b.className = "active";
      draw(level);
    });
    tabs.appendChild(b);
    if (i === 0) { b.className = "active"; draw(level); }
  });
  // Deep link: graph.html#level=tile_graph&node=t3 opens that tab and selects that node.
  var want = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var p = kv.split("="); if (p.length === 2) want[p[0]] = decodeURIComponent(p[1]);
  });
  if (want.level) {
    var tb = tabs.querySelector('button[data-level="' + want.level + '"]');
    if (tb) tb.click();
  }
  if (want.node) {
    var g = document.querySelector('g.node[data-id="' + want.node + '"]');
    if (g) g.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  }
  document.body.setAttribute("data-ready", "1");
})();
</script>
</body></html>
"""


def render(levels: Dict[str, Dict[str, Any]]) -> str:
    """The page for these levels' JSON objects (keyed by level name)."""
    data = build_levels(levels)
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")
    return _PAGE.replace("__TITLE__", html.escape(data["function"])).replace("__DATA__", blob)


def write(levels: Dict[str, Dict[str, Any]], dump_dir: str) -> str:
    os.makedirs(dump_dir, exist_ok=True)
    path = os.path.join(dump_dir, "graph.html")
    with open(path, "w") as fh:
        fh.write(render(levels))
    return path


def write_program(program: Any, dump_dir: str) -> str:
    """graph.html of a compiled program (``CompiledFunction.program``)."""
    return write({name: json.loads(program.to_json(name)) for name in LEVELS}, dump_dir)


def from_dump_dir(fn_dir: str) -> Dict[str, Dict[str, Any]]:
    """The last JSON dump of each level in fn_dir/passes (for `pypto view` on old dumps)."""
    levels: Dict[str, Dict[str, Any]] = {}
    pdir = os.path.join(fn_dir, "passes")
    for f in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
        if f.endswith(".json"):
            with open(os.path.join(pdir, f)) as fh:
                j = json.load(fh)
            levels[j["level"]] = j
    return levels
