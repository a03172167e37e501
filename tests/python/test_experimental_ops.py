"""pypto.experimental: CANN PyPTO's custom attention ops (composites of the tensor level) and its
operation options, against numpy on both backends."""

import json

import numpy as np
import pytest

import pypto
from _util import MODES, assert_close, randn, rng

F32, BF16, I32 = pypto.DT_FP32, pypto.DT_BF16, pypto.DT_INT32
X = pypto.experimental


@pytest.mark.parametrize("mode", MODES)
def test_online_softmax_over_two_blocks_equals_softmax(mode):
    k, q, hd = 24, 20, 8

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(s0: pypto.Tensor((k, q), F32), s1: pypto.Tensor((k, q), F32), v0: pypto.Tensor((hd, k), F32),
          v1: pypto.Tensor((hd, k), F32)):
        pypto.set_vec_tile_shapes(32, 32)
        pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])
        e0, m0, l0 = X.online_softmax(s0, 0.25)
        e1, m1, l1 = X.online_softmax(s1, 0.25)
        o0 = pypto.matmul(v0, pypto.cast(e0, F32), F32)
        o1 = pypto.matmul(v1, pypto.cast(e1, F32), F32)
        m, total, o = X.online_softmax_update(m0, l0, o0, m1, l1, o1)
        return e0, m, total, o / total

    r = rng(7)
    s0, s1, v0, v1 = randn(r, (k, q)), randn(r, (k, q)), randn(r, (hd, k)), randn(r, (hd, k))
    e0, m, total, out = f(s0, s1, v0, v1)
    s = np.concatenate([s0, s1]).astype(np.float64) * 0.25
    p = np.exp(s - s.max(0, keepdims=True))
    assert_close(m, s.max(0, keepdims=True), rtol=1e-6, atol=0)
    assert_close(total, (np.exp(s - s.max(0, keepdims=True))).sum(0, keepdims=True), rtol=1e-5, atol=1e-6)
    want = np.concatenate([v0, v1], axis=1).astype(np.float64) @ (p / p.sum(0, keepdims=True))
    # P is rounded to bf16 before P.V (PyPTO's exp_scores_bf16): about 3 significant digits
    assert_close(out, want, rtol=2e-2, atol=2e-2)
    e0_ref = np.exp(s0 * 0.25 - (s0 * 0.25).max(0, keepdims=True))
    assert_close(pypto.from_bf16(e0), e0_ref, rtol=8e-3, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_transposed_batchmatmul(mode):
    M, B, K, N = 12, 3, 16, 10

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(a: pypto.Tensor((M, B, K), F32), b: pypto.Tensor((B, K, N), F32)):
        pypto.set_vec_tile_shapes(16, 4, 16)
        pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])
        return X.transposed_batchmatmul(a, b, F32)

    r = rng(8)
    a, b = randn(r, (M, B, K)), randn(r, (B, K, N))
    ref = np.einsum("mbk,bkn->mbn", a.astype(np.float64), b.astype(np.float64))
    assert_close(f(a, b), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_gather_in_ub_and_l1_follow_the_page_table(mode):
    tokens, hidden, bs, k = 32, 24, 8, 6

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(kv: pypto.Tensor((tokens, hidden), F32), idx: pypto.Tensor((1, k), I32),
          table: pypto.Tensor((1, 4), I32)):
        pypto.set_vec_tile_shapes(8, 32)
        rows = X.gather_in_ub(kv, idx, table, bs, -2)
        cols = X.gather_in_l1(kv, idx, table, bs, 16, True, True)
        return rows, cols

    r = rng(9)
    kv = randn(r, (tokens, hidden))
    table = np.array([[2, 0, 3, 1]], np.int32)
    idx = np.array([[0, 7, 8, 15, 30, 17]], np.int32)
    rows, cols = f(kv, idx, table)
    phys = table[0, idx[0] // bs] * bs + idx[0] % bs
    np.testing.assert_array_equal(rows, kv[phys])
    np.testing.assert_array_equal(cols, kv[phys, :16])  # is_trans is a layout hint: [n, size]


def test_operation_options_are_recorded_in_the_dumps(tmp_path):
    @pypto.jit(debug_options={"dump_dir": str(tmp_path), "dump_passes": True})
    def f(x: pypto.Tensor((4, 8), F32)):
        X.set_operation_options(combine_axis=True)
        return x + 1.0

    try:
        f(np.ones((4, 8), np.float32))
        assert X.get_operation_options() == {"combine_axis": True}
        opts = json.loads((tmp_path / "f" / "options.json").read_text())
        assert opts["operation"] == {"combine_axis": True}
    finally:
        X.set_operation_options(combine_axis=False)
    with pytest.raises(pypto.UserError, match="combine_axis=1 must be True or False"):
        X.set_operation_options(combine_axis=1)


def test_errors_name_the_op():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), pypto.DT_FP16)):
        return X.online_softmax(x, 1.0)[1]

    with pytest.raises(pypto.UserError, match="online_softmax: scores must be a 2-D DT_FP32 tensor"):
        f(np.ones((4, 8), np.float16))

    @pypto.jit
    def g(kv: pypto.Tensor((8, 4), F32), idx: pypto.Tensor((1, 2), I32), t: pypto.Tensor((1, 2), I32)):
        return X.gather_in_ub(kv, idx, t, 4, 0)

    with pytest.raises(pypto.UserError, match="gather_in_ub: axis must be -2"):
        g(np.ones((8, 4), np.float32), np.zeros((1, 2), np.int32), np.zeros((1, 2), np.int32))
