"""Runtime branches: an `if` on a symbolic value (a loop index, a dynamic dim, pypto.cond,
pypto.is_loop_begin / is_loop_end) in a @pypto.jit function runs at run time on both backends;
an `if` on a Python value still decides at trace time; misuse is a clear error."""

import warnings

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

F32 = pypto.DT_FP32


@pytest.mark.parametrize("mode", MODES)
def test_if_else_on_a_loop_index(mode):
    @pypto.jit
    def f(x: pypto.Tensor((6, 16), F32), out: pypto.Tensor((6, 16), F32)):
        pypto.set_vec_tile_shapes(1, 16)
        for i in pypto.loop(0, 6, 1, name="rows", idx_name="i"):
            if i == 0:
                out[i:i + 1, :] = x[i:i + 1, :] + 100.0
            elif i < 3:
                out[i:i + 1, :] = x[i:i + 1, :] * 2.0
            else:
                out[i:i + 1, :] = pypto.exp(x[i:i + 1, :])

    x = rng(0).standard_normal((6, 16)).astype(np.float32)
    out = np.zeros_like(x)
    run_in(mode, f, x, out)
    want = np.concatenate([x[:1] + np.float32(100), x[1:3] * np.float32(2), np.exp(x[3:])])
    np.testing.assert_allclose(out, want, rtol=3e-7)
    # both paths are in the program, as loops of 0 or 1 iterations named IF_n / ELSE_n
    tg = f.last.program.tensor_graph()
    assert all(name in tg for name in ("IF_0", "ELSE_0", "IF_2", "ELSE_2")), tg


@pytest.mark.parametrize("mode", MODES)
def test_cond_and_is_loop_begin_end_with_a_dynamic_size(mode):
    @pypto.jit
    def f(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), out: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
        pypto.set_vec_tile_shapes(1, 8)
        n = x.shape[0]
        for i in pypto.loop(0, n, 1):
            if pypto.is_loop_begin(i):
                out[i:i + 1, :] = x[i:i + 1, :] - 1.0
            elif pypto.is_loop_end(i) and not n < 3:
                out[i:i + 1, :] = x[i:i + 1, :] + 1.0
            elif pypto.cond(i + 1 >= n):
                out[i:i + 1, :] = x[i:i + 1, :] * 0.0
            else:
                out[i:i + 1, :] = x[i:i + 1, :]

    for rows in (1, 2, 5):
        x = rng(rows).standard_normal((rows, 8)).astype(np.float32)
        out = np.full_like(x, np.nan)
        run_in(mode, f, x, out)
        want = x.copy()
        if rows >= 3:
            want[-1] += np.float32(1)
        elif rows == 2:
            want[-1] = 0
        want[0] = x[0] - np.float32(1)
        np.testing.assert_array_equal(out, want, err_msg=f"rows={rows}")


def test_if_on_python_values_stays_a_trace_time_choice():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), add_one: bool):
        if add_one and x.shape[0] == 4:
            return x + 1.0
        else:
            return x - 1.0

    x = np.zeros((4, 8), np.float32)
    np.testing.assert_array_equal(f(x, True), x + 1)
    np.testing.assert_array_equal(f(x, False), x - 1)
    assert "IF_" not in f.last.program.tensor_graph()


def test_names_assigned_in_both_paths_are_merged_after_the_branch():
    # As PyPTO programs write it: each path assigns the name, the code after reads it.
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        for i in pypto.loop(0, 4):
            y = x + 0.5
            k = 1
            if i == 0:
                y = x * 2.0
                k = i + 2
            elif i == 1:
                k = 7  # y keeps its value from before the if on this path
            else:
                y = pypto.exp(x)
                k = 3
            out[i:i + 1, :] = y[i:i + 1, :]
            out[i:i + 1, 0:1] = y[i:i + 1, k:k + 1]  # k: chosen by the branch at run time

    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    out = np.zeros((4, 8), np.float32)
    f(x, out)
    ref = np.concatenate([x[:1] * 2, x[1:2] + 0.5, np.exp(x[2:])])
    ref[:, 0] = [ref[0, 2], ref[1, 7], ref[2, 3], ref[3, 3]]
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_branch_misuse_is_a_clear_error():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        for i in pypto.loop(0, 4):
            if i == 0:
                y = x * 2.0
            else:
                y = x[0:2, :] * 3.0  # another shape: no one tensor can hold y after the if
            out[i:i + 1, :] = y[i:i + 1, :]

    with pytest.raises(pypto.UserError, match=r"`y` is assigned in the runtime branch at line \d+"):
        f(np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32))

    @pypto.jit
    def only_then(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        for i in pypto.loop(0, 4):
            if i == 0:
                z = x * 2.0
            else:
                out[...] = z  # noqa: F821 - unbound on this path
    with pytest.raises(pypto.UserError, match=r"`z` is not bound on this path of the runtime branch"):
        only_then(np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32))

    @pypto.jit
    def g(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        for i in pypto.loop(0, 4):
            if i == 0:
                out[...] = x * 2.0
        return x + 1.0

    out = np.zeros((4, 8), np.float32)
    np.testing.assert_array_equal(g(np.ones((4, 8), np.float32), out), np.full((4, 8), 2, np.float32))
    np.testing.assert_array_equal(out, np.full((4, 8), 2, np.float32))

    @pypto.jit
    def h(x: pypto.Tensor((4, 8), F32)):
        return pypto.is_loop_begin(x.shape[0])

    with pytest.raises(pypto.UserError, match=r"is not the index of a pypto.loop"):
        h(np.zeros((4, 8), np.float32))


def test_symbolic_comparisons_are_predicates():
    i = pypto.SymbolicScalar.var("i")
    p = i < 3
    assert isinstance(p, pypto.SymbolicScalar)
    assert [p.eval({"i": v}) for v in (1, 2, 3, 4)] == [1, 1, 0, 0]
    assert [(i == 2).eval({"i": v}) for v in (1, 2, 3)] == [0, 1, 0]
    assert [(i != 2).eval({"i": v}) for v in (1, 2, 3)] == [1, 0, 1]
    assert [(i >= 2).eval({"i": v}) for v in (1, 2, 3)] == [0, 1, 1]
    known = pypto.SymbolicScalar(3) < 4  # known values give a concrete SymbolicScalar (PyPTO's rule)
    assert isinstance(known, pypto.SymbolicScalar) and known.concrete() == 1 and bool(known)
    with pytest.raises(pypto.UserError, match="only known when the kernel runs"):
        bool(i < 3)
    assert len({i, pypto.SymbolicScalar.var("j")}) == 2  # still hashable


def _helper_with_a_runtime_if(x, out, i):
    # A plain helper beside the kernel (DeepSeek's *_compute functions): its `if pypto.cond(...)`
    # is a runtime branch while the kernel traces.
    if pypto.cond(i < 2):
        out[i:i + 1, :] = x[i:i + 1, :] * 2.0
    else:
        out[i:i + 1, :] = x[i:i + 1, :] - 1.0


def test_an_if_in_a_helper_function_of_the_kernels_module_is_a_runtime_branch():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), out: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(1, 8)
        for i in pypto.loop(0, 4):
            _helper_with_a_runtime_if(x, out, i)

    x = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, np.concatenate([x[:2] * 2, x[2:] - 1]))
    assert globals()["_helper_with_a_runtime_if"].__code__.co_name == "_helper_with_a_runtime_if"
    assert "IF_" in f.last.program.tensor_graph()


@pytest.mark.parametrize("mode", ["cpu", "interp"])
def test_if_else_merging_tail_windows_of_a_loop(mode):
    # PyPTO's verify test: `res` is a window whose shape moves with the loop index (the tail
    # tile min(72 - 64 * b, 64)); the tensor both paths write has its largest shape and the
    # merged value is a window of it (a tensor shaped by the index could not be allocated).
    @pypto.jit
    def k(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16),
          y: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16),
          out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16)):
        for b in pypto.loop(2, name="L0", idx_name="b"):
            for s in pypto.loop(3, name="L1", idx_name="s"):
                t0 = pypto.view(x, (64, 64), [b * 64, s * 64])
                t1 = pypto.view(y, (64, 64), [b * 64, s * 64])
                pypto.set_vec_tile_shapes(32, 32)
                if b < 1:
                    res = t0 + t1
                else:
                    res = t0
                pypto.assemble(res, [b * 64, s * 64], out)

    rng = np.random.default_rng(7)
    x = rng.random((72, 144)).astype(np.float16)
    y = rng.random((72, 144)).astype(np.float16)
    o = np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no SymbolicPrintWarning from the merge either
        run_in(mode, k, x, y, o)
    want = x.copy()
    want[:64] = x[:64] + y[:64]
    np.testing.assert_array_equal(o, want)


def test_tensor_shaped_by_a_loop_index_is_a_user_error():
    @pypto.jit
    def f(x: pypto.Tensor((16, 8), pypto.DT_FP32)):
        out = pypto.tensor((16, 8), pypto.DT_FP32)
        for i in pypto.loop(2):
            t = pypto.tensor((i * 4 + 4, 8), pypto.DT_FP32)
            t[:] = x[0:i * 4 + 4, :]
            out[0:i * 4 + 4, :] = t + 1.0
        return out

    with pytest.raises(pypto.UserError, match=r"(?s)pypto.tensor: the shape .* changes with a loop index and has no "
                                              r"bound.*test_branches.py"):
        f(np.zeros((16, 8), np.float32))
