"""The indexed ops of pypto.language (hw-native-sys pypto's names; ``_ops_indexed``): index
sequences and the triangular mask, gather / scatter, the cube's batched and matrix-vector forms,
valid shapes, padding and dtype views; each differential against numpy (torch for 16-bit) on tiles
loaded with a tail, on both backends."""

import math

import numpy as np
import pytest

import pypto.language as pl
from _util import MODES, run_in
from _pl_ops import _k1, _k2, _k3, _k0, _run, _bits_equal
from pypto.frontends.language import _ops_indexed as X


# --- index sequences, the triangular mask ----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("start,n,dtype,desc", [(0, 37, pl.INT32, False), (-5, 64, pl.INT32, True),
                                                (100, 17, pl.INT16, False), (32767, 9, pl.INT16, True)])
def test_arange(mode, start, n, dtype, desc):
    np_dt = np.int32 if dtype == pl.INT32 else np.int16
    out = np.zeros((1, n), np_dt)
    run_in(mode, _k0(lambda: X.arange(start, [1, n], dtype, descending=desc)), out)
    want = (start - np.arange(n) if desc else start + np.arange(n)).astype(np_dt)
    _bits_equal(out, want[None, :])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("diagonal", [-2, 0, 3])
@pytest.mark.parametrize("dtype", [pl.INT32, pl.FP32])
def test_tri(mode, upper, diagonal, dtype):
    np_dt = np.int32 if dtype == pl.INT32 else np.float32
    ones = np.ones((16, 24), np_dt)
    want = np.triu(ones, diagonal) if upper else np.tril(ones, diagonal)
    out = np.full((16, 24), 5, np_dt)
    run_in(mode, _k0(lambda: X.tri(diagonal, [16, 24], dtype=dtype, upper=upper)), out)
    _bits_equal(out, want)
    # only the valid region is written
    out = np.full((16, 24), 5, np_dt)
    run_in(mode, _k0(lambda: X.tri(diagonal, [16, 24], valid_shape=[11, 19], dtype=dtype, upper=upper)), out)
    want2 = np.full((16, 24), 5, np_dt)
    want2[:11, :19] = want[:11, :19]
    _bits_equal(out, want2)


# --- gather and scatter -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_gather_index_form(mode, dim, dtype):
    r = np.random.default_rng(90)
    x = (r.standard_normal((12, 21)) * 100).astype(dtype)
    idx_shape = (12, 9) if dim == -1 else (5, 21)
    idx = r.integers(0, x.shape[dim], idx_shape).astype(np.int32)
    got = _run(mode, _k2(lambda a, i: X.gather(a, dim, i)), x, idx, out_shape=idx_shape, out_dtype=dtype)
    _bits_equal(got, np.take_along_axis(x, idx, axis=dim))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pattern", range(1, 8))
def test_gather_mask_form(mode, pattern):
    r = np.random.default_rng(91)
    x = r.standard_normal((10, 24)).astype(np.float32)
    cols = {1: x[:, 0::2], 2: x[:, 1::2], 3: x[:, 0::4], 4: x[:, 1::4], 5: x[:, 2::4], 6: x[:, 3::4], 7: x}[pattern]
    got = _run(mode, _k1(lambda a: X.gather(a, mask_pattern=pattern)), x, out_shape=cols.shape)
    _bits_equal(got, cols)
    bits = _run(mode, _k1(lambda a: X.gather(a, mask_pattern=pattern, output_dtype=pl.UINT32)), x,
                out_shape=cols.shape, out_dtype=np.uint32)
    _bits_equal(bits, np.ascontiguousarray(cols).view(np.uint32))


@pytest.mark.parametrize("mode", MODES)
def test_scatter_index_form_leaves_the_rest(mode):
    r = np.random.default_rng(92)
    x = r.standard_normal((12, 21)).astype(np.float32)
    idx = np.stack([r.permutation(21)[:8] for _ in range(12)]).astype(np.int32)  # distinct per row
    src = r.standard_normal((12, 8)).astype(np.float32)
    got = _run(mode, _k3(lambda a, i, s: X.scatter(a, -1, i, s)), x, idx, src)
    want = x.copy()
    np.put_along_axis(want, idx, src, axis=-1)
    _bits_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
def test_tile_gather_and_scatter_use_flat_indices(mode):
    r = np.random.default_rng(93)
    src = r.standard_normal((6, 10)).astype(np.float32)
    idx = r.integers(0, 60, (4, 7)).astype(np.int32)
    got = _run(mode, _k2(lambda s, i: X.tile_gather(s, i, None)), src, idx, out_shape=(4, 7))
    _bits_equal(got, src.reshape(-1)[idx])
    dst = r.standard_normal((6, 10)).astype(np.float32)
    flat = r.permutation(60)[:28].reshape(4, 7).astype(np.int32)
    vals = r.standard_normal((4, 7)).astype(np.float32)
    got = _run(mode, _k3(X.tile_scatter), dst, vals, flat)
    want = dst.copy().reshape(-1)
    want[flat.reshape(-1)] = vals.reshape(-1)
    _bits_equal(got, want.reshape(6, 10))


# --- the cube --------------------------------------------------------------------------------------------


def _mat(a):
    return pl.load(a, [0] * len(a.shape), list(a.shape), target_memory=pl.MemorySpace.Mat)


def _cube2(fn):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(fn(_mat(a), _mat(b)), [0] * len(out.shape), out)
        return out
    return k


def _cube3(fn):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(fn(_mat(a), _mat(b), _mat(c)), [0] * len(out.shape), out)
        return out
    return k


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sa,sb", [((2, 16, 32), (2, 32, 8)), ((1, 8, 16), (3, 16, 24)), ((8, 16), (2, 16, 8))])
def test_batch_matmul_broadcasts_batch_dims(mode, sa, sb):
    r = np.random.default_rng(100)
    a, b = r.standard_normal(sa).astype(np.float32), r.standard_normal(sb).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = _run(mode, _cube2(X.batch_matmul), a, b, out_shape=want.shape, out_dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_int8_accumulates_in_int32():
    r = np.random.default_rng(101)
    a, b = r.integers(-128, 128, (2, 8, 32)).astype(np.int8), r.integers(-128, 128, (2, 32, 16)).astype(np.int8)
    got = _run("cpu", _cube2(X.batch_matmul), a, b, out_shape=(2, 8, 16), out_dtype=np.int32)
    np.testing.assert_array_equal(got, np.matmul(a.astype(np.int32), b.astype(np.int32)))


@pytest.mark.parametrize("mode", MODES)
def test_gemv_family(mode):
    r = np.random.default_rng(102)
    a, b = r.standard_normal((1, 48)).astype(np.float32), r.standard_normal((48, 24)).astype(np.float32)
    acc, bias = r.standard_normal((1, 24)).astype(np.float32), r.standard_normal((1, 24)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    got = _run(mode, _cube2(X.gemv), a, b, out_shape=(1, 24))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    got = _run(mode, _cube3(lambda c, x, y: X.gemv_acc(c, x, y, acc_phase="final")), acc, a, b)
    np.testing.assert_allclose(got, acc + ref, rtol=1e-5, atol=1e-5)
    got = _run(mode, _cube3(lambda x, y, z: X.gemv_bias(x, y, z)), a, b, bias, out_shape=(1, 24))
    np.testing.assert_allclose(got, ref + bias, rtol=1e-5, atol=1e-5)


def test_gemv_fp16_and_int8_against_torch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(1, 32, generator=g).half(), torch.randn(32, 16, generator=g).half()
    out = torch.zeros(1, 16)
    _cube2(X.gemv)(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    ai, bi = torch.randint(-128, 128, (1, 64), dtype=torch.int8), torch.randint(-128, 128, (64, 8), dtype=torch.int8)
    out = torch.zeros(1, 8, dtype=torch.int32)
    _cube2(X.gemv)(ai, bi, out)
    torch.testing.assert_close(out, ai.int() @ bi.int())


# --- valid shape, padding, dtype views --------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_set_validshape_shrinks_what_is_stored(mode):
    r = np.random.default_rng(110)
    a = r.standard_normal((13, 29)).astype(np.float32)
    out = np.full((13, 29), -1, np.float32)
    run_in(mode, _k1(lambda t: X.set_validshape(t, 5, 17)), a, out)
    want = np.full((13, 29), -1, np.float32)
    want[:5, :17] = a[:5, :17]
    _bits_equal(out, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,pad,fill", [(np.float32, pl.PadValue.zero, 0.0), (np.float32, pl.PadValue.max, np.inf),
                                            (np.float32, -math.inf, -np.inf), (np.int16, pl.PadValue.min, -32768),
                                            (np.int32, pl.PadValue.max, 2**31 - 1), (np.float16, math.inf, np.inf)])
def test_fillpad_expand_pads_to_the_larger_shape(mode, dtype, pad, fill):
    r = np.random.default_rng(111)
    a = (r.standard_normal((11, 19)) * 100).astype(dtype)
    out = np.full((24, 40), 3, dtype)
    run_in(mode, _k1(lambda t: X.fillpad_expand(t, [24, 40], pad)), a, out)
    want = np.full((24, 40), fill, dtype)
    want[:11, :19] = a
    _bits_equal(out, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.float32, np.uint8), (np.int16, np.float16),
                                     (np.uint8, np.float32)])
def test_reinterpret_view_reads_the_bytes(mode, src, dst):
    r = np.random.default_rng(112)
    raw = r.integers(0, 256, (8, 32), dtype=np.uint8)
    raw.view(np.uint8)[:] = raw
    a = raw.view(src) if np.dtype(src).itemsize > 1 else raw
    a = np.ascontiguousarray(a)
    if np.dtype(src).kind == "f":
        a[np.isnan(a)] = 1.0  # NaN payloads aside
    want = a.view(dst)

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], list(x.shape))
            pl.store(X.reinterpret_view(t, {np.int32: pl.INT32, np.uint8: pl.UINT8, np.float16: pl.FP16,
                                            np.float32: pl.FP32}[dst]), [0, 0], out)
        return out
    out = np.zeros(want.shape, dst)
    run_in(mode, k, a, out)
    _bits_equal(out, want)


def test_reinterpret_view_with_a_shape():
    a = np.arange(64, dtype=np.float32).reshape(4, 16)
    out = np.zeros((16, 16), np.int8)

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(X.reinterpret_view(pl.load(x, [0, 0], [4, 16]), pl.INT8, shape=[16, 16]), [0, 0], out)
        return out
    k(a, out)
    _bits_equal(out, a.view(np.int8).reshape(16, 16))
