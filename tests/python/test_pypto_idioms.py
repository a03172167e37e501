"""Idioms of CANN PyPTO's own examples (examples/ of hicann/pypto) that run unchanged: a vec tile
shape of higher rank than the tensor, batch-broadcast matmul, Python's min/max of symbolic
values, print() while tracing, views with a valid shape assigned to a window, symbolic tile dims,
get_vec_tile_shapes after a call (issue 12, part 0)."""

import numpy as np
import pytest

import pypto
from _util import MODES, run_in

F32 = pypto.DT_FP32


def arr(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
def test_tile_of_higher_rank_uses_its_leading_entries(mode):
    """PyPTO tiles dim d by entry d when the tile has more entries than the tensor has dims
    (elementwise_ops.py: set_vec_tile_shapes(2, 8) on a (3,) tensor)."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor([3], F32), y: pypto.Tensor([3, 5], F32), o1: pypto.Tensor([3], F32),
          o2: pypto.Tensor([3, 5], F32)):
        pypto.set_vec_tile_shapes(2, 8, 4)
        o1[:] = pypto.abs(x) + 1.0
        o2[:] = y * 2.0

    x, y = arr(3), arr(3, 5, seed=1)
    o1, o2 = np.zeros(3, np.float32), np.zeros((3, 5), np.float32)
    f(x, y, o1, o2)
    np.testing.assert_array_equal(o1, np.abs(x) + 1)
    np.testing.assert_array_equal(o2, y * 2)


def test_tile_of_lower_rank_is_an_error():
    @pypto.jit
    def f(y: pypto.Tensor([3, 5], F32), o: pypto.Tensor([3, 5], F32)):
        pypto.set_vec_tile_shapes(8)
        o[:] = y * 2.0

    with pytest.raises(pypto.UserError, match=r"rank-2 tensor \(3, 5\), but the vec tile shape \(8\) has rank 1"):
        f(arr(3, 5), np.zeros((3, 5), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_assemble_under_a_tile_of_lower_rank_copies(mode):
    """DeepSeek's indexer prolog assembles a 3-D result while a 2-D tile is in force: a copy does
    not depend on its tile, so it takes the automatic one (a computation would be an error)."""
    @pypto.jit
    def f(y: pypto.Tensor([2, 3, 5], F32), o: pypto.Tensor([4, 3, 5], F32)):
        pypto.set_vec_tile_shapes(1, 3, 5)
        r = y * 2.0
        pypto.set_vec_tile_shapes(3, 5)
        pypto.assemble(r, [1, 0, 0], o)

    y, o = arr(2, 3, 5), np.zeros((4, 3, 5), np.float32)
    run_in(mode, f, y, o)
    np.testing.assert_array_equal(o[1:3], y * 2)
    np.testing.assert_array_equal(o[[0, 3]], 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", [((1, 6, 16), (3, 16, 8)), ((3, 6, 16), (1, 16, 8)), ((2, 1, 6, 16), (1, 3, 16, 8)),
                                    ((3, 6, 16), (16, 8)), ((6, 16), (2, 3, 16, 8))])
def test_matmul_batch_dims_broadcast(mode, shapes):
    sa, sb = shapes
    out_shape = np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(a: pypto.Tensor(), b: pypto.Tensor(), o: pypto.Tensor()):
        pypto.set_cube_tile_shapes([8, 8], [16, 16], [8, 8])
        o.move(pypto.matmul(a, b, F32))

    a, b = arr(*sa), arr(*sb, seed=1)
    o = np.zeros(out_shape, np.float32)
    f(a, b, o)
    np.testing.assert_allclose(o, np.matmul(a.astype(np.float64), b), rtol=1e-5, atol=1e-5)


def test_matmul_batch_dims_that_do_not_broadcast():
    @pypto.jit
    def f(a: pypto.Tensor([2, 4, 8], F32), b: pypto.Tensor([3, 8, 4], F32), o: pypto.Tensor([3, 4, 4], F32)):
        o.move(pypto.matmul(a, b, F32))

    with pytest.raises(pypto.UserError, match="batch dims do not broadcast"):
        f(arr(2, 4, 8), arr(3, 8, 4), np.zeros((3, 4, 4), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_python_min_of_symbolic_values_in_a_loop(mode):
    """others/dynamic.py: b_offset_end = min(b_offset + tile_b, batch) in a pypto.loop over a
    DYNAMIC batch, then a view with that valid shape."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor([pypto.DYNAMIC, 16], F32), out: pypto.Tensor([pypto.DYNAMIC, 16], F32), tile_b: int):
        batch = x.shape[0]
        for idx in pypto.loop((batch + tile_b - 1) // tile_b):
            off = idx * tile_b
            end = min(off + tile_b, batch)
            lo = max(off, 0)
            v = pypto.view(x, [tile_b, 16], [lo, 0], valid_shape=[end - off, 16])
            pypto.set_vec_tile_shapes(1, 16)
            pypto.assemble(pypto.mul(v, 2.0), [off, 0], out)

    for rows in (8, 13, 3):
        x = arr(rows, 16, seed=rows)
        out = np.zeros_like(x)
        f(x, out, 4)
        np.testing.assert_array_equal(out, x * 2)


def test_pypto_min_max_of_symbolic_and_int():
    n = pypto.SymbolicScalar.var("n")
    assert pypto.min(3, 7) == 3 and pypto.max(3, 7) == 7
    assert "min" in repr(pypto.min(n, 4)) and "max" in repr(pypto.max(n, 4))
    assert pypto.min(n, 16).upper_bound() == 16
    assert (pypto.min(n - 3, 16) + 2).upper_bound() == 18
    assert n.upper_bound() is None and pypto.max(n, 4).upper_bound() is None


def test_builtin_min_is_untouched_where_shadowed():
    """A function that defines its own `min` keeps it."""
    @pypto.jit
    def f(x: pypto.Tensor([4, 8], F32), o: pypto.Tensor([4, 8], F32)):
        min = lambda a, b: a * b  # noqa: E731, A001 - deliberately shadowing
        o[:] = x * float(min(2, 3))

    x = arr(4, 8)
    o = np.zeros_like(x)
    f(x, o)
    np.testing.assert_array_equal(o, x * 6)


@pytest.mark.parametrize("mode", MODES)
def test_view_with_valid_shape_writes_its_valid_part(mode):
    """transform_ops.py: out[:] = view(x, [4, 4], [2, 4], valid_shape=[2, 4]) writes the 2 x 4
    valid part and leaves the rest of out as it was."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32), shape: list, offsets: list, valid_shape: list):
        pypto.set_vec_tile_shapes(*([8] * len(x.shape)))
        out[:] = pypto.view(x, shape, offsets, valid_shape=valid_shape)

    x = np.array([[1, 1, 2, 2, 3, 3, 4, 4], [1, 1, 2, 2, 3, 3, 4, 4], [1, 1, 2, 2, 5, 5, 6, 6],
                  [1, 1, 2, 2, 5, 5, 6, 6]], np.float32)
    out = np.full((4, 4), -1, np.float32)
    f(x, out, [4, 4], [2, 4], [2, 4])
    np.testing.assert_array_equal(out, [[5, 5, 6, 6], [5, 5, 6, 6], [-1] * 4, [-1] * 4])


@pytest.mark.parametrize("mode", MODES)
def test_matmul_contracts_over_the_valid_k_of_a_view(mode):
    """compress_flash_attention: softmax over the valid part of a [g, 640] score view, then
    @ kv [640, d]: K is the valid extent, kv's first rows take part."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(s: pypto.Tensor((2, 16), F32), kv: pypto.Tensor((16, 8), F32), n: pypto.Tensor((1,), pypto.DT_INT32),
          out: pypto.Tensor((2, 8), F32)):
        pypto.set_vec_tile_shapes(2, 16)
        valid = n[0]
        p = pypto.exp(pypto.view(s, [2, 16], [0, 0], valid_shape=[2, valid]))
        out[:] = pypto.matmul(p, kv, F32)

    r = np.random.default_rng(3)
    s, kv = r.standard_normal((2, 16)).astype(np.float32), r.standard_normal((16, 8)).astype(np.float32)
    for valid in (16, 11, 1):
        out = np.zeros((2, 8), np.float32)
        f(s, kv, np.array([valid], np.int32), out)
        ref = np.exp(s[:, :valid].astype(np.float64)) @ kv[:valid]
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(pypto.UserError):  # a valid extent beyond the tensors: checked at run time
        f(s, kv, np.array([17], np.int32), out)


@pytest.mark.parametrize("mode", MODES)
def test_symbolic_tile_dim_with_a_bound(mode):
    """ffn_module.py: set_vec_tile_shapes(*x.shape[:2]) where x is a view whose valid rows are
    min(batch - off, 16): the tile is the bound, 16."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor([pypto.DYNAMIC, 32], F32), out: pypto.Tensor([pypto.DYNAMIC, 32], F32)):
        batch = x.shape[0]
        for idx in pypto.loop((batch + 15) // 16):
            v = pypto.view(x, [16, 32], [idx * 16, 0], valid_shape=[(batch - idx * 16).min(16), 32])
            pypto.set_vec_tile_shapes(*v.shape[:2])
            assert pypto.get_vec_tile_shapes() == [16, 32]
            pypto.assemble(pypto.exp(v), [idx * 16, 0], out)

    x = arr(37, 32)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=3e-7)  # exp: within 2 ulp


def test_symbolic_tile_dim_without_a_bound():
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 32], F32), out: pypto.Tensor([pypto.DYNAMIC, 32], F32)):
        pypto.set_vec_tile_shapes(x.shape[0], 32)
        out[:] = x * 1.0

    with pytest.raises(pypto.UserError, match="no constant bound"):
        f(arr(4, 32), np.zeros((4, 32), np.float32))


def test_get_tile_shapes_after_the_call():
    """tiling_config.py reads pypto.get_vec_tile_shapes() after calling the kernel."""
    @pypto.jit
    def f(a: pypto.Tensor([2, 6, 16], F32), o: pypto.Tensor([2, 6, 16], F32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
        pypto.set_vec_tile_shapes(1, 2, 8)
        o.move(pypto.add(a, a))

    a = arr(2, 6, 16)
    o = np.zeros_like(a)
    f(a, o)
    assert pypto.get_vec_tile_shapes() == [1, 2, 8]
    assert pypto.get_cube_tile_shapes() == [[16, 16], [32, 32], [16, 16]]
    np.testing.assert_array_equal(o, a + a)


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "amax"])
def test_16bit_reduction_without_keepdim_under_a_2d_tile(op):
    """The fp32 accumulation's rounding cast runs on the reduced rank: no tile-rank error for an
    op the user did not write."""
    torch = pytest.importorskip("torch")

    @pypto.jit
    def f(x: pypto.Tensor([3, 100], pypto.DT_FP16), o: pypto.Tensor([100], pypto.DT_FP16)):
        pypto.set_vec_tile_shapes(1, 64)
        t = getattr(pypto, op)(x, 0)
        o[:] = t

    x = torch.randn(3, 100).half()
    o = torch.zeros(100).half()
    f(x, o)
    ref = {"sum": lambda: x.float().sum(0), "prod": lambda: x.float().prod(0), "mean": lambda: x.float().mean(0),
           "amax": lambda: x.float().amax(0)}[op]().half()
    torch.testing.assert_close(o, ref, rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_full_then_matmul_result(mode):
    """A tensor made from nothing in a function with a matmul (ffn_module.py's gelu): this
    crashed the tile expansion (it read the first input of an op that has none)."""
    torch = pytest.importorskip("torch")

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(h: pypto.Tensor([16, 64], pypto.DT_BF16), w: pypto.Tensor([64, 256], pypto.DT_BF16),
          out: pypto.Tensor([16, 256], F32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        up = pypto.cast(pypto.matmul(h, w, pypto.DT_BF16), F32)
        pypto.set_vec_tile_shapes(16, 256)
        ones = pypto.full(up.shape, 1.0, up.dtype, valid_shape=up.shape)
        pypto.assemble(pypto.div(ones, pypto.add(pypto.exp(up), 1.0)), [0, 0], out)

    h, w = torch.randn(16, 64).bfloat16(), (torch.randn(64, 256) / 8).bfloat16()
    out = torch.zeros(16, 256)
    f(h, w, out)
    up = (h.float() @ w.float()).bfloat16().float()  # the bf16 rounding of `up` may differ by an ulp
    torch.testing.assert_close(out, 1 / (torch.exp(up) + 1), rtol=2e-2, atol=1e-6)


def test_a_view_reaching_past_the_tensor_is_its_part_inside():
    """sparse_compress_flash_attention: view(table, [1, 1024], [b, 0]) of a [B, 16] block table;
    PyPTO derives the valid shape, the part inside the tensor ([1, 16])."""
    @pypto.jit
    def f(t: pypto.Tensor((3, 16), pypto.DT_INT32)):
        v = pypto.view(t, [1, 1024], [1, 0])
        assert [int(d) for d in v.shape] == [1, 16]
        return v + 0

    t = np.arange(48, dtype=np.int32).reshape(3, 16)
    np.testing.assert_array_equal(f(t), t[1:2])


def test_a_tensor_whose_shape_depends_on_a_read_element_takes_its_bound():
    """sparse attention: pypto.tensor([min(valid - i * 4, 4), 8]) with `valid` read from an input:
    allocated at its bound [4, 8], used as the window of the run-time shape."""
    @pypto.jit
    def f(x: pypto.Tensor((10, 8), F32), n: pypto.Tensor((1,), pypto.DT_INT32), out: pypto.Tensor((10, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        valid = n[0]
        for i in pypto.loop(0, 3):
            rows = (valid - i * 4).min(4)
            t = pypto.tensor([rows, 8], F32, "t")
            t[:] = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[rows, 8]) * 2.0
            pypto.assemble(t, [i * 4, 0], out)

    x = np.random.default_rng(4).standard_normal((10, 8)).astype(np.float32)
    out = np.zeros_like(x)
    f(x, np.array([10], np.int32), out)
    np.testing.assert_array_equal(out, x * 2)


def test_a_full_before_a_loop_is_a_tensor_the_loop_accumulates_into():
    """qat: acc = pypto.full([1, 1], 0.0) before the loop, acc[:] = acc + partial in it."""
    @pypto.jit
    def f(x: pypto.Tensor((8, 16), F32)):
        pypto.set_vec_tile_shapes(2, 16)
        acc = pypto.full([1, 16], 0.0, F32)
        for i in pypto.loop(0, 8, 2):
            acc[:] = pypto.add(acc, pypto.sum(x[i:i + 2, :], dim=0, keepdim=True))
        return acc * 1.0

    x = np.random.default_rng(6).standard_normal((8, 16)).astype(np.float32)
    np.testing.assert_allclose(f(x), x.sum(0, keepdims=True), rtol=1e-5, atol=1e-5)


def test_a_tensor_whose_shape_follows_a_loop_index_takes_its_bound():
    """GLM: pypto.tensor([min(n - i * 4, 4), 8]) inside the loop over i."""
    @pypto.jit
    def f(x: pypto.Tensor((pypto.DYNAMIC, 8), F32), out: pypto.Tensor((pypto.DYNAMIC, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        n = x.shape[0]
        for i in pypto.loop(0, (n + 3) // 4):
            rows = (n - i * 4).min(4)
            t = pypto.tensor([rows, 8], F32, "t")
            t[:] = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[rows, 8]) + 1.0
            pypto.assemble(t, [i * 4, 0], out)

    for n in (10, 4, 3):
        x = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
        out = np.zeros_like(x)
        f(x, out)
        np.testing.assert_array_equal(out, x + 1)


def test_move_of_another_shape_with_as_many_elements_writes_row_major():
    """GLM: key_cache.move(scatter_update(reshape(key_cache, 2-D), ...)) into the 4-D cache."""
    @pypto.jit
    def f(cache: pypto.Tensor((2, 4, 1, 8), F32), rows: pypto.Tensor((1, 8), F32),
          index: pypto.Tensor((1, 1), pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(8, 8)
        flat = pypto.reshape(cache, [8, 8])
        cache.move(pypto.scatter_update(flat, -2, index, rows))

    cache = np.zeros((2, 4, 1, 8), np.float32)
    rows = np.arange(8, dtype=np.float32).reshape(1, 8) + 1
    f(cache, rows, np.full((1, 1), 5, np.int32))
    want = np.zeros((8, 8), np.float32)
    want[5] = rows[0]
    np.testing.assert_array_equal(cache.reshape(8, 8), want)


def test_scatter_into_a_full_made_in_the_loop():
    """GLM select_experts: mask = pypto.full(...) in the loop body, then pypto.scatter_(mask, ...)."""
    @pypto.jit
    def f(idx: pypto.Tensor((4, 1), pypto.DT_INT32), out: pypto.Tensor((4, 6), F32)):
        pypto.set_vec_tile_shapes(1, 6)
        for i in pypto.loop(0, 4):
            mask = pypto.full([1, 6], 0.0, F32)
            marked = pypto.scatter_(mask, 1, idx[i:i + 1, :], 1.0)
            out[i:i + 1, :] = marked + mask  # mask is the scattered tensor too (in place)

    idx = np.array([[0], [5], [2], [2]], np.int32)
    out = np.zeros((4, 6), np.float32)
    f(idx, out)
    want = np.zeros((4, 6), np.float32)
    want[np.arange(4), idx[:, 0]] = 2.0
    np.testing.assert_array_equal(out, want)


def test_a_window_without_its_indexed_dims_writes_through_and_rows_go_into_a_rank_3_output():
    """qwen3_next: state = states[b, h] then state[:] = new (into the input's window), and
    out[a:b, h] = rows under a 2-D tile."""
    @pypto.jit
    def f(states: pypto.Tensor((2, 3, 4, 4), F32), x: pypto.Tensor((6, 4), F32),
          out: pypto.Tensor((6, 3, 4), F32)):
        pypto.set_vec_tile_shapes(4, 4)
        for h in pypto.loop(0, 3):
            state = states[1, h]
            state[:] = state * 2.0 + 1.0
            out[0:6, h] = x * 1.0

    states = np.random.default_rng(9).standard_normal((2, 3, 4, 4)).astype(np.float32)
    before = states.copy()
    x = np.random.default_rng(10).standard_normal((6, 4)).astype(np.float32)
    out = np.zeros((6, 3, 4), np.float32)
    f(states, x, out)
    np.testing.assert_array_equal(states[0], before[0])
    np.testing.assert_array_equal(states[1], before[1] * 2 + 1)
    np.testing.assert_array_equal(out, np.repeat(x[:, None, :], 3, axis=1))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("unroll", [None, [2, 1]])
def test_a_window_without_its_indexed_dims_carries_a_state_through_a_loop(mode, unroll):
    """qwen3_next's recurrent state: `last = states[b, h]` before the chunk loop, read at the top
    of each chunk and written at its end (`last[:] = new`), then copied out after the loop. Each
    read sees the last write (it read the value at the `states[b, h]` line before: every chunk
    started from the initial state, a silent wrong answer)."""
    B, H, D, S = 2, 3, 8, 5

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((S, H, D), F32), states: pypto.Tensor((B, H, D, D), F32),
          out: pypto.Tensor((B, H, D, D), F32), seen: pypto.Tensor((B, S, H, D), F32)):
        for b in pypto.loop(B, name="b", idx_name="b"):
            for h in pypto.loop(H, name="h", idx_name="h", parallel=True):
                pypto.set_vec_tile_shapes(8, 8, 8, 8)
                last = states[b, h]
                for s in pypto.loop(0, S, 1, name="s", idx_name="s", unroll_list=unroll):
                    row = pypto.reshape(pypto.view(x, [1, 1, D], [s, h, 0]), [1, D])
                    seen[b, s, h] = pypto.reshape(last[0:1, :], [D])  # the state as the chunk starts
                    last[:] = last * 0.5 + row
                out[b, h] = last

    x = arr(S, H, D, seed=3)
    states = arr(B, H, D, D, seed=4)
    init = states.copy()
    out = np.zeros((B, H, D, D), np.float32)
    seen = np.zeros((B, S, H, D), np.float32)
    f(x, states, out, seen)
    want = init.copy()
    want_seen = np.zeros_like(seen)
    for s in range(S):
        want_seen[:, s] = want[:, :, 0, :]
        want = want * np.float32(0.5) + x[s][None, :, None, :]
    np.testing.assert_allclose(seen, want_seen, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(states, want, rtol=1e-6, atol=1e-6)  # the window is the input's memory


@pytest.mark.parametrize("mode", MODES)
def test_fillpad_fills_past_the_valid_shape_and_reshape_of_a_whole_tensor_takes_a_valid_part(mode):
    """qwen3_next's last chunk: `fillpad(view(..., valid_shape=[n, d]))` is the whole [128, d]
    with zeros past row n; `y.reshape([l, 1, d], valid_shape=[n, 1, d])` of a whole [l, d] value
    is its first n rows (PyPTO: reshape, then the valid part), written by pypto.assemble."""
    L, D = 8, 4

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor([pypto.DYNAMIC, D], F32), padded: pypto.Tensor((L, D), F32),
          out: pypto.Tensor([pypto.DYNAMIC, 1, D], F32)):
        n = x.shape[0]
        for i in pypto.loop(0, 1, 1):
            v = pypto.view(x, [L, D], [i, 0], valid_shape=[n.min(L), D])
            p = pypto.fillpad(v, "constant", -1.5)
            padded[:] = p
            y = p * 2.0
            pypto.assemble(y.reshape([L, 1, D], valid_shape=[n.min(L), 1, D]), [0, 0, 0], out)

    for n in (3, 8):
        x = arr(n, D, seed=n)
        padded = np.zeros((L, D), np.float32)
        out = np.zeros((n, 1, D), np.float32)
        f(x, padded, out)
        want = np.full((L, D), -1.5, np.float32)
        want[:n] = x
        np.testing.assert_array_equal(padded, want)
        np.testing.assert_array_equal(out[:, 0], x * 2)


@pytest.mark.parametrize("mode", MODES)
def test_reshape_of_valid_rows_to_a_static_shape_keeps_the_valid_rows(mode):
    """deepseek v3.2 sparse attention: a [n, 1024] tile with a run-time row count n (of 2048) is
    reshaped to [2048 * 8, 128] and back; PyPTO reshapes the whole tile, whose valid part is its
    first n * 1024 elements: here the result is those rows, [8 n, 128]."""
    L, C, R = 8, 16, 4

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor([pypto.DYNAMIC, C], F32), s: pypto.Tensor([pypto.DYNAMIC, R], F32),
          out: pypto.Tensor([pypto.DYNAMIC, C], F32)):
        n = x.shape[0]
        for i in pypto.loop(0, 1, 1):
            v = pypto.view(x, [L, C], [i, 0], valid_shape=[n.min(L), C]) * 1.0
            sv = pypto.view(s, [L, R], [i, 0], valid_shape=[n.min(L), R]) * 1.0
            rows = pypto.reshape(v, [L * R, C // R])  # [4 n, 4]: each row split in R pieces
            scales = pypto.reshape(sv, [L * R, 1])
            back = pypto.reshape(rows * scales, [L, C])
            out[:, :] = pypto.view(back, [L, C], [0, 0], valid_shape=[n.min(L), C])

    for n in (3, 8):
        x, s = arr(n, C, seed=n), arr(n, R, seed=n + 1)
        out = np.zeros((n, C), np.float32)
        f(x, s, out)
        want = (x.reshape(n, R, C // R) * s[:, :, None]).reshape(n, C)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("mode", MODES)
def test_a_part_of_a_window_without_its_indexed_dims_is_written_through(mode):
    """`s = states[b]`, then `s[0:2, :] = v` and `s[3] = row`: the writes reach states (PyPTO's
    view), and reading s afterwards sees them."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(states: pypto.Tensor((2, 4, 8), F32), x: pypto.Tensor((2, 8), F32), out: pypto.Tensor((2, 4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        for b in pypto.loop(0, 2):
            s = states[b]
            s[0:2, :] = x * 2.0
            s[3] = pypto.reshape(x[1:2, :], [8]) - 1.0
            out[b] = s

    st, x = arr(2, 4, 8, seed=5), arr(2, 8, seed=6)
    want = st.copy()
    want[:, 0:2, :] = x * 2
    want[:, 3, :] = x[1] - 1
    out = np.zeros_like(st)
    f(st, x, out)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(st, want)
