"""verify_passes: numpy semantics of the tensor graph vs the interpreter vs native code."""

import numpy as np
import pytest

import pypto
from pypto.tools import verify


def make():
    @pypto.jit(debug_options={"verify_passes": True})
    def f(x: pypto.Tensor((pypto.DYNAMIC, 40), pypto.DT_FP32), o: pypto.Tensor((pypto.DYNAMIC, 40), pypto.DT_FP32)) \
            -> pypto.Tensor((pypto.DYNAMIC, 1), pypto.DT_FP32):
        b = x.shape[0]
        s = pypto.tensor((b, 1), pypto.DT_FP32)
        pypto.set_vec_tile_shapes(1, 16)
        for i in pypto.loop(0, b, 1, name="L", idx_name="i"):
            v = x[i:i + 1, :]
            e = pypto.exp(v - pypto.amax(v, dim=-1, keepdim=True))
            o[i:i + 1, :] = e / pypto.sum(e, dim=-1, keepdim=True) + 0.5
            s[i:i + 1, :] = pypto.sum(pypto.abs(v), dim=-1, keepdim=True)
        return s

    return f


def test_verify_passes_agrees_on_every_level():
    f = make()
    x = np.random.default_rng(0).standard_normal((5, 40)).astype(np.float32)
    o = np.zeros_like(x)
    s = f(x, o)
    assert f.last_stats["verify"].startswith("verify_passes: tensor graph == block graph after")
    assert "generated code" in f.last_stats["verify"]
    np.testing.assert_allclose(s[:, 0], np.abs(x).sum(-1), rtol=1e-5)


def test_verify_names_the_level_that_changes_the_answer():
    f = make()
    x = np.random.default_rng(1).standard_normal((3, 40)).astype(np.float32)
    o = np.zeros_like(x)
    before = [x.copy(), o.copy()]
    s = f(x, o)
    o_bad = o.copy()
    o_bad[2, 7] += 1.0  # as if the generated code had a bug
    with pytest.raises(pypto.InternalError, match=r"generated code \(cpu backend\) changes the answer .* "
                                                  r"parameter 'o': 1 of 120 elements differ; first at \(2, 7\)"):
        verify.verify(f.last.program, before, [s], [x, o_bad], "cpu")


def test_verify_passes_on_a_chain_with_casts_and_split_reductions():
    @pypto.jit(debug_options={"verify_passes": True})
    def g(x: pypto.Tensor((9, 70), pypto.DT_FP32)) -> (pypto.Tensor((9, 70), pypto.DT_INT32),
                                                         pypto.Tensor((9, 1), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 32)
        y = pypto.cast(x * 100.0, pypto.DT_INT32)
        m = pypto.amin(pypto.cast(pypto.cast(x, pypto.DT_FP16), pypto.DT_FP32), dim=-1, keepdim=True)
        return y, m

    x = (np.random.default_rng(2).standard_normal((9, 70)) * 3).astype(np.float32)
    y, m = g(x)
    assert "generated code" in g.last_stats["verify"]
    np.testing.assert_array_equal(y, np.trunc(x.astype(np.float32) * np.float32(100)).astype(np.int32))


def test_verify_passes_with_matmul():
    import numpy as np

    import pypto

    @pypto.jit(debug_options={"verify_passes": True})
    def f(a: pypto.Tensor((40, 30), pypto.DT_FP32), b: pypto.Tensor((20, 30), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [8, 16], [16, 16])
        return pypto.relu(pypto.matmul(a, b, b_trans=True))

    a = np.random.default_rng(0).random((40, 30), dtype=np.float32)
    b = np.random.default_rng(1).random((20, 30), dtype=np.float32)
    f(a, b)
    assert "==" in f.last_stats["verify"] and "differ" not in f.last_stats["verify"]


def test_verify_lists_every_pass():
    f = make()
    x = np.random.default_rng(3).standard_normal((2, 40)).astype(np.float32)
    f(x, np.zeros_like(x))
    assert f.last.program.snapshot_names == ["partition", "fuse_instructions"]
    report = f.last_stats["verify"]
    for step in ("block graph after expand_tiles, partition", "block graph after fuse_instructions",
                 "block graph after allocate_buffers", "generated code"):
        assert step in report, report


def test_verify_names_the_pass_that_changes_the_answer():
    """A program whose fuse_instructions snapshot computes something else: verify names that pass."""
    f = make()
    x = np.random.default_rng(4).standard_normal((3, 40)).astype(np.float32)
    o = np.zeros_like(x)
    before = [x.copy(), o.copy()]
    s = f(x, o)
    real = f.last.program

    class BrokenFusion:
        snapshot_names = real.snapshot_names

        def __getattr__(self, name):
            return getattr(real, name)

        def snapshot_program(self, i):
            prog = real.snapshot_program(i)
            if real.snapshot_names[i] != "fuse_instructions":
                return prog

            class Wrong:
                def run(self, params, *args):
                    outs, stats = prog.run(params, *args)
                    params[1][0, 3] += 2.0  # as if a fused instruction were wrong
                    return outs, stats
            return Wrong()

    with pytest.raises(pypto.InternalError, match=r"block graph after fuse_instructions \(reference interpreter\) "
                                                  r"changes the answer of block graph after expand_tiles, partition"):
        verify.verify(BrokenFusion(), before, [s], [x, o], "cpu")
