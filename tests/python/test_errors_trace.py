"""Mistakes while tracing get a UserError at the user's line: `break`/`return` in a
pypto.loop, numpy on a traced tensor, empty matmul dims, bad dims and annotations."""

import numpy as np
import pytest

import pypto

F32 = pypto.DT_FP32


def _call(f, *shapes):
    return f(*[np.ones(s, np.float32) for s in shapes])


def test_break_in_a_runtime_loop_is_a_user_error_at_its_line():
    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32), y: pypto.Tensor((4, 4), F32)):
        for i in pypto.loop(4):
            y[i:i + 1, :] = x[i:i + 1, :]
            if i is not None:
                break  # the line reported

    with pytest.raises(pypto.UserError, match=r"(?s)`break` inside a pypto.loop.*line \d+\n\s+break  # the line"):
        _call(f, (4, 4), (4, 4))


def test_return_in_a_runtime_loop_is_a_user_error():
    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32)):
        out = pypto.tensor((4, 4), F32)
        for i in pypto.loop(4):
            out[i:i + 1, :] = x[i:i + 1, :]
            return out
        return out

    with pytest.raises(pypto.UserError, match="`return` inside a pypto.loop"):
        _call(f, (4, 4))


def test_break_of_an_inner_python_loop_is_fine():
    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32), y: pypto.Tensor((4, 4), F32)):
        pypto.set_vec_tile_shapes(1, 4)
        for i in pypto.loop(4):
            for k in range(3):  # unrolled at trace time; its break is ordinary Python
                if k == 1:
                    break
            y[i:i + 1, :] = x[i:i + 1, :] * 2.0

    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    y = np.zeros_like(x)
    f(x, y)
    np.testing.assert_array_equal(y, x * 2)


def test_a_tensor_carried_across_runtime_loop_iterations_is_a_user_error_at_the_read():
    # `t = t + x` in a pypto.loop body traced once would read the pre-loop t in every iteration
    # (it gave 2x instead of 4x, silently).
    @pypto.jit
    def f(x: pypto.Tensor((8, 8), F32), out: pypto.Tensor((8, 8), F32)):
        t = x * 1.0
        for _ in pypto.loop(3):
            t = t + x  # the line reported
        out[:] = t

    with pytest.raises(pypto.UserError, match=r"(?s)`t` is carried from one iteration of the pypto.loop.*"
                                              r"t = t \+ x  # the line reported"):
        _call(f, (8, 8), (8, 8))


def test_augmented_and_branch_carries_are_caught_and_loop_unroll_too():
    @pypto.jit
    def f(x: pypto.Tensor((8, 8), F32), out: pypto.Tensor((8, 8), F32)):
        acc = x * 0.0
        for i, k in pypto.loop_unroll(4, unroll_list=[2]):
            if i == 0:
                out[:] = x
            acc += x
        out[:] = acc

    with pytest.raises(pypto.UserError, match="`acc` is carried from one iteration of the pypto.loop"):
        _call(f, (8, 8), (8, 8))


def test_values_rebound_before_they_are_read_and_python_counters_are_not_carries():
    count = []

    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(1, 8)
        t = x * 0.0  # rebound in the body before any read: not carried
        n = 0  # a trace-time counter (CANN PyPTO's loop example keeps one): allowed
        for i in pypto.loop(4):
            t = x[i:i + 1, :] * 3.0
            n = n + 1
            out[i:i + 1, :] = t + 1.0
        count.append(n)

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, x * 3 + 1)
    assert count == [1]  # the body was traced once


def test_a_value_bound_in_a_python_loop_before_its_read_and_a_self_reshape_are_not_carries():
    # DeepSeek's hc_pre: a loop_unroll body (traced once per factor) whose inner Python loop
    # binds mm_res at k == 0 and accumulates after; compressor: `t = reshape(t, s)` in a body.
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(1, 8)
        flat = pypto.reshape(x, [1, 32])
        for i, k in pypto.loop_unroll(0, 4, 1, unroll_list=[2, 1]):
            flat = pypto.reshape(flat, [1, 32], inplace=True)
            for j in range(3):
                part = x[i:i + k, :] * float(j + 1)
                if j == 0:
                    acc = part
                else:
                    acc = acc + part
            out[i:i + k, :] = acc + flat[0:1, 0:8]

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, x * 6 + x[0])

    @pypto.jit
    def g(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        acc = x * 0.0
        for i in pypto.loop(4):
            for j in range(2):
                acc = acc + x  # the pre-loop acc is read: a real carry
        out[:] = acc

    with pytest.raises(pypto.UserError, match="`acc` is carried from one iteration of the pypto.loop"):
        _call(g, (4, 8), (4, 8))


def test_numpy_on_a_traced_tensor_names_numpy_and_the_pypto_op():
    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32)):
        return np.exp(x)

    with pytest.raises(pypto.UserError, match=r"(?s)numpy.exp cannot compute on a traced pypto.Tensor.*"
                                              r"test_errors_trace.py.*hint: use pypto.exp"):
        _call(f, (4, 4))


def test_a_numpy_array_mixed_into_a_traced_function_is_a_user_error():
    w = np.ones((4, 4), np.float32)

    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32)):
        return w + x

    with pytest.raises(pypto.UserError, match=r"(?s)numpy.add mixes a ndarray.*pass the array as a parameter"):
        _call(f, (4, 4))


def test_numpy_scalars_work_like_python_scalars():
    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32)):
        return np.float32(2) * x + x * np.float64(0.5) - np.int32(1)

    np.testing.assert_array_equal(_call(f, (4, 4)), np.full((4, 4), 1.5, np.float32))


def test_matmul_with_an_empty_dim_is_a_user_error():
    # (Static empty dims cannot be annotated or sliced; the registry refuses them too.)
    @pypto.jit
    def f(a: pypto.Tensor((4, 8), F32), b: pypto.Tensor((8, 4), F32)):
        return pypto.matmul(a[:, 0:0], b[0:0, :])

    with pytest.raises(pypto.UserError, match=r"slice is empty|pypto.matmul: .* has an empty dim"):
        _call(f, (4, 8), (8, 4))


def test_mean_dim_out_of_range():
    @pypto.jit
    def f(x: pypto.Tensor((4, 4), F32)):
        return pypto.mean(x, 2)

    with pytest.raises(pypto.UserError, match=r"pypto.mean: dim 2 is out of range .* rank 2"):
        _call(f, (4, 4))


def test_non_positive_annotated_dim_names_the_parameter():
    with pytest.raises(pypto.UserError, match=r"(?s)parameter 'a' is annotated with shape \(4, 0\).*DYNAMIC"):
        @pypto.jit
        def f(a: pypto.Tensor((4, 0), F32)):
            return a + 1.0


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_mean_without_keepdim_and_a_returned_reduction_under_a_full_rank_tile(mode):
    # The tile shape in force has the input's rank; the composite's division and the implicit
    # copy of a returned reduction use a tile of their own rank.
    @pypto.jit
    def f(x: pypto.Tensor((8, 64), F32)):
        pypto.set_vec_tile_shapes(4, 64)
        return pypto.mean(x, -1), pypto.sum(x, 0)

    x = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    pypto.set_runtime_options(run_mode=mode)
    try:
        m, s = f(x)
    finally:
        pypto.set_runtime_options(run_mode="cpu")
    np.testing.assert_allclose(m, x.mean(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, x.sum(0), rtol=1e-5, atol=1e-5)
