"""Ops whose results are never read are not computed (Function::LiveOps, used by expand_tiles):
the tile graph's dump lists them; everything that reaches an output still runs."""

import json

import numpy as np
import pytest

import pypto

torch = pytest.importorskip("torch")
F32, I32 = pypto.DT_FP32, pypto.DT_INT32


def dumped(tmp_path, name, n):
    return next(tmp_path.rglob(f"{name}/passes/{n}")).read_text()


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_unused_results_are_not_computed(tmp_path, mode):
    @pypto.jit(debug_options={"dump_dir": str(tmp_path), "dump_passes": True}, runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((64, 130), F32), out: pypto.Tensor((64, 8), I32), s: pypto.Tensor((64, 1), F32)):
        pypto.set_vec_tile_shapes(16, 130)
        unused = pypto.exp(x) * 2.0  # noqa: F841 - never read
        out[:] = pypto.topk(x, 8)[1]  # the values half of topk is not needed
        t = pypto.sqrt(pypto.abs(x))
        dead_in_loop = None
        for i in pypto.loop(2):
            dead_in_loop = t[i * 32:(i + 1) * 32, :] + 1.0  # noqa: F841 - a loop with only dead ops
        s[:] = pypto.sum(t, dim=-1, keepdim=True)

    x = torch.randn(64, 130)
    out, s = torch.zeros(64, 8, dtype=torch.int32), torch.zeros(64, 1)
    f(x, out, s)
    assert torch.equal(out, torch.topk(x, 8).indices.to(torch.int32))
    np.testing.assert_allclose(s.numpy(), np.sqrt(np.abs(x.numpy())).sum(-1, keepdims=True), rtol=1e-5)
    tiles = dumped(tmp_path, "f", "02_expand_tiles.txt")
    note = tiles[tiles.index("# not computed"):]
    assert "pypto.exp" in note and "pypto.mul_scalar" in note and "pypto.gather" in note and "pypto.add_scalar" in note
    assert "test_dead_ops.py:" in note  # each with the user's line
    assert "loop" not in tiles  # the loop held only dead ops
    assert "sqrt" in tiles[:tiles.index("# not computed")]  # a result read later is computed
    kernels = dumped(tmp_path, "f", "03_partition.txt")
    assert "TEXP" not in kernels and "TROWTOPKIDX" in kernels and "TROWTOPK " not in kernels
    dead = json.loads(dumped(tmp_path, "f", "02_expand_tiles.json"))["dead_ops"]
    assert len(dead) == 4


def test_in_place_writes_and_what_they_read_always_run():
    @pypto.jit
    def f(x: pypto.Tensor((8, 16), F32), idx: pypto.Tensor((8, 16), pypto.DT_INT64), out: pypto.Tensor((8, 16), F32)):
        pypto.set_vec_tile_shapes(8, 16)
        z = pypto.zeros([8, 16], dtype=F32)
        pypto.scatter_(z, 1, idx, x * 3.0)  # z written in place, then read
        buf = pypto.tensor((8, 16), F32)
        buf[:] = x + 1.0  # a created tensor, written and read back
        out[:] = z + buf

    x = torch.randn(8, 16)
    idx = torch.stack([torch.randperm(16) for _ in range(8)])
    out = torch.zeros(8, 16)
    f(x, idx, out)
    want = torch.zeros(8, 16).scatter_(1, idx, x * 3.0) + (x + 1.0)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
