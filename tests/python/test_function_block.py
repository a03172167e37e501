"""PyPTO's older interface, which its operation tests are written in: tensors declared with
pypto.tensor(shape, dtype, name), a `with pypto.function(name, *tensors)` block recorded as a
program, pypto.runtime._device_run_once_data_from_host running it on torch tensors; with the
idioms those tests use (tile shapes set before the block, `res = pypto.tensor(); res.move(v)`,
`for _ in f:`, isinstance(x, pypto.tensor), flattened host data)."""

import math

import numpy as np
import pytest

import pypto

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _reset():
    yield
    pypto.reset_options()  # the tile shapes set outside a function are global, as in PyPTO


def test_a_tiled_block_with_valid_shapes_runs_on_torch_tensors():
    shape, view = (72, 71), (32, 32)
    pypto.runtime._device_init()
    x = pypto.tensor(shape, pypto.DT_FP32, "x")
    y = pypto.tensor(shape, pypto.DT_FP32, "y")
    pypto.set_vec_tile_shapes(32, 32)  # before the block: the global configuration
    with pypto.function("MAIN", x, y):
        for b in pypto.loop(math.ceil(shape[0] / view[0]), name="b0", idx_name="bidx"):
            for s in pypto.loop(math.ceil(shape[1] / view[1]), name="s0", idx_name="sidx"):
                valid = [pypto.min(pypto.symbolic_scalar(shape[0]) - b * view[0], pypto.symbolic_scalar(view[0])),
                         pypto.min(pypto.symbolic_scalar(shape[1]) - s * view[1], pypto.symbolic_scalar(view[1]))]
                v = pypto.view(x, view, [b * view[0], s * view[1]], valid_shape=valid)
                res = pypto.tensor()  # a name the value is moved into
                res.move(pypto.cos(v) * 2.0)
                pypto.assemble(res, [b * view[0], s * view[1]], y)
    assert isinstance(y, pypto.tensor) and not isinstance(3, pypto.tensor)
    a = torch.randint(-100, 100, shape, dtype=torch.float32)
    out = torch.zeros(shape)
    pypto.runtime._device_run_once_data_from_host(pypto.from_torch(a, "a"), pypto.from_torch(out, "out"))
    pypto.runtime._device_fini()
    np.testing.assert_allclose(out.numpy(), np.cos(a.numpy()) * 2, rtol=1e-6, atol=1e-6)


def test_iterating_the_block_and_flattened_host_data():
    x = pypto.tensor((4, 8), pypto.DT_INT32, "x")
    y = pypto.tensor((4, 8), pypto.DT_INT32, "y")
    with pypto.function("MAIN", x, y) as f:
        for _ in f:  # PyPTO's test harness traces the body inside `for _ in f`
            y[:] = x * 3 + 1
    a = torch.arange(32, dtype=torch.int32)  # flat: the same elements in the declared shape
    out = torch.zeros(32, dtype=torch.int32)
    pypto.runtime._device_run_once_data_from_host(a, out)
    assert torch.equal(out, a * 3 + 1)


def test_errors():
    x = pypto.tensor((4, 8), pypto.DT_FP32, "x")
    with pypto.function("NOTHING", x):  # traced (PyPTO's shape tests do this), nothing to run
        assert pypto.exp(x).shape == [4, 8]
    with pytest.raises(pypto.UserError, match="writes none of its tensors"):
        pypto.runtime._device_run_once_data_from_host(torch.zeros(4, 8))
    with pytest.raises(pypto.UserError, match="static shape and a dtype"):
        pypto.function("BAD", pypto.tensor((pypto.DYNAMIC, 8), pypto.DT_FP32))
    y = pypto.tensor((4, 8), pypto.DT_FP32, "y")
    with pypto.function("OK", x, y):
        y[:] = pypto.exp(x)
    with pytest.raises(pypto.UserError, match="has 2 tensors, got 1"):
        pypto.runtime._device_run_once_data_from_host(torch.zeros(4, 8))
    with pytest.raises(pypto.UserError, match=r"argument 1 has shape \(3, 8\)"):
        pypto.runtime._device_run_once_data_from_host(torch.zeros(4, 8), torch.zeros(3, 8))
    with pytest.raises(pypto.UserError, match="holds nothing until .move"):
        with pypto.function("EMPTY", x, y):
            res = pypto.tensor()
            y[:] = res + 1.0


def test_the_idioms_of_pyptos_operation_tests():
    """A view's move takes the value (the viewed input keeps its data); a valid extent larger
    than the view is the view's; a one-iteration loop's index is a constant (static extents);
    scatter_ reads a larger src only where the index has elements."""
    a = pypto.tensor((32, 32), pypto.DT_FP32, "a")
    b = pypto.tensor((32, 32), pypto.DT_FP32, "b")
    c = pypto.tensor((32, 32), pypto.DT_FP32, "c")
    v = pypto.tensor((32,), pypto.DT_FP32, "v")
    with pypto.function("IDIOMS", a, b, c, v):
        for i in pypto.loop(2, name="L0", idx_name="i"):
            for j in pypto.loop(2, name="L1", idx_name="j"):
                # valid extents of 32 - 16 i (up to 32) for a 16-wide view: the view's 16
                valid = [pypto.min(pypto.symbolic_scalar(32) - i * 16, pypto.symbolic_scalar(32))] * 2
                ta = pypto.view(a, [16, 16], [i * 16, j * 16], valid_shape=valid)
                tb = pypto.view(b, [16, 16], [i * 16, j * 16], valid_shape=valid)
                pypto.set_vec_tile_shapes(8, 8)
                ta.move(pypto.add(ta, tb))
                pypto.assemble(ta, [i * 16, j * 16], c)
        for k in pypto.loop(1):  # one iteration: static extents, so var's dim is static
            whole = pypto.view(a, [32, 32], [k * 32, 0], valid_shape=[pypto.min(32 - k * 32, pypto.symbolic_scalar(32)),
                                                                      32])
            pypto.set_vec_tile_shapes(32, 32)
            v[:] = pypto.var(whole, 1)
    x, y = torch.rand(32, 32), torch.rand(32, 32)
    x0 = x.clone()
    out, var = torch.zeros(32, 32), torch.zeros(32)
    pypto.runtime._device_run_once_data_from_host(x, y, out, var)
    assert torch.equal(x, x0)  # the input is not written
    np.testing.assert_allclose(out.numpy(), (x0 + y).numpy(), rtol=1e-6)
    np.testing.assert_allclose(var.numpy(), x0.numpy().var(1, ddof=1), rtol=1e-5)

    @pypto.jit
    def scatter(dst: pypto.Tensor((4, 5), pypto.DT_FP32), idx: pypto.Tensor((2, 5), pypto.DT_INT64),
                src: pypto.Tensor((4, 5), pypto.DT_FP32)):
        dst.scatter_(0, idx, +src)

    d, i2, s = torch.zeros(4, 5), torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]]), torch.rand(4, 5)
    want = d.clone().scatter_(0, i2, s)
    scatter(d, i2, s)
    assert torch.equal(d, want)


def test_scatter_with_run_time_shapes_still_traces():
    """The larger-src rule compares static dims only (a symbolic comparison has no truth value:
    GLM's attention scatters with run-time shapes)."""
    @pypto.jit
    def f(dst: pypto.Tensor([pypto.DYNAMIC, 5], pypto.DT_FP32), idx: pypto.Tensor([pypto.DYNAMIC, 5], pypto.DT_INT64),
          src: pypto.Tensor([pypto.DYNAMIC, 5], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 8)
        dst.scatter_(0, idx, src)

    d, i2, s = torch.zeros(4, 5), torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]]), torch.rand(2, 5)
    want = d.clone().scatter_(0, i2, s)
    f(d, i2, s)
    assert torch.equal(d, want)


def test_expand_clone_to_a_valid_shape_the_loop_range_makes_static():
    """min(32 - 16 * i, 16) in a two-trip loop is 16: the expand's target shape is simplified
    with the loop ranges as the view's is (PyPTO's expand test)."""
    a = pypto.tensor((32, 1), pypto.DT_FP32, "a")
    b = pypto.tensor((32, 32), pypto.DT_FP32, "b")
    with pypto.function("EXPAND", a, b):
        for i in pypto.loop(2, name="L0", idx_name="i"):
            for j in pypto.loop(2, name="L1", idx_name="j"):
                rows = (pypto.symbolic_scalar(32) - i * 16).min(pypto.symbolic_scalar(16))
                cols = (pypto.symbolic_scalar(32) - j * 16).min(pypto.symbolic_scalar(16))
                t = pypto.view(a, [16, 1], [i * 16, 0], valid_shape=[rows, 1])
                pypto.set_vec_tile_shapes(8, 8)
                e = pypto.tensor()
                e.move(pypto.expand_clone(t, [16, 16], valid_shape=[rows, cols]))
                pypto.assemble(e, [i * 16, j * 16], b)
    x, out = torch.arange(32, dtype=torch.float32).reshape(32, 1), torch.zeros(32, 32)
    pypto.runtime._device_run_once_data_from_host(x, out)
    assert torch.equal(out, x.expand(32, 32))


def test_a_view_past_the_tensor_at_a_one_trip_loop_offset():
    """PyPTO's gather test views a (4, 4) index with a (23, 8) window at offset i * 23 in a loop
    of one iteration: the offset is the constant 0 and the view is the part inside the tensor."""
    x = pypto.tensor((4, 4), pypto.DT_INT32, "x")
    y = pypto.tensor((4, 4), pypto.DT_INT32, "y")
    with pypto.function("PAST", x, y):
        for i in pypto.loop(1):
            v = pypto.view(x, [23, 8], [i * 23, 0])
            assert v.shape == [4, 4]
            y[:] = v + 1
    a, out = torch.arange(16, dtype=torch.int32).reshape(4, 4), torch.zeros(4, 4, dtype=torch.int32)
    pypto.runtime._device_run_once_data_from_host(a, out)
    assert torch.equal(out, a + 1)
