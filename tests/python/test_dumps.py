"""IR printers and per-pass dumps (set_debug_options / jit(debug_options=) / PYPTO_DUMP_DIR)."""

import os
import re

import numpy as np
import pytest

import pypto

F32 = pypto.DT_FP32
THIS_FILE = os.path.basename(__file__)
PASSES = ["tensor_graph", "infer_shapes", "expand_tiles", "partition", "fuse_instructions", "allocate_buffers",
          "build_exec_graph"]


@pytest.fixture
def restore_debug_options():
    before = pypto.get_debug_options()
    yield
    pypto.set_debug_options(**before)


def make_softmax():
    @pypto.jit
    def smx(x: pypto.Tensor((3, 40), F32)) -> pypto.Tensor((3, 40), F32):
        pypto.set_vec_tile_shapes(2, 16)
        o = pypto.tensor((3, 40), F32)
        m = pypto.amax(x, dim=-1, keepdim=True)  # L:amax
        e = pypto.exp(x - m)
        o[:] = e / pypto.sum(e, dim=-1, keepdim=True)
        return o
    return smx


def line_of(marker):
    with open(__file__) as fh:
        for n, text in enumerate(fh, 1):
            if text.rstrip().endswith("# " + marker):
                return n
    raise AssertionError(marker)


def run(f):
    x = np.random.default_rng(0).standard_normal((3, 40)).astype(np.float32)
    y = f(x)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def pass_files(root, fn="smx"):
    d = os.path.join(root, fn, "passes")
    return sorted(f for f in os.listdir(d) if f.endswith(".txt")), d


def test_set_debug_options_writes_every_pass(tmp_path, restore_debug_options):
    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True)
    run(make_softmax())
    files, d = pass_files(str(tmp_path))
    assert files == [f"{i:02d}_{p}.txt" for i, p in enumerate(PASSES)]
    for f in files:
        assert re.match(r"^\d\d_\w+\.txt$", f)
        assert os.path.getsize(os.path.join(d, f)) > 0
    text = {f[3:-4]: open(os.path.join(d, f)).read() for f in files}
    assert text["tensor_graph"].startswith("tensor_graph @smx")
    assert "amax(%x)" in text["tensor_graph"] and "dim=1" in text["tensor_graph"]
    assert text["expand_tiles"].startswith("tile_graph @smx") and "tile=[2, 16]" in text["expand_tiles"]
    assert "kernel " in text["partition"] and "TLOAD" in text["partition"]
    assert "@ub+" in text["allocate_buffers"]
    assert text["build_exec_graph"].startswith("execution_graph @smx") and "task_group#" in text["build_exec_graph"]


def test_dumps_carry_user_source_lines(tmp_path, restore_debug_options):
    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True)
    run(make_softmax())
    _, d = pass_files(str(tmp_path))
    tg = open(os.path.join(d, "00_tensor_graph.txt")).read()
    amax_line = next(ln for ln in tg.splitlines() if "amax(" in ln)
    assert f"{THIS_FILE}:{line_of('L:amax')}" in amax_line


def test_dump_only_selected_passes(tmp_path, restore_debug_options):
    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=["partition"])
    run(make_softmax())
    files, _ = pass_files(str(tmp_path))
    assert files == ["03_partition.txt"]


def test_jit_debug_options_dict(tmp_path):
    @pypto.jit(debug_options={"dump_dir": str(tmp_path), "dump_passes": True})
    def smx2(x: pypto.Tensor((3, 40), F32)) -> pypto.Tensor((3, 40), F32):
        pypto.set_vec_tile_shapes(2, 16)
        o = pypto.tensor((3, 40), F32)
        e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
        o[:] = e / pypto.sum(e, dim=-1, keepdim=True)
        return o

    run(smx2)
    files, _ = pass_files(str(tmp_path), "smx2")
    assert len(files) == len(PASSES)
    assert pypto.get_debug_options()["dump_dir"] != str(tmp_path)  # the global options are untouched


def test_env_dump_dir(tmp_path, monkeypatch, restore_debug_options):
    pypto.set_debug_options(dump_dir="", dump_passes=False)
    monkeypatch.setenv("PYPTO_DUMP_DIR", str(tmp_path))
    run(make_softmax())
    files, _ = pass_files(str(tmp_path))
    assert len(files) == len(PASSES)


def test_no_dump_by_default(tmp_path, monkeypatch, restore_debug_options):
    pypto.set_debug_options(dump_dir="", dump_passes=False)
    monkeypatch.delenv("PYPTO_DUMP_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    f = make_softmax()
    run(f)
    assert os.listdir(tmp_path) == []
    assert f.last.dump_dir == ""


def test_printers_of_every_level():
    f = make_softmax()
    run(f)
    p = f.last.program
    tg, tl, bg, eg = p.tensor_graph(), p.tile_graph(), p.block_graph(), p.exec_graph()
    assert tg.startswith("tensor_graph @smx") and "exp(" in tg and "sum(" in tg
    assert tl.startswith("tile_graph @smx") and "grid=" in tl
    assert bg.startswith("block_graph @smx") and "kernel k" in bg and "TSTORE" in bg
    assert eg.startswith("execution_graph @smx")
    assert p.num_kernels >= 2  # the row-wise reductions split the chain into kernels
    assert bg.count("kernel k") == p.num_kernels
    names = [n for n, _ in f.last.dumps]
    assert names == [f"{i:02d}_{n}" for i, n in enumerate(PASSES)]
    assert dict(f.last.dumps)["03_partition"].startswith("block_graph")


def test_block_graph_shows_tail_valid_shapes():
    """Tails are carried as valid shapes: (3, 40) with tile (2, 16) needs min(...) valid extents."""
    f = make_softmax()
    run(f)
    bg = f.last.program.block_graph()
    assert re.search(r"valid=\([^)]*min\(", bg), bg


def test_dynamic_loop_in_exec_graph():
    @pypto.jit
    def dl(x: pypto.Tensor((pypto.DYNAMIC, 16), F32)) -> pypto.Tensor((pypto.DYNAMIC, 16), F32):
        b = x.shape[0]
        o = pypto.tensor((b, 16), F32)
        pypto.set_vec_tile_shapes(1, 16)
        for i in pypto.loop(0, b, 1, name="ROWS", idx_name="r"):
            o[i:i + 1, :] = x[i:i + 1, :] + 1.0
        return o

    x = np.ones((3, 16), np.float32)
    np.testing.assert_array_equal(dl(x), 2.0)
    bg = dl.last.program.block_graph()
    assert re.search(r'loop r\w* in range\(0, x_dim0, 1\) "ROWS"', bg), bg
