"""Helpers of the pl extra-op tests (test_language_ops_extra.py, test_language_ops_indexed.py):
small @pl.jit kernels over tiles loaded with a tail, the run in a mode, shapes and edge values."""

import numpy as np

import pypto
import pypto.language as pl
from _util import run_in

ERR = pypto.UserError


def _pad(shape):
    """The tile shape for a tensor shape: each dim rounded up to 8, so the tile has a tail."""
    return [-(-d // 8) * 8 for d in shape]


def _load(a):
    return pl.load(a, [0] * len(a.shape), _pad(a.shape), valid_shape=list(a.shape))


def _k1(fn):
    @pl.jit
    def k(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(fn(_load(a)), [0] * len(out.shape), out)
        return out
    return k


def _k2(fn):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(fn(_load(a), _load(b)), [0] * len(out.shape), out)
        return out
    return k


def _k3(fn):
    @pl.jit
    def k(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(fn(_load(a), _load(b), _load(c)), [0] * len(out.shape), out)
        return out
    return k


def _k0(fn):
    """A kernel making its result from nothing but compile-time values."""
    @pl.jit
    def k(out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(fn(), [0] * len(out.shape), out)
        return out
    return k


def _run(mode, kernel, *arrays, out_shape=None, out_dtype=None):
    ref = arrays[0]
    out = np.full(out_shape if out_shape is not None else ref.shape, 0,
                  out_dtype if out_dtype is not None else ref.dtype)
    run_in(mode, kernel, *arrays, out)
    return out


def _shape(r, lo=3, hi=40):
    return (int(r.integers(lo, hi)), int(r.integers(lo, hi)))


def _edge_floats(r, shape, dtype=np.float32):
    a = r.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], dtype)
    idx = r.choice(flat.size, size=min(flat.size, 2 * len(edges)), replace=False)
    flat[idx] = np.resize(edges, idx.size)
    return a


def _bits_equal(got, ref, signed_zero=True):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    if got.dtype.kind == "f":
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        assert same.all(), f"differs at {np.argwhere(~same)[:5].tolist()}: {got[~same][:5]} vs {ref[~same][:5]}"
        # signed zeros too (not for max / min of +0 and -0, which IEEE leaves open)
        assert not signed_zero or (np.signbit(got[got == 0]) == np.signbit(ref[got == 0])).all()
    else:
        np.testing.assert_array_equal(got, ref)


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]


def _ints(r, shape, dtype):
    info = np.iinfo(dtype)
    a = r.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = a.reshape(-1)
    edges = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype=dtype)
    flat[: min(flat.size, edges.size)] = edges[: flat.size]
    return a
