"""Fused loops at both vector widths (include/pypto/kernel_vec.hpp): a kernel built with AVX-512
computes on 16 lanes, one built without (PYPTO_CPU_ISA=avx2) on 8. Every result has the same
bits at both widths (row sums accumulate 8-lane vectors in one order at either width);
elementwise chains and max / min also give the interpreter's bits, sums agree with it to a few
ulp. Rows with tails of every size up to 64, special values, outputs at any alignment.
Where the CPU lacks AVX-512 the 16-lane runs are skipped, saying so."""

import numpy as np
import pytest

import pypto
from pypto import _core
from _util import rng, run_in

F32 = pypto.DT_FP32
T = pypto.Tensor


def _levels():
    return dict(_core.cpu_paths()["levels"])


def _run(level, fn, *args, monkeypatch):
    if level is not None:
        missing = _levels()[level]
        if missing:
            pytest.skip(f"PYPTO_CPU_ISA={level}: this CPU lacks {missing}")
        monkeypatch.setenv("PYPTO_CPU_ISA", level)
    else:
        monkeypatch.delenv("PYPTO_CPU_ISA", raising=False)
    return run_in("cpu", fn, *args)


def _specials(x):
    flat = x.reshape(-1)
    flat[::97] = np.nan
    flat[5::89] = np.inf
    flat[7::83] = -np.inf
    flat[11::79] = -0.0
    flat[13::73] = 1e-42  # subnormal
    return x


@pytest.mark.parametrize("cols", [1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 200, 255, 256, 257, 300, 2048 + 40])
def test_fused_chains_and_row_reductions_agree_across_widths(cols, monkeypatch):
    rows = 11

    @pypto.jit
    def f(x: T((rows, cols), F32)):
        pypto.set_vec_tile_shapes(4, cols)
        y = pypto.exp(x * 0.25 - 1.0)
        s = pypto.sum(y, dim=-1, keepdim=True)
        m = pypto.amax(x, dim=-1, keepdim=True)
        n = pypto.amin(pypto.abs(x), dim=-1, keepdim=True)
        return y / s, s, m, n, pypto.maximum(x, 0.5) - pypto.sqrt(pypto.abs(x))

    r = rng(cols)
    x = r.standard_normal((rows, cols)).astype(np.float32) * 4
    want = run_in("interp", f, x)
    narrow = _run("avx2", f, x, monkeypatch=monkeypatch)
    best = _run(None, f, x, monkeypatch=monkeypatch)
    for g, n in zip(best, narrow):  # the same bits at both widths
        np.testing.assert_array_equal(g, n)
    # Elementwise results and max / min: the interpreter's bits. Sums: a few ulp from the
    # interpreter's (its generic build sums in another order).
    for i in (2, 3, 4):
        np.testing.assert_array_equal(best[i], want[i])
    tol = 4e-7 * max(1, np.log2(cols))
    np.testing.assert_allclose(best[1], want[1], rtol=tol)
    np.testing.assert_allclose(best[0], want[0], rtol=2 * tol)
    # Specials: NaN in a row makes its sum and max NaN; elementwise results match bit for bit.
    xs = _specials(r.standard_normal((rows, cols)).astype(np.float32))
    want = run_in("interp", f, xs)
    got = _run(None, f, xs, monkeypatch=monkeypatch)
    for g, n in zip(got, _run("avx2", f, xs, monkeypatch=monkeypatch)):
        np.testing.assert_array_equal(g, n)
    np.testing.assert_array_equal(got[4], want[4])
    for g, w in zip(got[1:4], want[1:4]):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_allclose(g[~np.isnan(g)], w[~np.isnan(w)], rtol=4e-6)


@pytest.mark.parametrize("level", ["avx2", "avx512"])
def test_each_width_against_numpy(level, monkeypatch):
    rows, cols = 37, 1000

    @pypto.jit
    def softmax(x: T((rows, cols), F32)) -> T((rows, cols), F32):
        pypto.set_vec_tile_shapes(8, cols)
        e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
        return e / pypto.sum(e, dim=-1, keepdim=True)

    x = rng(3).standard_normal((rows, cols)).astype(np.float32) * 3
    got = _run(level, softmax, x, monkeypatch=monkeypatch)
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("cols", [1, 15, 16, 17, 64, 257])
def test_tanh_has_the_instructions_bits_at_both_widths(cols, monkeypatch):
    # VTanh (16 lanes with AVX-512) repeats pto::simd::math::tanh's operations: the same bits as
    # the 8-lane code across the polynomial / exp branch at |x| = 1, the rounding to +-1 from 9.1
    # on, and the specials; GELU-tanh's chain too. (The interpreter's TTANH is pto::ref's, within
    # an ulp of it.)
    rows = 37

    @pypto.jit
    def f(x: T((rows, cols), F32)):
        pypto.set_vec_tile_shapes(8, cols)
        return pypto.tanh(x), x * 0.5 * (pypto.tanh((x + x * x * x * 0.044715) * 0.7978845608) + 1.0)

    r = rng(cols + 1000)
    x = (r.standard_normal((rows, cols)) * 3).astype(np.float32)
    flat = x.reshape(-1)
    edges = np.array([1.0, -1.0, np.nextafter(1, 0), np.nextafter(-1, 0), 9.125, 9.1, 20.0, -20.0, 1e-30, 0.5,
                      88.0, 1e-40, 0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    flat[:edges.size] = edges[:flat.size]
    _specials(x)
    want = run_in("interp", f, x)
    narrow = _run("avx2", f, x, monkeypatch=monkeypatch)
    wide = _run("avx512", f, x, monkeypatch=monkeypatch)
    for w, n, g in zip(want, narrow, wide):
        np.testing.assert_array_equal(g.view(np.uint32), n.view(np.uint32))
    np.testing.assert_allclose(wide[0], want[0], rtol=3e-7, atol=1e-37)
    fin = np.isfinite(x)  # GELU's 1 + tanh cancels near -1: an ulp of tanh, scaled by x
    assert (np.abs(wide[1][fin] - want[1][fin]) <= 2e-7 * (1 + np.abs(x[fin]))).all()
    t = np.tanh(x.astype(np.float64))
    ok = ~np.isnan(x)
    np.testing.assert_allclose(wide[0][ok], t[ok], rtol=3e-7, atol=1e-37)
    assert np.isnan(wide[0][~ok]).all()
    np.testing.assert_array_equal(np.signbit(wide[0][x == 0]), np.signbit(x[x == 0]))
