"""The cube-path examples (examples/flash_attention.py, examples/indexer_prolog.py) at small
sizes with tails, on both backends, against float64 numpy references."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

import flash_attention as fa  # noqa: E402
import indexer_prolog as ip  # noqa: E402

BACKENDS = ["cpu", "interp"]


@pytest.mark.parametrize("mode", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("bh,seq,dim,block", [(3, 192, 32, 64), (2, 128, 64, 32)])
def test_flash_attention(mode, causal, bh, seq, dim, block):
    r = np.random.default_rng(seq + dim + causal)
    q, k, v = (r.standard_normal((bh, seq, dim)).astype(np.float32) for _ in range(3))
    fn = fa.make_attention(bh, seq, dim, causal, block, block, runtime_options={"run_mode": mode})
    out = np.zeros_like(q)
    fn(*((q, k, v, fa.causal_mask(block), out) if causal else (q, k, v, out)))
    np.testing.assert_allclose(out, fa.reference(q, k, v, causal), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_query_block_of_several_tiles_and_defaults(causal):
    # block_q = 64 in tiles of 32 rows (the cube and vector grids both have two points per
    # query block); then the default blocks (512 x 256 in tiles of 128 rows without a mask,
    # 256 x 256 with one).
    bh, seq, dim = 2, 1024, 32
    r = np.random.default_rng(40 + causal)
    q, k, v = (r.standard_normal((bh, seq, dim)).astype(np.float32) for _ in range(3))
    assert fa.default_blocks(seq, causal) == ((256, 256) if causal else (512, 256))
    for fn, block in ((fa.make_attention(bh, seq, dim, causal, 64, 64, 32), 64),
                      (fa.make_attention(bh, seq, dim, causal), fa.default_blocks(seq, causal)[0])):
        out = np.zeros_like(q)
        fn(*((q, k, v, fa.causal_mask(block), out) if causal else (q, k, v, out)))
        np.testing.assert_allclose(out, fa.reference(q, k, v, causal), rtol=1e-4, atol=1e-5)


def test_flash_attention_checks_blocks():
    with pytest.raises(ValueError):
        fa.make_attention(1, 100, 32, False, 64, 64)


@pytest.mark.parametrize("mode", BACKENDS)
@pytest.mark.parametrize("T,K,H,D,R", [(37, 96, 2, 64, 32), (64, 200, 3, 32, 16)])
def test_indexer_prolog(mode, T, K, H, D, R):
    inputs = ip.random_inputs(T, K, H, D, R, seed=T)
    fn = ip.make_indexer_prolog(T, K, H, D, R, runtime_options={"run_mode": mode})
    q8 = np.zeros((T, H * D), np.int8)
    qs = np.zeros((T, H), np.float32)
    fn(*inputs, q8, qs)
    ref, ref_scale = ip.reference(*inputs, H, D, R)
    np.testing.assert_allclose(qs, ref_scale, rtol=1e-5)
    expect = np.clip(np.rint(ref / np.repeat(ref_scale, D, axis=1)), -128, 127)
    # fp32 against float64: a value within rounding of a .5 boundary may land one step away.
    diff = np.abs(q8.astype(np.float64) - expect)
    assert diff.max() <= 1 and (diff > 0).mean() < 1e-3


@pytest.mark.parametrize("mode", BACKENDS)
def test_matmul_ffn_example(mode):
    import matmul_ffn as mf

    r = np.random.default_rng(2)
    t, d, h = 50, 40, 72
    x = r.standard_normal((t, d)).astype(np.float32)
    w1 = (r.standard_normal((d, h)) / 8).astype(np.float32)
    w2 = (r.standard_normal((h, d)) / 8).astype(np.float32)
    ffn = mf.make_ffn(t, d, h, runtime_options={"run_mode": mode})
    np.testing.assert_allclose(ffn(x, w1, w2), mf.ffn_reference(x, w1, w2), rtol=1e-4, atol=1e-5)
    mm = mf.make_matmul(t, d, h, runtime_options={"run_mode": mode})
    np.testing.assert_allclose(mm(x, w1), x.astype(np.float64) @ w1, rtol=1e-4, atol=1e-5)
