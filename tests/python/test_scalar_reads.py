"""PyPTO's single-element access: t[i, j] of an integer input tensor is a SymbolicScalar that the
control program reads when it gets there (sequence lengths, page tables), usable in loop bounds,
slice offsets and extents, and runtime branches; and integer indices that drop dims (t[i, 1:3]),
on both backends."""

import numpy as np
import pytest

import pypto
from _util import MODES, assert_close, randn, rng

F32, I32, I64 = pypto.DT_FP32, pypto.DT_INT32, pypto.DT_INT64


@pytest.mark.parametrize("mode", MODES)
def test_variable_length_segments(mode):
    """cu_seqlens-style packing: segment b is rows cu[b]:cu[b+1]; each row is normalized by the
    maximum of its segment."""
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((pypto.DYNAMIC, 16), F32), cu: pypto.Tensor((pypto.DYNAMIC,), I32),
          out: pypto.Tensor((pypto.DYNAMIC, 16), F32)):
        pypto.set_vec_tile_shapes(4, 16)
        for b in pypto.loop(0, cu.shape[0] - 1, 1, name="LB", idx_name="b"):
            start = cu[b]
            n = cu[b + 1] - start
            for j in pypto.loop(0, n, 1, name="LJ", idx_name="j"):
                row = x[start + j:start + j + 1, :]
                out[start + j:, :] = row - pypto.amax(row, dim=-1, keepdim=True)

    x = randn(rng(1), (13, 16))
    cu = np.array([0, 4, 4, 9, 13], np.int32)
    out = np.full_like(x, np.nan)
    f(x, cu, out)
    assert_close(out, x - x.max(-1, keepdims=True), rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_page_table_windows_and_branch(mode):
    """A paged cache: the block of logical block i is table[0, i]; a length decides, at run time,
    whether a block is read at all."""
    bs, nblk, h = 4, 5, 8

    @pypto.jit(runtime_options={"run_mode": mode})
    def f(cache: pypto.Tensor((nblk * bs, h), F32), table: pypto.Tensor((1, 3), I64),
          lens: pypto.Tensor((3,), I32), out: pypto.Tensor((3 * bs, h), F32)):
        pypto.set_vec_tile_shapes(bs, h)
        for i in pypto.loop(0, 3, 1, name="LI", idx_name="i"):
            blk = table[0, i]
            if lens[i] > 0:
                out[i * bs:, :] = cache[blk * bs:blk * bs + bs, :] * 1.0
            else:
                out[i * bs:, :] = pypto.full([bs, h], -1.0, F32)

    cache = randn(rng(2), (nblk * bs, h))
    table = np.array([[3, 0, 4]], np.int64)
    lens = np.array([2, 0, 7], np.int32)
    out = np.zeros((3 * bs, h), np.float32)
    f(cache, table, lens, out)
    want = np.concatenate([cache[3 * bs:4 * bs], np.full((bs, h), -1, np.float32), cache[4 * bs:5 * bs]])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("mode", MODES)
def test_read_at_top_level_and_from_a_view(mode):
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((8, 8), F32), meta: pypto.Tensor((2, 3), I32)) -> pypto.Tensor((2, 8), F32):
        pypto.set_vec_tile_shapes(2, 8)
        row = meta[1:2, :][0, 2]   # a view of the input, then the element
        out = pypto.tensor((2, 8), F32)
        out[:] = x[row:row + 2, :] + 0.5
        return out

    x = randn(rng(3), (8, 8))
    meta = np.array([[0, 0, 0], [0, 0, 5]], np.int32)
    assert_close(f(x, meta), x[5:7] + 0.5, rtol=0, atol=0)
    meta[1, 2] = 1  # the value is read at each call, not traced
    assert_close(f(x, meta), x[1:3] + 0.5, rtol=0, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_index_out_of_bounds_at_run_time_is_a_user_error(mode):
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((4, 8), F32), idx: pypto.Tensor((2,), I32), out: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(0, idx[0], 1, name="L", idx_name="i"):
            out[:] = x * 2.0

    x = randn(rng(4), (4, 8))
    out = np.zeros_like(x)
    f(x, np.array([1, 0], np.int32), out)
    assert_close(out, x * 2, rtol=0, atol=0)

    @pypto.jit(runtime_options={"run_mode": mode})
    def g(x: pypto.Tensor((4, 8), F32), idx: pypto.Tensor((2,), I32), out: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        j = idx[0]
        out[:] = x * 1.0 + idx.shape[0] * 0.0
        k = idx[j]
        out[k:k + 1, :] = x[0:1, :] * 3.0

    with pytest.raises(pypto.UserError, match=r"reading %idx\(5,\) as a scalar: index 5 is out of bounds"):
        g(x, np.array([5, 0], np.int32), out)


def test_errors_at_the_users_line():
    @pypto.jit
    def floats(x: pypto.Tensor((4,), F32)):
        return x[0:1] * float(0) + x[x[0]]

    with pytest.raises(pypto.UserError, match="only integer tensors give a symbolic scalar") as e:
        floats(np.ones(4, np.float32))
    assert "return x[0:1]" in str(e.value)

    @pypto.jit
    def written(t: pypto.Tensor((4,), I32), x: pypto.Tensor((8, 4), F32)):
        n = t[0]
        t[:] = t + 1
        return x[n:n + 1, :] * 1.0

    # Read before the write, in program order (a phased call): the element as it was.
    t = np.array([2, 0, 0, 0], np.int32)
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    np.testing.assert_array_equal(written(t, x), x[2:3])
    np.testing.assert_array_equal(t, [3, 1, 1, 1])

    @pypto.jit
    def computed(t: pypto.Tensor((4,), I32), x: pypto.Tensor((8, 4), F32)):
        u = t + 1
        n = u[1]
        return x[n:n + 1, :] * 1.0

    # An element the function computes: read once the kernel computing it has run.
    np.testing.assert_array_equal(computed(np.array([0, 4, 0, 0], np.int32), x), x[5:6])

    @pypto.jit
    def static_oob(t: pypto.Tensor((4,), I32), x: pypto.Tensor((8, 4), F32)):
        n = t[4]
        return x[n:n + 1, :] * 1.0

    with pytest.raises(pypto.UserError, match="index 4 is out of bounds in dim 0"):
        static_oob(np.zeros(4, np.int32), np.ones((8, 4), np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_integer_indices_drop_dims(mode):
    @pypto.jit(runtime_options={"run_mode": mode})
    def f(x: pypto.Tensor((4, 6, 8), F32), out: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(1, 6, 8)
        r = x[1, 2:5]            # (3, 8): PyPTO's view then reshape
        out[0:3, :] = r * 2.0
        out[3, :] = x[-1, 0] + 1.0   # a row (8,) assigned to out[3]: the dim comes back

    x = randn(rng(5), (4, 6, 8))
    out = np.zeros((4, 8), np.float32)
    f(x, out)
    assert_close(out[0:3], x[1, 2:5] * 2, rtol=0, atol=0)
    assert_close(out[3], x[-1, 0] + 1, rtol=0, atol=0)


def test_the_dump_shows_the_read(tmp_path):
    @pypto.jit(debug_options={"dump_dir": str(tmp_path), "dump_passes": True})
    def f(x: pypto.Tensor((8, 4), F32), t: pypto.Tensor((2,), I32)):
        n = t[1]
        return x[n:n + 2, :] * 1.0

    f(np.ones((8, 4), np.float32), np.array([0, 3], np.int32))
    text = (tmp_path / "f" / "passes" / "00_tensor_graph.txt").read_text()
    assert "let t_at = %t[1] {" in text
