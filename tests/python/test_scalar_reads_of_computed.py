"""An element of a tensor the function computes, read as a scalar (CANN's MoE dispatch reads
`cumsum_table[index - 1, expert]`): the call runs in phases, the control program reading the
element once the launches before the read have run. Also a scalar a runtime branch reads, used
after the branch, and an element of a reshaped window. Both backends, against numpy."""

import numpy as np
import pytest

import pypto

MODES = ["cpu", "interp"]


@pypto.jit
def _gather_by_cumsum(x: pypto.Tensor([8], pypto.DT_INT32), y: pypto.Tensor([8, 4], pypto.DT_FP32),
                      out: pypto.Tensor([8, 4], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 4)
    c = pypto.cumsum(x, 0)  # computed by the kernel
    for i in pypto.loop(8, name="L", idx_name="i"):
        k = c[i]  # an element of it: a loop's offset
        out[i:i + 1, :] = pypto.view(y, [1, 4], [k % 8, 0]) * 2.0


@pypto.jit
def _branch_read(x: pypto.Tensor([8], pypto.DT_INT32), y: pypto.Tensor([8, 4], pypto.DT_FP32),
                 out: pypto.Tensor([8, 4], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 4)
    c = pypto.cumsum(x, 0)
    for i in pypto.loop(8, name="L", idx_name="i"):
        if i == 0:
            k = pypto.SymbolicScalar(0)
        else:
            k = c[i - 1]  # read in this path only (i - 1 is -1 in the other)
        out[i:i + 1, :] = pypto.view(y, [1, 4], [k % 8, 0]) + 1.0


@pypto.jit
def _write_then_read(x: pypto.Tensor([2, 4], pypto.DT_INT32), out: pypto.Tensor([2, 4], pypto.DT_INT32)):
    pypto.set_vec_tile_shapes(2, 4)
    out[:] = x + 1  # an output the function writes ...
    flat = pypto.reshape(out, [8], inplace=True)
    n = flat[5]     # ... read through a reshape, after the write
    out[0:1, 0:1] = pypto.full([1, 1], n * 10, pypto.DT_INT32)


@pytest.mark.parametrize("mode", MODES)
def test_element_of_a_computed_tensor_steers_a_loop(mode):
    _gather_by_cumsum.group_options["runtime"]["run_mode"] = mode
    x = np.array([1, 2, 0, 3, 1, 1, 0, 2], np.int32)
    y = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = np.zeros((8, 4), np.float32)
    _gather_by_cumsum(x, y, out)
    c = np.cumsum(x)
    np.testing.assert_array_equal(out, np.stack([y[c[i] % 8] * 2 for i in range(8)]))


@pytest.mark.parametrize("mode", MODES)
def test_a_scalar_read_in_a_runtime_branch_leaves_it(mode):
    _branch_read.group_options["runtime"]["run_mode"] = mode
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, 8).astype(np.int32)
    y = rng.standard_normal((8, 4)).astype(np.float32)
    out = np.zeros((8, 4), np.float32)
    _branch_read(x, y, out)
    c = np.cumsum(x)
    np.testing.assert_array_equal(out, np.stack([y[(0 if i == 0 else c[i - 1]) % 8] + 1 for i in range(8)]))


@pytest.mark.parametrize("mode", MODES)
def test_an_element_the_function_wrote_read_through_a_reshape(mode):
    _write_then_read.group_options["runtime"]["run_mode"] = mode
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    out = np.zeros((2, 4), np.int32)
    _write_then_read(x, out)
    want = x + 1
    want[0, 0] = (x + 1).reshape(8)[5] * 10
    np.testing.assert_array_equal(out, want)
