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
    with pytest.raises(pypto.UserError, match="writes none of its tensors"):
        with pypto.function("NOTHING", x):
            pypto.exp(x)
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
