"""PyPTO's `if pypto.cond(...)` where the `if` is plain Python (a `with pypto.function` block, an
`if` with a `return` in a helper): the pypto.loop body is traced once per path through its
run-time conditions, each path under a guard, and one path runs per iteration (as in PyPTO)."""

import numpy as np
import pytest

import pypto
from _util import rng

F32 = pypto.DT_FP32


@pytest.fixture(autouse=True)
def _reset():
    yield
    pypto.reset_options()


def _run(*arrays):
    pypto.runtime._device_run_once_data_from_host(*arrays)


def test_if_elif_else_in_a_function_block_assembles_like_pypto():
    # PyPTO's python/tests/st/test_assemble.py: four spellings of assemble, one per iteration
    x = pypto.tensor((8, 32), F32, "x")
    out = pypto.tensor((8, 32), F32, "out")
    with pypto.function("main", x, out):
        pypto.set_vec_tile_shapes(8, 8)
        for a_idx in pypto.loop(4, name="LOOP_assemble_L0", idx_name="a_idx"):
            tmp = pypto.view(x, [8, 8], [0, a_idx * 8])
            add_tensor = pypto.add(tmp, float(1))
            offset = a_idx * 8
            if pypto.cond(a_idx == 0):
                out[0:, :] = add_tensor * 2.0  # a smaller value fills the window's start
            elif pypto.cond(a_idx == 1):
                out[0:, offset:] = add_tensor * 3.0
            elif pypto.cond(a_idx == 2):
                out.assemble(add_tensor * 4.0, [0, offset])
            else:
                pypto.assemble(add_tensor * 5.0, [0, offset], out)
    xs = rng(1).standard_normal((8, 32)).astype(np.float32)
    res = np.full((8, 32), 7.0, np.float32)
    _run(xs, res)
    want = np.concatenate([(xs[:, 8 * k:8 * k + 8] + 1) * (k + 2) for k in range(4)], axis=1)
    np.testing.assert_allclose(res, want, rtol=1e-6)


def test_elif_chain_and_a_second_if_are_every_path():
    # PyPTO's test_pto_auto_unroll, with a second `if` after the chain: 3 x 2 paths
    a = pypto.tensor((128, 64), F32, "a")
    b = pypto.tensor((128, 64), F32, "b")
    with pypto.function("MAIN", a, b):
        pypto.set_vec_tile_shapes(16, 64)
        for idx in pypto.loop(8, unroll_list=[1, 4]):
            a_tile = a[idx * 16:(idx + 1) * 16, :]
            if pypto.cond(pypto.is_loop_begin(idx)):
                a_tile = a_tile + 1
            elif pypto.cond(pypto.is_loop_end(idx)):
                a_tile = a_tile + 2
            if pypto.cond(idx < 3):
                a_tile = a_tile * 10
            b[idx * 16:, 0:] = a_tile + 1
    xs = rng(2).random((128, 64)).astype(np.float32)
    ys = np.zeros_like(xs)
    _run(xs, ys)
    want = xs.copy()
    want[:16] += 1
    want[-16:] += 2
    want[:48] *= 10
    want += 1
    np.testing.assert_allclose(ys, want, rtol=1e-6)


def test_each_iteration_runs_one_path_once():
    # an accumulation before the `if`: traced once per path, it must still run once per iteration
    x = pypto.tensor((4, 16), F32, "x")
    acc = pypto.tensor((4, 16), F32, "acc")
    with pypto.function("MAIN", x, acc):
        pypto.set_vec_tile_shapes(1, 16)
        for i in pypto.loop(4):
            row = acc[i:i + 1, :]
            acc[i:i + 1, :] = row + x[i:i + 1, :]
            if pypto.cond(i % 2 == 0):
                acc[i:i + 1, :] = acc[i:i + 1, :] * 2.0
    xs = rng(3).standard_normal((4, 16)).astype(np.float32)
    start = rng(4).standard_normal((4, 16)).astype(np.float32)
    res = start.copy()
    _run(xs, res)
    want = start + xs
    want[0::2] *= 2
    np.testing.assert_allclose(res, want, rtol=1e-6)


def test_conditions_in_nested_loops():
    x = pypto.tensor((4, 6, 8), F32, "x")
    y = pypto.tensor((4, 6, 8), F32, "y")
    with pypto.function("MAIN", x, y):
        pypto.set_vec_tile_shapes(1, 1, 8)
        for i in pypto.loop(4):
            scale = 1.0
            if pypto.cond(i == 3):
                scale = 10.0  # a Python value chosen per path
            for j in pypto.loop(6):
                t = x[i:i + 1, j:j + 1, :] * scale
                if pypto.cond(j >= i):
                    t = t + 1.0
                y[i:i + 1, j:j + 1, :] = t
    xs = rng(5).standard_normal((4, 6, 8)).astype(np.float32)
    ys = np.zeros_like(xs)
    _run(xs, ys)
    want = xs.copy()
    want[3] *= 10
    for i in range(4):
        want[i, i:] += 1
    np.testing.assert_allclose(ys, want, rtol=1e-6)


def test_an_early_return_in_a_helper_of_a_jit_kernel():
    def helper(t, i):
        if i % 3 == 0:
            return t + 1.0
        if i % 3 == 1:
            return pypto.exp(t)
        return t * t

    @pypto.jit
    def kernel(x: pypto.Tensor((48, 32), F32), out: pypto.Tensor((48, 32), F32)):
        pypto.set_vec_tile_shapes(8, 32)
        for i in pypto.loop(6):
            out[i * 8:(i + 1) * 8, :] = helper(x[i * 8:(i + 1) * 8, :], i)

    xs = rng(6).standard_normal((48, 32)).astype(np.float32)
    o = np.zeros_like(xs)
    kernel(xs, o)
    want = np.concatenate([[lambda t: t + 1, np.exp, lambda t: t * t][i % 3](xs[8 * i:8 * i + 8]) for i in range(6)])
    np.testing.assert_allclose(o, want, rtol=1e-6)
    # three guarded traces of the body, each a 0-or-1-trip loop in the program
    assert kernel.last.program.tensor_graph().count("loop if") == 3


def test_a_value_from_another_path_is_a_clear_error():
    x = pypto.tensor((4, 8), F32, "x")
    y = pypto.tensor((4, 8), F32, "y")
    kept = []
    with pytest.raises(pypto.UserError, match=r"another path of a runtime branch|computed in the runtime branch"):
        with pypto.function("MAIN", x, y):
            for i in pypto.loop(4):
                if pypto.cond(i == 0):
                    t = x * 2.0
                else:
                    t = x * 3.0
                kept.append(t)
            y[:] = kept[0] + 1.0


def test_a_python_while_on_a_run_time_value_is_refused():
    x = pypto.tensor((4, 8), F32, "x")
    y = pypto.tensor((4, 8), F32, "y")
    with pytest.raises(pypto.UserError, match=r"more than 32 run-time conditions"):
        with pypto.function("MAIN", x, y):
            for i in pypto.loop(4):
                k = i
                while k < 100:
                    k = k + 1
                y[:] = x + 1.0


def test_an_if_on_a_run_time_value_outside_any_loop_is_still_an_error():
    def helper(t, n):
        if n > 4:
            return t + 1.0
        return t

    @pypto.jit
    def kernel(x: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
        return helper(x, x.shape[0])

    with pytest.raises(pypto.UserError, match=r"only known when the kernel runs"):
        kernel(np.zeros((6, 8), np.float32))


def test_a_scalar_read_before_a_condition_in_a_helper_of_the_loop_body():
    """PyPTO's st/operator/test_page_attention.py: in a helper called in a pypto.loop body (its
    `if` traced per path), a block index read from a tensor (`block_table[b, bn]`) before the
    `if pypto.cond(...)`: each dropped trace takes its open read with it (this was an
    InternalError, "Rollback outside the region of its checkpoint")."""
    @pypto.jit
    def f(x: pypto.Tensor((8, 8), F32), bt: pypto.Tensor((4,), pypto.DT_INT32), out: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(4, 8)
        acc = pypto.tensor([4, 8], F32, "acc")
        for bn in pypto.loop(0, 3, 1, name="L", idx_name="bn"):
            def body():
                blk = bt[bn]
                t = pypto.view(x, [4, 8], [blk * 4, 0]) * 2.0
                if pypto.cond(pypto.is_loop_begin(bn)):
                    acc[:] = t
                elif pypto.cond(pypto.is_loop_end(bn)):
                    acc[:] = acc + t + 1.0
                else:
                    acc[:] = acc + t
            body()
        pypto.assemble(acc, [0, 0], out)

    x = rng(12).standard_normal((8, 8)).astype(np.float32)
    out = np.zeros((4, 8), np.float32)
    f(x, np.array([1, 0, 1, 0], np.int32), out)
    want = ((x[4:8] * 2 + x[0:4] * 2) + x[4:8] * 2) + 1
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_pypto_loop_warns_about_unknown_keywords():
    """PyPTO's loop ignores unknown keywords (its page attention test misspells unroll_List)."""
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        y = pypto.tensor([4, 8], F32)
        for i in pypto.loop(0, 1, 1, name="L", idx_name="i", unroll_List=[1]):
            y[:] = x + 1.0
        return y

    with pytest.warns(UserWarning, match=r"unknown keyword argument\(s\) unroll_List ignored"):
        np.testing.assert_array_equal(f(np.ones((4, 8), np.float32)), np.full((4, 8), 2.0, np.float32))
