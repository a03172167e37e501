"""prod, argmax, argmin, var, std, cumsum, cumprod on every axis, with keepdim, NaN, ties and
tails, on both backends, against numpy (fp32, ints) and torch (fp16/bf16)."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

F32, F16, BF16, I32, I16 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16, pypto.DT_INT32, pypto.DT_INT16
SHAPE = (5, 13, 37)


def _x(seed=0, dtype=np.float32):
    x = rng(seed).integers(-4, 5, SHAPE).astype(dtype)  # many ties
    return x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_argmax_argmin(dim, mode):
    @pypto.jit
    def f(x: pypto.Tensor(SHAPE, F32)):
        pypto.set_vec_tile_shapes(2, 8, 16)
        return pypto.argmax(x, dim), pypto.argmin(x, dim, keepdim=True), x.argmax(dim)

    x = _x(1)
    x[0, 0, 3] = np.nan
    x[1, 2, 0] = np.nan
    a, b, c = run_in(mode, f, x)
    assert a.dtype == np.int32
    np.testing.assert_array_equal(a, np.argmax(x, dim))
    np.testing.assert_array_equal(b, np.expand_dims(np.argmin(x, dim), dim))
    np.testing.assert_array_equal(c, np.argmax(x, dim))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_cumsum_cumprod(dim, mode):
    @pypto.jit
    def f(x: pypto.Tensor(SHAPE, F32), i: pypto.Tensor(SHAPE, I32)):
        pypto.set_vec_tile_shapes(2, 8, 16)
        return pypto.cumsum(x, dim), pypto.cumprod(x * 0.5, dim), pypto.cumsum(i, dim)

    x = rng(2).standard_normal(SHAPE).astype(np.float32)
    i = rng(3).integers(-2**31, 2**31 - 1, SHAPE).astype(np.int32)
    a, b, c = run_in(mode, f, x, i)
    np.testing.assert_array_equal(a, np.cumsum(x, dim))  # in order, fp32 steps: numpy's bits
    np.testing.assert_array_equal(b, np.cumprod(x * np.float32(0.5), dim))
    assert c.dtype == np.int64
    np.testing.assert_array_equal(c, np.cumsum(i, dim, dtype=np.int64))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_cumsum_16bit_like_torch(dtype, mode):
    torch = pytest.importorskip("torch")
    tdt = torch.float16 if dtype == F16 else torch.bfloat16

    @pypto.jit
    def f(x: pypto.Tensor((7, 300), dtype)):
        return pypto.cumsum(x, -1), pypto.cumsum(x, 0)

    x = torch.randn(7, 300).to(tdt)
    a, b = run_in(mode, f, x)
    np.testing.assert_array_equal(a.float().numpy(), torch.cumsum(x, -1).float().numpy())
    np.testing.assert_array_equal(b.float().numpy(), torch.cumsum(x, 0).float().numpy())


@pytest.mark.parametrize("mode", MODES)
def test_prod_var_std(mode):
    @pypto.jit
    def f(x: pypto.Tensor(SHAPE, F32)):
        pypto.set_vec_tile_shapes(2, 8, 16)
        return (pypto.prod(x, 1), pypto.var(x, -1), pypto.var(x, [0, 2], correction=0, keepdim=True),
                pypto.std(x, 1), pypto.var(x, keepdim=True))

    x = rng(4).uniform(0.5, 1.5, SHAPE).astype(np.float32)
    p, v1, v2, s1, v3 = run_in(mode, f, x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(p, np.prod(x64, 1), rtol=2e-6)
    np.testing.assert_allclose(v1, np.var(x64, -1, ddof=1), rtol=2e-6)
    np.testing.assert_allclose(v2, np.var(x64, (0, 2), keepdims=True), rtol=2e-6)
    np.testing.assert_allclose(s1, np.std(x64, 1, ddof=1), rtol=2e-6)
    np.testing.assert_allclose(v3, np.var(x64, ddof=1, keepdims=True), rtol=2e-6)


def test_whole_axis_errors():
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
        return pypto.argmax(x, 0)

    with pytest.raises(pypto.UserError, match=r"pypto.argmax along dim 0 .* dynamic size"):
        f(np.zeros((4, 8), np.float32))

    @pypto.jit
    def g(x: pypto.Tensor((4, 8), F32)):
        return pypto.cumsum(x, 2)

    with pytest.raises(pypto.UserError, match=r"pypto.cumsum: dim 2 is out of range"):
        g(np.zeros((4, 8), np.float32))

    @pypto.jit
    def h(x: pypto.Tensor((64, 300000), F32)):
        return pypto.argmax(x, -1)

    with pytest.raises(pypto.UserError, match=r"needs the whole dim 1 .* in one tile"):
        h(np.zeros((64, 300000), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_topk_sort_argsort(mode):
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(x: pypto.Tensor((6, 9, 50), F32)):
        pypto.set_vec_tile_shapes(2, 4, 16)
        v, i = pypto.topk(x, 5)
        s, j = pypto.topk(x, 7, largest=False)
        sv, si = pypto.sort(x, descending=True)
        return v, i, s, j, sv, si, pypto.argsort(x)

    x = rng(12).integers(-5, 6, (6, 9, 50)).astype(np.float32)  # ties
    x[0, 0, 7] = np.nan
    x[1, 1, [3, 9]] = np.nan
    v, i, s, j, sv, si, a = run_in(mode, f, x)
    t = torch.from_numpy(x)
    ref_sorted = torch.sort(t, descending=True, stable=True)  # top-k: its first k, ties by index
    np.testing.assert_array_equal(v, torch.topk(t, 5).values.numpy())
    np.testing.assert_array_equal(v, ref_sorted.values.numpy()[..., :5])
    np.testing.assert_array_equal(i, ref_sorted.indices.numpy()[..., :5])
    assert i.dtype == np.int32
    np.testing.assert_array_equal(sv, ref_sorted.values.numpy())
    np.testing.assert_array_equal(si, ref_sorted.indices.numpy())
    asc = torch.sort(t, stable=True)
    np.testing.assert_array_equal(a, asc.indices.numpy())
    np.testing.assert_array_equal(s, asc.values.numpy()[..., :7])
    np.testing.assert_array_equal(j, asc.indices.numpy()[..., :7])


def test_topk_selects_once_and_gathers_the_values():
    """The values are the elements at the selected indices (a gather of k per row): one selection
    pass over each row, not a second one for the values."""
    @pypto.jit
    def f(x: pypto.Tensor((32, 500), F32)):
        pypto.set_vec_tile_shapes(8, 500)
        return pypto.topk(x, 8)

    x = rng(3).standard_normal((32, 500)).astype(np.float32)
    v, i = f(x)
    src = f.last.program.native_source()
    assert src.count("TROWTOPKIDX(") == 1 and "TROWTOPK(" not in src
    np.testing.assert_array_equal(v, np.take_along_axis(x, i.astype(np.int64), -1))
    np.testing.assert_array_equal(v, -np.sort(-x, -1)[:, :8])


@pytest.mark.parametrize("mode", MODES)
def test_topk_over_a_dim_longer_than_a_tile_runs_in_chunks(mode):
    """DeepSeek's lightning indexer takes the top 2048 of 128K scores: too long for one tile, so
    the top k of each chunk, then of the candidates. Same values, order and ties as torch's
    stable sort; NaN first."""
    torch = pytest.importorskip("torch")
    n, k = 70001, 300

    @pypto.jit
    def f(x: pypto.Tensor((2, n), F32)):
        pypto.set_vec_tile_shapes(1, 8192)
        return pypto.topk(x, k) + pypto.topk(x, 5, largest=False)

    x = rng(21).integers(-3000, 3000, (2, n)).astype(np.float32)  # many ties
    x[1, 40000] = np.nan
    v, i, s, j = run_in(mode, f, x)
    t = torch.from_numpy(x)
    desc, asc = torch.sort(t, descending=True, stable=True), torch.sort(t, stable=True)
    np.testing.assert_array_equal(v, desc.values.numpy()[:, :k])
    np.testing.assert_array_equal(i, desc.indices.numpy()[:, :k])
    np.testing.assert_array_equal(s, asc.values.numpy()[:, :5])
    np.testing.assert_array_equal(j, asc.indices.numpy()[:, :5])


@pytest.mark.parametrize("mode", MODES)
def test_topk_of_a_view_with_a_run_time_valid_length(mode):
    """topk of view(t, [1, 4096], valid_shape=[1, n]): among the n valid elements (PyPTO); the
    padded length is static, so no run-time-sized tile is needed."""
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(x: pypto.Tensor([1, pypto.DYNAMIC], F32), out_v: pypto.Tensor((1, 16), F32),
          out_i: pypto.Tensor((1, 16), I32)):
        n = x.shape[1]
        for _ in pypto.loop(0, 1, 1):
            pypto.set_vec_tile_shapes(1, 4096)
            v = pypto.view(x, [1, 4096], [0, 0], valid_shape=[1, n])
            tv, ti = pypto.topk(v, 16, dim=-1)
            out_v[:] = tv
            out_i[:] = ti

    for n in (16, 1000):
        x = rng(n).standard_normal((1, n)).astype(np.float32)
        ov, oi = np.zeros((1, 16), np.float32), np.zeros((1, 16), np.int32)
        pypto.set_runtime_options(run_mode=mode)
        try:
            f(x, ov, oi)
        finally:
            pypto.set_runtime_options(run_mode="cpu")
        want = torch.topk(torch.from_numpy(x), 16)
        np.testing.assert_array_equal(ov, want.values.numpy())
        np.testing.assert_array_equal(oi, want.indices.numpy())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_and_index_select(dim, mode):
    @pypto.jit
    def f(x: pypto.Tensor((5, 12, 20), F32), i: pypto.Tensor((4, 9, 13), I32), s: pypto.Tensor((7,), I32)):
        pypto.set_vec_tile_shapes(2, 4, 8)
        return pypto.gather(x, dim, i), pypto.index_select(x, dim, s)

    x = rng(13).standard_normal((5, 12, 20)).astype(np.float32)
    i = rng(14).integers(0, x.shape[dim], (4, 9, 13)).astype(np.int32)
    s = rng(15).integers(0, x.shape[dim], (7,)).astype(np.int32)
    g, sel = run_in(mode, f, x, i, s)
    np.testing.assert_array_equal(g, np.take_along_axis(x[:4, :9, :13] if dim == -1 else _crop(x, i.shape, dim), i,
                                                        dim))
    np.testing.assert_array_equal(sel, np.take(x, s, dim))


@pytest.mark.parametrize("mode", MODES)
def test_index_select_with_a_2d_index_adds_its_dims(mode):
    @pypto.jit
    def f(x: pypto.Tensor((5, 12, 20), F32), s: pypto.Tensor((3, 7), pypto.DT_INT64)):
        pypto.set_vec_tile_shapes(2, 4, 8)
        return (pypto.index_select(x, 0, pypto.clip(s, 0, 4)), pypto.index_select(x, 1, s),
                pypto.index_select(x * 2.0, -1, s + 8))

    x = rng(16).standard_normal((5, 12, 20)).astype(np.float32)
    s = rng(17).integers(0, 12, (3, 7)).astype(np.int64)
    a, b, c = run_in(mode, f, x, s)
    np.testing.assert_array_equal(a, np.take(x, np.clip(s, 0, 4), 0))  # [3, 7, 12, 20]
    np.testing.assert_array_equal(b, np.take(x, s, 1))  # [5, 3, 7, 20]
    np.testing.assert_array_equal(c, np.take(x * 2, s + 8, 2))  # [5, 12, 3, 7]
    assert a.shape == (3, 7, 12, 20) and b.shape == (5, 3, 7, 20) and c.shape == (5, 12, 3, 7)


def _crop(x, shape, dim):
    """x cut to `shape` along every dim but `dim` (torch.gather reads only that part)."""
    sl = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(shape))
    return x[sl]


@pytest.mark.parametrize("mode", MODES)
def test_gather_out_of_range_raises(mode):
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), i: pypto.Tensor((4, 3), I32)):
        return pypto.gather(x, 1, i)

    x = np.zeros((4, 8), np.float32)
    i = np.zeros((4, 3), np.int32)
    i[2, 1] = 8
    with pytest.raises(ValueError, match=r"pypto.gather along dim 1.*index 8 is out of range \[0, 8\)"):
        run_in(mode, f, x, i)
    i[2, 1] = -1
    with pytest.raises(ValueError, match=r"index -1 is out of range"):
        run_in(mode, f, x, i)
    i[2, 1] = 7
    np.testing.assert_array_equal(run_in(mode, f, x, i), np.zeros((4, 3), np.float32))


def test_index_errors():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        return pypto.topk(x, 9)

    with pytest.raises(pypto.UserError, match=r"pypto.topk: k=9 is outside \[1, 8\]"):
        f(np.zeros((4, 8), np.float32))

    @pypto.jit
    def g(x: pypto.Tensor((4, 8), F32), i: pypto.Tensor((4, 3), F32)):
        return pypto.gather(x, 1, i)

    with pytest.raises(pypto.UserError, match=r"pypto.gather: the index must be an integer tensor"):
        g(np.zeros((4, 8), np.float32), np.zeros((4, 3), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_scatter_family(mode):
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(x: pypto.Tensor((6, 10), F32), i: pypto.Tensor((4, 10), I32), s: pypto.Tensor((4, 10), F32),
          j: pypto.Tensor((5,), I32), src: pypto.Tensor((6, 5), F32), k: pypto.Tensor((3,), I32),
          v: pypto.Tensor((3, 10), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        a = pypto.scatter(x, 0, i, s)                        # copies: x stays as it was
        b = pypto.scatter(x, 0, i, s, reduce="add")
        c = pypto.scatter(x, 1, i[:, :5], 2.5)
        d = pypto.index_add(x, 1, j, src, alpha=0.5)
        pypto.index_put_(x, (k,), v)                         # in place
        return a, b, c, d

    r = rng(30)
    x = r.standard_normal((6, 10)).astype(np.float32)
    i = r.integers(0, 6, (4, 10)).astype(np.int32)
    i[:, 3] = np.arange(4)  # no repeats in one column: "assign" is deterministic there
    s = r.standard_normal((4, 10)).astype(np.float32)
    j = np.array([9, 0, 9, 3, 1], np.int32)  # repeats accumulate
    src = r.standard_normal((6, 5)).astype(np.float32)
    k = np.array([5, 0, 2], np.int32)
    v = r.standard_normal((3, 10)).astype(np.float32)
    x0 = x.copy()
    a, b, c, d = run_in(mode, f, x, i, s, j, src, k, v)
    t = torch.from_numpy(x0)
    ti = torch.from_numpy(i).long()
    want_b = t.scatter_add(0, ti, torch.from_numpy(s)).numpy()
    np.testing.assert_allclose(b, want_b, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(a[:, 3], t.scatter(0, ti, torch.from_numpy(s)).numpy()[:, 3])
    np.testing.assert_array_equal(c, t.scatter(1, ti[:, :5], 2.5).numpy())
    want_d = t.index_add(1, torch.from_numpy(j).long(), torch.from_numpy(src), alpha=0.5).numpy()
    np.testing.assert_allclose(d, want_d, rtol=1e-6, atol=1e-6)
    want_x = x0.copy()
    want_x[k] = v
    np.testing.assert_array_equal(x, want_x)


@pytest.mark.parametrize("mode", MODES)
def test_index_add_ub_versions(mode):
    """PyPTO's index_add__ub / index_add_ub (its UB versions): index_add_ / index_add here."""
    @pypto.jit
    def f(x: pypto.Tensor((4, 6), F32), j: pypto.Tensor((3,), I32), src: pypto.Tensor((3, 6), F32)):
        y = pypto.index_add_ub(x, 0, j, src, alpha=2.0)
        pypto.index_add__ub(x, 0, j, src)
        return y

    r = rng(31)
    x = r.standard_normal((4, 6)).astype(np.float32)
    src = r.standard_normal((3, 6)).astype(np.float32)
    j = np.array([3, 0, 3], np.int32)
    x0 = x.copy()
    y = run_in(mode, f, x, j, src)
    want_y, want_x = x0.copy(), x0.copy()
    np.add.at(want_y, j, 2 * src)
    np.add.at(want_x, j, src)
    np.testing.assert_allclose(y, want_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x, want_x, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_scatter_update_paged_kv_cache(mode):
    @pypto.jit
    def f(cache: pypto.Tensor((8, 4, 1, 16), F32), idx: pypto.Tensor((2, 3), I32),
          kv: pypto.Tensor((2, 3, 1, 16), F32), flat: pypto.Tensor((32, 16), F32)):
        pypto.set_vec_tile_shapes(2, 16)
        pypto.scatter_update(cache, -2, idx, kv)
        pypto.scatter_update(flat, -2, idx, pypto.reshape(kv, [6, 16]) * 2.0)

    r = rng(31)
    cache = r.standard_normal((8, 4, 1, 16)).astype(np.float32)
    flat = r.standard_normal((32, 16)).astype(np.float32)
    idx = np.array([[0, 5, 31], [12, 13, 7]], np.int32)
    kv = r.standard_normal((2, 3, 1, 16)).astype(np.float32)
    want_c, want_f = cache.copy(), flat.copy()
    for b in range(2):
        for s in range(3):
            n = idx[b, s]
            want_c[n // 4, n % 4, 0] = kv[b, s, 0]
            want_f[n] = kv[b, s, 0] * 2
    run_in(mode, f, cache, idx, kv, flat)
    np.testing.assert_array_equal(cache, want_c)
    np.testing.assert_array_equal(flat, want_f)
    idx[1, 2] = 32
    with pytest.raises(ValueError, match=r"pypto.scatter_update: index 32 is out of range \[0, 32\) along dim 0"):
        run_in(mode, f, cache, idx, kv, flat)


@pytest.mark.parametrize("mode", MODES)
def test_cumsum_keeps_a_leading_negative_zero(mode):
    """numpy's cumsum of [-0.0, ...] starts at -0.0; a running sum started at +0.0 gave +0.0 (the
    fuzzer found it through copysign: seed 13, program 1168)."""
    @pypto.jit
    def f(x: pypto.Tensor((3, 4), F32)):
        pypto.set_vec_tile_shapes(3, 4)
        return pypto.cumsum(x, 0), pypto.cumsum(x, 1), pypto.cumprod(x, 1)

    x = np.array([[-0.0, -0.0, 1, -0.0], [-0.0, 2, -0.0, 3], [0.0, -0.0, -0.0, -0.0]], np.float32)
    a, b, c = run_in(mode, f, x)
    for got, want in ((a, np.cumsum(x, 0)), (b, np.cumsum(x, 1)), (c, np.cumprod(x, 1))):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
