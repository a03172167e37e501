"""graph.html and swimlane.html in headless Chromium (Debian's `chromium`; skipped without it):
the pages render with no script errors and show the expected elements. With
PYPTO_UPDATE_SCREENSHOTS=1 the screenshots are also written to docs/images/."""

import json
import os
import re
import shutil
import subprocess

import pytest

import pypto
from pypto.tools import swimlane
from test_tools import make_softmax, run_softmax

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
DOCS_IMAGES = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "images")


def chromium(url, *extra, timeout=90):
    """Runs headless Chromium on url; returns (stdout, console lines)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=2000", *extra, url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    return p.stdout, console


def dom(url):
    out, console = chromium(url, "--dump-dom")
    assert not console, "script errors or console output:\n" + "\n".join(console)
    assert 'data-ready="1"' in out, "the page's script did not finish"
    return out


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    before = pypto.get_debug_options()
    pypto.set_debug_options(dump_dir=str(root), dump_passes=True, swimlane=True, graph=True)
    try:
        f = make_softmax()
        run_softmax(f)
    finally:
        pypto.set_debug_options(**before)
    return os.path.join(str(root), "smx"), f


def graph_data(d):
    with open(os.path.join(d, "graph.html")) as fh:
        m = re.search(r'id="graph-data">(.*?)</script>', fh.read(), re.S)
    return json.loads(m.group(1))


def test_graph_html_renders_every_level(pages):
    d, _ = pages
    data = graph_data(d)
    for level in data["levels"]:
        out = dom(f"file://{d}/graph.html#level={level['name']}")
        assert out.count('<g class="node') == len(level["nodes"])
        assert out.count('class="edge') == len(level["edges"])
        assert f'data-level="{level["name"]}"' in out
        assert f"{len(level['nodes'])} nodes, {len(level['edges'])} edges" in out
    assert out.count('<button') == 4


def test_graph_html_node_details(pages):
    d, _ = pages
    data = graph_data(d)
    amax = next(n for n in data["levels"][1]["nodes"] if n["label"].startswith("amax"))
    out = dom(f"file://{d}/graph.html#level=tile_graph&node={amax['id']}")
    assert f'<h3 id="sel-title">{amax["label"]}</h3>' in out
    panel = out[out.index('id="details"'):]
    for key in ("tile shape", "why this tile", "kernel", "buffers", "source"):
        assert f'<td class="k">{key}</td>' in panel
    assert "test_tools.py:" in panel and "ub+" in panel and "[8, 128]" in panel
    assert 'class="node op selected"' in out


def test_swimlane_html_renders(pages):
    d, f = pages
    out = dom(f"file://{d}/swimlane.html")
    trace = swimlane.load(os.path.join(d, "swimlane.json"))
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert out.count('<rect class="task"') == len(xs)
    assert sum(1 for e in xs if e["tid"] != 0) == f.last_stats["tasks"]
    assert out.count('class="flow"') == trace["otherData"]["flows"]
    for name in ("scheduler", "worker 0", "worker 1"):
        assert f">{name}</text>" in out
    assert "critical path:" in out


def test_screenshots(pages, tmp_path):
    d, _ = pages
    dest = DOCS_IMAGES if os.environ.get("PYPTO_UPDATE_SCREENSHOTS") else str(tmp_path)
    os.makedirs(dest, exist_ok=True)
    data = graph_data(d)
    node = next(n for n in data["levels"][1]["nodes"] if n["label"].startswith("sub"))
    shots = {"toolchain_graph.png": f"file://{d}/graph.html#level=tile_graph&node={node['id']}",
             "toolchain_swimlane.png": f"file://{d}/swimlane.html"}
    for name, url in shots.items():
        path = os.path.join(dest, name)
        _, console = chromium(url, f"--screenshot={path}", "--window-size=1400,900", "--hide-scrollbars")
        assert not console
        with open(path, "rb") as fh:
            head = fh.read(8)
        assert head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 10000
