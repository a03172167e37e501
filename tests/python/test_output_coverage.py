"""Returned tensors come from a pool of reused blocks and are zeroed only when the call does not
store to every element of them (runtime/output_coverage.h). Elements a program never writes
must read 0 even when the pooled block held another call's result, and results written whole
(one launch, tails, or the slabs of a runtime loop) must be right without the zeroing."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

F32 = pypto.DT_FP32
T = pypto.Tensor


def _dirty_the_pool(shape):
    """Returns (and frees) results of `shape` full of 7s, so the next block of that size is dirty."""
    @pypto.jit
    def sevens(x: T(shape, F32)) -> T(shape, F32):
        pypto.set_vec_tile_shapes(8, shape[1])
        return x * 0.0 + 7.0

    for _ in range(3):
        assert float(sevens(np.ones(shape, np.float32)).min()) == 7.0


@pytest.mark.parametrize("mode", MODES)
def test_unwritten_rows_of_a_returned_tensor_read_zero(mode):
    shape = (512, 256)  # 512 KiB: a pooled block size

    @pypto.jit
    def part(x: T(shape, F32)) -> T(shape, F32):
        pypto.set_vec_tile_shapes(8, 256)
        out = pypto.tensor(list(shape), F32, "out")
        out[8:24, :] = x[8:24, :] * 2.0
        return out

    x = rng(0).standard_normal(shape).astype(np.float32)
    for _ in range(2):
        _dirty_the_pool(shape)
        got = run_in(mode, part, x)
        want = np.zeros(shape, np.float32)
        want[8:24] = x[8:24] * np.float32(2)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows,cols,tile", [(512, 256, (8, 256)), (509, 253, (8, 64)), (3, 1000, (2, 128))])
def test_results_written_whole_need_no_zeroing(mode, rows, cols, tile):
    @pypto.jit
    def f(x: T((rows, cols), F32)) -> T((rows, cols), F32):
        pypto.set_vec_tile_shapes(*tile)
        return pypto.exp(x) + 1.0

    x = rng(1).standard_normal((rows, cols)).astype(np.float32)
    _dirty_the_pool((rows, cols))
    np.testing.assert_allclose(run_in(mode, f, x), np.exp(x) + np.float32(1), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stop", [512, 256])
def test_slabs_of_a_runtime_loop(mode, stop):
    # A loop writing blocks of rows: whole when the blocks cover every row, zeroed when not.
    shape = (512, 256)

    @pypto.jit
    def f(x: T(shape, F32)) -> T(shape, F32):
        pypto.set_vec_tile_shapes(8, 256)
        out = pypto.tensor(list(shape), F32, "out")
        for i in pypto.loop(0, stop, 64, name="blocks", idx_name="i"):
            out[i:i + 64, :] = x[i:i + 64, :] - 1.0
        return out

    x = rng(2).standard_normal(shape).astype(np.float32)
    _dirty_the_pool(shape)
    want = np.zeros(shape, np.float32)
    want[:stop] = x[:stop] - np.float32(1)
    np.testing.assert_array_equal(run_in(mode, f, x), want)


@pytest.mark.parametrize("mode", MODES)
def test_a_result_read_before_it_is_written_whole_starts_zeroed(mode):
    # Every row of `out` is written, but a kernel reads it when only its first rows are: the
    # zeros it starts with count there, so it must be zeroed even though it ends up whole.
    shape = (512, 256)

    @pypto.jit
    def f(x: T(shape, F32)):
        pypto.set_vec_tile_shapes(8, 256)
        out = pypto.tensor(list(shape), F32, "out")
        out[0:64, :] = x[0:64, :]
        twice = out * 2.0
        out[64:512, :] = x[64:512, :] + 1.0
        return out, twice

    x = rng(3).standard_normal(shape).astype(np.float32)
    want_twice = np.zeros(shape, np.float32)
    want_twice[:64] = x[:64] * np.float32(2)
    want_out = np.concatenate([x[:64], x[64:] + np.float32(1)])
    for _ in range(2):
        _dirty_the_pool(shape)
        out, twice = run_in(mode, f, x)
        np.testing.assert_array_equal(twice, want_twice)
        np.testing.assert_array_equal(out, want_out)
