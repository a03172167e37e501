"""Nested and repeated pypto.loop indices: each loop's index is its own symbol, whatever it is
named (issue 19: two nested loops both called "i" used to compute only the diagonal)."""

import numpy as np
import pytest

import pypto
from _util import run_in, assert_close, randn, rng

F32 = pypto.DT_FP32
MODES = ["interp", "cpu"]


def run(fn, mode, *args):
    return run_in(mode, fn, *args)


N = 4


@pypto.jit
def nested_default(a: pypto.Tensor([N, N], F32), y: pypto.Tensor([N, N], F32)):
    pypto.set_vec_tile_shapes(1, 1)
    for i in pypto.loop(N):
        for j in pypto.loop(N):
            y[i:i + 1, j:j + 1] = a[i:i + 1, j:j + 1] + 1.0


@pypto.jit
def nested_same_name(a: pypto.Tensor([N, N], F32), y: pypto.Tensor([N, N], F32)):
    pypto.set_vec_tile_shapes(1, 1)
    for i in pypto.loop(N, idx_name="k"):
        for j in pypto.loop(N, idx_name="k"):
            y[i:i + 1, j:j + 1] = a[i:i + 1, j:j + 1] * 2.0 + 1.0


@pytest.mark.parametrize("mode", MODES)
def test_issue_program_nested_default_names(mode):
    a = np.arange(N * N, dtype=np.float32).reshape(N, N)
    y = np.zeros((N, N), np.float32)
    run(nested_default, mode, a, y)
    np.testing.assert_array_equal(y, a + 1.0)


@pytest.mark.parametrize("mode", MODES)
def test_nested_same_explicit_name(mode):
    a = randn(rng(1), (N, N))
    y = np.zeros((N, N), np.float32)
    run(nested_same_name, mode, a, y)
    assert_close(y, a * 2.0 + 1.0)


@pypto.jit
def three_deep(a: pypto.Tensor([2, 3, 5], F32), y: pypto.Tensor([2, 3, 5], F32)):
    pypto.set_vec_tile_shapes(1, 1, 5)
    for i in pypto.loop(2):
        for j in pypto.loop(3):
            for k in pypto.loop(5):
                # Every index enters the value written, so a swapped or shadowed one shows.
                y[i:i + 1, j:j + 1, k:k + 1] = a[i:i + 1, j:j + 1, k:k + 1] * 1.0 + 0.0


@pytest.mark.parametrize("mode", MODES)
def test_three_deep_default_names(mode):
    a = randn(rng(2), (2, 3, 5))
    y = np.full((2, 3, 5), -7.0, np.float32)
    run(three_deep, mode, a, y)
    assert_close(y, a)


@pypto.jit
def triangular(a: pypto.Tensor([5, 5], F32), y: pypto.Tensor([5, 5], F32)):
    pypto.set_vec_tile_shapes(1, 1)
    for i in pypto.loop(5):
        for j in pypto.loop(i + 1):  # inner range depends on the outer index
            y[i:i + 1, j:j + 1] = a[i:i + 1, j:j + 1] + 3.0


@pytest.mark.parametrize("mode", MODES)
def test_inner_range_depends_on_outer_index(mode):
    a = randn(rng(3), (5, 5))
    y = np.zeros((5, 5), np.float32)
    run(triangular, mode, a, y)
    want = np.where(np.tril(np.ones((5, 5), bool)), a + 3.0, 0.0).astype(np.float32)
    assert_close(y, want)


def _row_body(a, y, i):
    """A helper with a loop of its own, called inside another loop."""
    for j in pypto.loop(3):
        y[i:i + 1, j:j + 1] = a[i:i + 1, j:j + 1] - 1.0


@pypto.jit
def helper_in_loop(a: pypto.Tensor([4, 3], F32), y: pypto.Tensor([4, 3], F32)):
    pypto.set_vec_tile_shapes(1, 1)
    for i in pypto.loop(4):
        _row_body(a, y, i)


@pytest.mark.parametrize("mode", MODES)
def test_loop_in_helper_called_in_loop(mode):
    a = randn(rng(4), (4, 3))
    y = np.zeros((4, 3), np.float32)
    run(helper_in_loop, mode, a, y)
    assert_close(y, a - 1.0)


@pypto.jit
def siblings(a: pypto.Tensor([6, 8], F32), y: pypto.Tensor([6, 8], F32)):
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(3, idx_name="r"):
        y[i:i + 1, :] = a[i:i + 1, :] + 1.0
    for i in pypto.loop(3, 6, 1, idx_name="r"):
        y[i:i + 1, :] = a[i:i + 1, :] * 2.0


@pytest.mark.parametrize("mode", MODES)
def test_sibling_loops_reuse_a_name(mode):
    a = randn(rng(5), (6, 8))
    y = np.zeros((6, 8), np.float32)
    run(siblings, mode, a, y)
    want = np.concatenate([a[:3] + 1.0, a[3:] * 2.0])
    assert_close(y, want)


@pypto.jit
def combined(a: pypto.Tensor([N * N, 8], F32), y: pypto.Tensor([N * N, 8], F32)):
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(N):
        for j in pypto.loop(N):
            y[i * N + j:i * N + j + 1, :] = a[i * N + j:i * N + j + 1, :] * 3.0


@pytest.mark.parametrize("mode", MODES)
def test_both_indices_in_one_offset(mode):
    a = randn(rng(6), (N * N, 8))
    y = np.zeros((N * N, 8), np.float32)
    run(combined, mode, a, y)
    assert_close(y, a * 3.0)


@pypto.jit
def dyn_nested(a: pypto.Tensor([pypto.DYNAMIC, 6], F32), y: pypto.Tensor([pypto.DYNAMIC, 6], F32)):
    pypto.set_vec_tile_shapes(1, 1)
    for i in pypto.loop(a.shape[0], idx_name="a_dim0"):  # the name of the dynamic dim's symbol
        for j in pypto.loop(6, idx_name="a_dim0"):
            y[i:i + 1, j:j + 1] = a[i:i + 1, j:j + 1] + 0.5


@pytest.mark.parametrize("mode", MODES)
def test_loop_named_like_a_dynamic_dim(mode):
    a = randn(rng(7), (3, 6))
    y = np.zeros((3, 6), np.float32)
    run(dyn_nested, mode, a, y)
    assert_close(y, a + 0.5)


def test_dumped_names_are_unique(tmp_path):
    """The tensor graph prints each index once, with a unique name (i, i_1)."""
    a = np.zeros((N, N), np.float32)
    pypto.set_debug_options(dump_dir=str(tmp_path), dump_passes=True)
    try:
        @pypto.jit
        def dumped(a: pypto.Tensor([N, N], F32), y: pypto.Tensor([N, N], F32)):
            pypto.set_vec_tile_shapes(1, 1)
            for i in pypto.loop(N):
                for j in pypto.loop(N):
                    y[i:i + 1, j:j + 1] = a[i:i + 1, j:j + 1] + 1.0
        dumped(a, a.copy())
    finally:
        pypto.set_debug_options(dump_dir="", dump_passes=False)
    text = next((tmp_path / "dumped" / "passes").glob("*tensor_graph.txt")).read_text()
    assert "loop i in range" in text and "loop i_1 in range" in text, text


def test_bad_index_name_is_a_user_error():
    @pypto.jit
    def f(a: pypto.Tensor([4, 4], F32), y: pypto.Tensor([4, 4], F32)):
        for i in pypto.loop(4, idx_name="$c0"):
            y[i:i + 1, :] = a[i:i + 1, :]

    a = np.zeros((4, 4), np.float32)
    with pytest.raises(pypto.UserError, match="not a valid symbol name"):
        f(a, a.copy())
