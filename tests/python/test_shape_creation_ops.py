"""transpose / permute (strided loads of the permuted view) and full / zeros / ones / arange, on
both backends, against numpy: every pair of dims, tails, fused consumers, dtypes."""

import itertools

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

F32, F16, I32, I64, BOOL = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_INT32, pypto.DT_INT64, pypto.DT_BOOL


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dims", list(itertools.combinations(range(3), 2)))
def test_transpose_every_pair(dims, mode):
    shape = (3, 11, 37)
    out_shape = list(shape)
    out_shape[dims[0]], out_shape[dims[1]] = out_shape[dims[1]], out_shape[dims[0]]

    @pypto.jit
    def f(x: pypto.Tensor(shape, F32)):
        pypto.set_vec_tile_shapes(2, 8, 16)
        return pypto.transpose(x, *dims) * 2.0 + 1.0

    x = rng(0).standard_normal(shape).astype(np.float32)
    got = run_in(mode, f, x)
    np.testing.assert_array_equal(got, np.swapaxes(x, *dims) * np.float32(2) + np.float32(1))


@pytest.mark.parametrize("mode", MODES)
def test_permute_of_a_computed_value_and_a_slice(mode):
    @pypto.jit
    def f(x: pypto.Tensor((4, 6, 10, 12), F32)):
        pypto.set_vec_tile_shapes(1, 4, 8, 8)
        y = pypto.exp(x)
        return pypto.permute(y, [0, 2, 1, 3]), pypto.permute(x[1:3, :, 2:9, :], (3, 2, 1, 0)).clip(-1.0, 1.0)

    x = rng(1).standard_normal((4, 6, 10, 12)).astype(np.float32)
    a, b = run_in(mode, f, x)
    np.testing.assert_allclose(a, np.transpose(np.exp(x), (0, 2, 1, 3)), rtol=5e-7)
    np.testing.assert_array_equal(b, np.clip(np.transpose(x[1:3, :, 2:9, :], (3, 2, 1, 0)), -1, 1))


@pytest.mark.parametrize("mode", MODES)
def test_transpose_into_matmul_and_16bit(mode):
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(q: pypto.Tensor((2, 16, 32), F32), k: pypto.Tensor((2, 24, 32), F32), h: pypto.Tensor((8, 40), F16)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [24, 24])
        s = pypto.matmul(q, pypto.transpose(k, 1, 2), pypto.DT_FP32)
        pypto.set_vec_tile_shapes(16, 8)
        return s, pypto.transpose(h, 0, 1)

    q = rng(2).standard_normal((2, 16, 32)).astype(np.float32)
    k = rng(3).standard_normal((2, 24, 32)).astype(np.float32)
    h = torch.randn(8, 40).to(torch.float16)
    s, ht = run_in(mode, f, q, k, h)
    np.testing.assert_allclose(s, q.astype(np.float64) @ np.swapaxes(k, 1, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ht.numpy(), h.numpy().T)


@pytest.mark.parametrize("mode", MODES)
def test_full_zeros_ones_arange(mode):
    @pypto.jit
    def f(x: pypto.Tensor((5, 300), F32)):
        pypto.set_vec_tile_shapes(2, 128)
        return (x + pypto.full([5, 300], 2.5, F32), pypto.zeros(5, 300, dtype=I32), pypto.ones([7], dtype=F16),
                pypto.arange(300), pypto.arange(3, 1000, 7), pypto.arange(0.5, 30.0, 0.25),
                pypto.arange(10, dtype=I64), pypto.full([4, 4], True, BOOL), x * pypto.arange(300.0))

    x = rng(4).standard_normal((5, 300)).astype(np.float32)
    got = run_in(mode, f, x)
    wants = [x + np.float32(2.5), np.zeros((5, 300), np.int32), np.ones(7, np.float16), np.arange(300, dtype=np.int32),
             np.arange(3, 1000, 7, dtype=np.int32), np.arange(0.5, 30.0, 0.25, dtype=np.float32),
             np.arange(10, dtype=np.int64), np.ones((4, 4), bool), x * np.arange(300, dtype=np.float32)]
    for i, (g, w) in enumerate(zip(got, wants)):
        assert g.dtype == w.dtype, (i, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


def test_shape_creation_errors():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        return pypto.permute(x, [0, 0])

    with pytest.raises(pypto.UserError, match=r"pypto.permute: \[0, 0\] is not a permutation"):
        f(np.zeros((4, 8), np.float32))

    @pypto.jit
    def g(x: pypto.Tensor((4, 8), F32)):
        return x + pypto.full([4, 8], 1.5, I32)

    with pytest.raises(pypto.UserError, match=r"pypto.full: 1.5 is not a value of"):
        g(np.zeros((4, 8), np.float32))

    @pypto.jit
    def h(x: pypto.Tensor((4, 8), F32)):
        return pypto.transpose(x, 0, 2)

    with pytest.raises(pypto.UserError, match=r"pypto.transpose: dim 2 is out of range"):
        h(np.zeros((4, 8), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_squeeze_unsqueeze_reshape(mode):
    @pypto.jit
    def f(x: pypto.Tensor((6, 1, 20), F32), r: pypto.Tensor((6, 20), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        a = pypto.squeeze(x, 1) + r
        pypto.set_vec_tile_shapes(4, 1, 8)
        b = pypto.unsqueeze(r, 1) * x
        pypto.set_vec_tile_shapes(1, 4, 1, 8)
        c = pypto.reshape(x, [1, 6, 1, 20]) - 1.0
        return a, b, c

    x = rng(5).standard_normal((6, 1, 20)).astype(np.float32)
    r = rng(6).standard_normal((6, 20)).astype(np.float32)
    a, b, c = run_in(mode, f, x, r)
    np.testing.assert_array_equal(a, x[:, 0] + r)
    np.testing.assert_array_equal(b, r[:, None] * x)
    np.testing.assert_array_equal(c, x.reshape(1, 6, 1, 20) - np.float32(1))


@pytest.mark.parametrize("mode", MODES)
def test_clone_expand_concat_pad(mode):
    @pypto.jit
    def f(x: pypto.Tensor((5, 12), F32), y: pypto.Tensor((3, 12), F32), v: pypto.Tensor((1, 12), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        return (pypto.clone(x), pypto.expand_clone(v, [5, 12]), pypto.concat([x, y, x], 0) * 2.0,
                pypto.concat([x, x], -1), pypto.pad(x, (0, 3, 0, 2), value=-1.5))

    x = rng(7).standard_normal((5, 12)).astype(np.float32)
    x[0, 0] = -0.0
    y = rng(8).standard_normal((3, 12)).astype(np.float32)
    v = rng(9).standard_normal((1, 12)).astype(np.float32)
    a, b, c, d, e = run_in(mode, f, x, y, v)
    np.testing.assert_array_equal(a, x)
    assert np.signbit(a[0, 0])
    np.testing.assert_array_equal(b, np.broadcast_to(v, (5, 12)))
    np.testing.assert_array_equal(c, np.concatenate([x, y, x], 0) * np.float32(2))
    np.testing.assert_array_equal(d, np.concatenate([x, x], -1))
    np.testing.assert_array_equal(e, np.pad(x, ((0, 2), (0, 3)), constant_values=-1.5))


@pytest.mark.parametrize("mode", MODES)
def test_tril_triu_one_hot(mode):
    @pypto.jit
    def f(x: pypto.Tensor((2, 9, 13), F32), i: pypto.Tensor((4, 6), I32)):
        pypto.set_vec_tile_shapes(1, 4, 8)
        t = pypto.tril(x), pypto.triu(x, 2), pypto.tril(x, -3)
        pypto.set_vec_tile_shapes(2, 4)
        return (*t, pypto.one_hot(i, 5))

    x = rng(10).standard_normal((2, 9, 13)).astype(np.float32)
    i = rng(11).integers(-1, 6, (4, 6)).astype(np.int32)
    a, b, c, d = run_in(mode, f, x, i)
    np.testing.assert_array_equal(a, np.tril(x))
    np.testing.assert_array_equal(b, np.triu(x, 2))
    np.testing.assert_array_equal(c, np.tril(x, -3))
    assert d.dtype == np.int64
    np.testing.assert_array_equal(d, (i[..., None] == np.arange(5)).astype(np.int64))


@pytest.mark.parametrize("mode", MODES)
def test_loop_unroll_covers_the_range(mode):
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 16], F32), out: pypto.Tensor([pypto.DYNAMIC, 16], F32)):
        pypto.set_vec_tile_shapes(4, 16)
        n = x.shape[0]
        for i, k in pypto.loop_unroll(0, n, 1, name="rows", unroll_list=[4, 2]):
            out[i:i + k, :] = x[i:i + k, :] * float(k)

    for rows in (1, 7, 8, 13):
        x = rng(rows).standard_normal((rows, 16)).astype(np.float32)
        out = np.zeros_like(x)
        run_in(mode, f, x, out)
        scale = np.zeros(rows, np.float32)
        done = 0
        for k in (4, 2, 1):
            while rows - done >= k:
                scale[done:done + k] = k
                done += k
        np.testing.assert_array_equal(out, x * scale[:, None], err_msg=f"rows={rows}")


@pytest.mark.parametrize("mode", MODES)
def test_reshape_merges_and_splits_dims(mode):
    @pypto.jit
    def f(x: pypto.Tensor((4, 6, 10), F32), w: pypto.Tensor([pypto.DYNAMIC, 12], F32)):
        pypto.set_vec_tile_shapes(4, 16)
        a = pypto.reshape(x, [24, 10]) + 1.0              # merge a parameter's dims: no copy
        pypto.set_vec_tile_shapes(2, 3, 8)
        y = pypto.exp(x)
        b = pypto.reshape(y, [4, 3, 20]) * 2.0            # split / merge a computed value
        pypto.set_vec_tile_shapes(2, 2, 2, 6)
        n = w.shape[0]
        c = pypto.reshape(w, [n, 2, 1, 6]) - 1.0          # a dynamic dim
        pypto.set_vec_tile_shapes(8, 8)
        d = pypto.reshape(x, [-1, 20])
        return a, b, c, d

    x = rng(20).standard_normal((4, 6, 10)).astype(np.float32)
    w = rng(21).standard_normal((5, 12)).astype(np.float32)
    a, b, c, d = run_in(mode, f, x, w)
    np.testing.assert_array_equal(a, x.reshape(24, 10) + np.float32(1))
    np.testing.assert_allclose(b, np.exp(x).reshape(4, 3, 20) * 2, rtol=5e-7)
    np.testing.assert_array_equal(c, w.reshape(5, 2, 1, 6) - np.float32(1))
    np.testing.assert_array_equal(d, x.reshape(12, 20))


def test_reshape_errors():
    @pypto.jit
    def f(x: pypto.Tensor((4, 6), F32)):
        return pypto.reshape(x, [5, 5])

    with pytest.raises(pypto.UserError, match=r"pypto.reshape: .* has 24 elements, the shape \(5, 5\) 25"):
        f(np.zeros((4, 6), np.float32))

    @pypto.jit
    def g(x: pypto.Tensor((4, 6), F32)):
        return pypto.reshape(x[1:3, 2:5], [6])  # a slice: reshaped from a dense copy

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(g(x), x[1:3, 2:5].reshape(6))

    @pypto.jit
    def h(x: pypto.Tensor((4, 6), F32)):
        return pypto.reshape(x, [24]) * 1.0

    xt = np.arange(24, dtype=np.float32).reshape(6, 4).T  # strided: the call reshapes a dense copy
    np.testing.assert_array_equal(h(xt), xt.reshape(24))

    @pypto.jit
    def w(out: pypto.Tensor((4, 6), F32)):
        out[:] = pypto.reshape(pypto.reshape(out, [24]) * 2.0, [4, 6])

    out = np.arange(24, dtype=np.float32).reshape(6, 4).T  # strided: written back from its dense copy
    want = out * 2
    w(out)
    np.testing.assert_array_equal(out, want)
