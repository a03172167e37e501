"""The native CPU backend (generated C++) against the reference interpreter on the same
programs, and the kernel cache."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pypto
from _util import run_both


def softmax_program(shape, tile):
    @pypto.jit
    def softmax(x: pypto.Tensor((pypto.DYNAMIC,) + shape[1:], pypto.DT_FP32)) \
            -> pypto.Tensor((pypto.DYNAMIC,) + shape[1:], pypto.DT_FP32):
        b = x.shape[0]
        out = pypto.tensor((b,) + shape[1:], pypto.DT_FP32)
        pypto.set_vec_tile_shapes(*tile)
        for i in pypto.loop(0, b, 1, name="L", idx_name="i"):
            v = x[i:i + 1, :, :]
            e = pypto.exp(v - pypto.amax(v, dim=-1, keepdim=True))
            pypto.assemble(e / pypto.sum(e, dim=-1, keepdim=True), [i, 0, 0], out)
        return out

    return softmax



@pytest.mark.parametrize("shape,tile", [((3, 5, 64), (1, 4, 64)), ((2, 7, 100), (1, 3, 32)),
                                        ((4, 16, 256), (1, 16, 256))])
def test_softmax_native_matches_interpreter(shape, tile):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3
    ref, nat = run_both(softmax_program(shape, tile), x)
    np.testing.assert_allclose(nat, ref, rtol=2e-6, atol=1e-8)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(nat, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_elementwise_chain_and_casts_native_matches_interpreter():
    @pypto.jit
    def chain(x: pypto.Tensor((33, 70), pypto.DT_FP32), g: pypto.Tensor((1, 70), pypto.DT_FP32)) \
            -> pypto.Tensor((33, 70), pypto.DT_FP16):
        pypto.set_vec_tile_shapes(8, 32)
        y = pypto.sqrt(pypto.abs(x) + 1.0) * g - pypto.maximum(x, 0.25) / 3.0
        return pypto.cast(pypto.relu(y) + pypto.minimum(x, -y), pypto.DT_FP16)

    rng = np.random.default_rng(2)
    x = rng.standard_normal((33, 70)).astype(np.float32)
    g = rng.standard_normal((1, 70)).astype(np.float32)
    ref, nat = run_both(chain, x, g)
    assert nat.dtype == np.float16
    np.testing.assert_array_equal(nat, ref)


def test_column_reductions_and_int32_native_matches_interpreter():
    @pypto.jit
    def colred(x: pypto.Tensor((3, 10, 9), pypto.DT_INT32)) -> pypto.Tensor((3, 1, 9), pypto.DT_INT32):
        pypto.set_vec_tile_shapes(1, 4, 8)
        return pypto.sum(x, dim=1, keepdim=True) + pypto.amax(x, dim=1, keepdim=True) * 2

    x = np.random.default_rng(3).integers(-1000, 1000, (3, 10, 9)).astype(np.int32)
    ref, nat = run_both(colred, x)
    np.testing.assert_array_equal(nat, ref)
    np.testing.assert_array_equal(nat, x.sum(1, keepdims=True) + x.max(1, keepdims=True) * 2)


def test_generated_source_is_readable():
    f = softmax_program((2, 4, 64), (1, 4, 64))
    f(np.zeros((2, 4, 64), np.float32))
    src = f.last.program.native_source()
    assert "extern \"C\" void pypto_k0_" in src
    for instr in ("LoadView<float, 3>", "pto::TROWMAX", "pto::TROWEXPANDEXPDIF", "StoreNDStream<float, 3>"):
        assert instr in src


def test_second_process_uses_the_kernel_cache(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, pypto
        @pypto.jit
        def f(x: pypto.Tensor((8, 40), pypto.DT_FP32)) -> pypto.Tensor((8, 40), pypto.DT_FP32):
            pypto.set_vec_tile_shapes(4, 40)
            return pypto.exp(x) * 3.0
        x = np.ones((8, 40), np.float32)
        y = f(x)
        assert np.allclose(y, np.exp(1.0) * 3.0)
        print(f.last_stats["compile_ms"])
    """)
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path))
    first = float(subprocess.check_output([sys.executable, "-c", script], env=env, text=True).strip())
    second = float(subprocess.check_output([sys.executable, "-c", script], env=env, text=True).strip())
    assert first > 0 and second == 0
    assert len(list((tmp_path / "kernels").glob("*.so"))) == 1


def test_concurrent_processes_share_a_cold_cache(tmp_path):
    # Two processes compile the same program into an empty cache at the same time: both must
    # succeed and exactly one library must be published.
    script = textwrap.dedent("""
        import numpy as np, pypto
        @pypto.jit
        def g(x: pypto.Tensor((16, 48), pypto.DT_FP32)) -> pypto.Tensor((16, 48), pypto.DT_FP32):
            pypto.set_vec_tile_shapes(8, 48)
            return pypto.sqrt(pypto.abs(x)) + 2.0
        x = np.full((16, 48), 4.0, np.float32)
        assert np.allclose(g(x), 4.0)
    """)
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env) for _ in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    assert len(list((tmp_path / "kernels").glob("*.so"))) == 1
    assert not list((tmp_path / "kernels").glob("*.*.so"))  # no temporaries left behind


def test_fused_elementwise_chain_matches_interpreter_bit_for_bit():
    # Eight elementwise instructions fuse into one loop over the tile (no exp: the native
    # vector exp and the reference differ by an ulp); with tails in both dims.
    @pypto.jit
    def chain(x: pypto.Tensor((37, 99), pypto.DT_FP32), y: pypto.Tensor((37, 99), pypto.DT_FP32)) \
            -> pypto.Tensor((37, 99), pypto.DT_FP32):
        pypto.set_vec_tile_shapes(8, 32)
        a = pypto.maximum(x * 2.0 + 1.0, 0.0) - pypto.abs(y)
        return pypto.minimum(pypto.neg(a) / (pypto.sqrt(pypto.abs(x)) + 1.5), y) * 0.25

    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal((37, 99)).astype(np.float32) for _ in range(2))
    ref, nat = run_both(chain, x, y)
    np.testing.assert_array_equal(nat, ref)
    assert re.search(r"fused: (TLOAD )*TMULS TADDS TMAXS", chain.last.program.native_source())
