"""CANN PyPTO's debug-mode output folder (pypto.tools.debug_output): program.json,
dyn_topo.txt, tilefwk_L1_prof_data.json and merged_swimlane.json under $TILE_FWK_OUTPUT_DIR."""

import csv
import json
import os

import numpy as np
import pytest

import pypto

F32 = pypto.DT_FP32


def _kernel():
    @pypto.frontend.jit(debug_options={"runtime_debug_mode": 1})
    def two_stages(a: pypto.Tensor((64, 128), F32), b: pypto.Tensor((128, 32), F32),
                   out: pypto.Tensor((64, 32), F32)):
        pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
        pypto.set_vec_tile_shapes(16, 32)
        out.move(pypto.exp(pypto.matmul(a, b, F32)) + 1.0)  # a cube launch, then a vector one
    return two_stages


def test_debug_mode_writes_pyptos_output_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_FWK_OUTPUT_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 128)).astype(np.float32) * 0.1
    b = rng.standard_normal((128, 32)).astype(np.float32) * 0.1
    out = np.zeros((64, 32), np.float32)
    _kernel()(a, b, out)
    np.testing.assert_allclose(out, np.exp(a @ b) + 1, rtol=1e-5)
    (folder,) = os.listdir(tmp_path)
    assert folder.startswith("two_stages_")
    path = tmp_path / folder
    assert pypto.pypto_impl.LogTopFolder() == str(path)  # PyPTO's tests find the folder so
    program = json.loads((path / "program.json").read_text())
    assert {"tensor_graph", "tile_graph", "block_graph", "exec_graph"} <= set(program)
    kernels = {k["id"]: k for k in program["exec_graph"]["kernels"]}

    with open(path / "dyn_topo.txt", newline="") as fh:
        rows = list(csv.reader(fh))
    col = {name: i for i, name in enumerate(rows[0])}
    tasks = rows[1:]
    assert tasks, "no tasks"
    core_types = {int(r[col["coreType"]]) for r in tasks}
    assert core_types == {0, 1}  # the matmul on the cube (AIC), the epilogue on the vector core
    by_id = {int(r[col["taskId"]]): r for r in tasks}
    for r in tasks:
        assert r[col["leafHash"]] == kernels[int(r[col["leafIndex"]])]["name"]
        succ = [int(s) for s in r[col["successors"]:]]
        assert len(succ) == int(r[col["staticSuccCount"]])
        assert all(s in by_id and s > int(r[col["taskId"]]) for s in succ)
    cube = [r for r in tasks if r[col["coreType"]] == "1"]
    assert all(int(r[col["staticSuccCount"]]) >= 1 for r in cube)  # the vector stage waits for it

    prof = json.loads((path / "tilefwk_L1_prof_data.json").read_text())
    ran = [t for block in prof for t in block["tasks"]]
    assert {t["taskId"] for t in ran} == set(by_id)
    assert all(0 <= t["execStart"] <= t["execEnd"] for t in ran)
    assert all(t["numPoints"] >= 1 for t in ran)

    swim = json.loads((path / "merged_swimlane.json").read_text())
    assert any(e.get("ph") == "X" for e in swim["traceEvents"])

    _kernel()(a, b, out)  # each call its own folder
    assert len(os.listdir(tmp_path)) == 2


def test_without_debug_mode_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_FWK_OUTPUT_DIR", str(tmp_path))

    @pypto.jit
    def plain(x: pypto.Tensor((8, 8), F32)):
        return x + 1.0

    plain(np.zeros((8, 8), np.float32))
    assert os.listdir(tmp_path) == []


if __name__ == "__main__":
    pytest.main([__file__])
