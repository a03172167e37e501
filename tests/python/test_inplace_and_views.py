"""In-place outputs (out[:] = ..., assemble into parameters), views and returned values."""

import numpy as np
import pytest

import pypto
from _util import assert_close, randn, rng

F32 = pypto.DT_FP32


def test_inplace_parameter_returns_none():
    @pypto.jit
    def f(x: pypto.Tensor((5, 9), F32), out: pypto.Tensor((5, 9), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        out[:] = x * 2.0 + 1.0

    x = randn(rng(0), (5, 9))
    out = np.zeros((5, 9), np.float32)
    assert f(x, out) is None
    assert_close(out, x * 2.0 + 1.0)


def test_read_modify_write_same_parameter():
    @pypto.jit
    def f(x: pypto.Tensor((4, 10), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        x[:] = x - pypto.amax(x, dim=-1, keepdim=True)

    x = randn(rng(1), (4, 10))
    ref = x - x.max(-1, keepdims=True)
    f(x)
    assert_close(x, ref)


def test_window_write_preserves_rest():
    @pypto.jit
    def f(x: pypto.Tensor((3, 4), F32), out: pypto.Tensor((8, 10), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        out[2:5, 5:9] = pypto.exp(x)

    x = randn(rng(2), (3, 4))
    out = np.full((8, 10), 42.0, np.float32)
    f(x, out)
    ref = np.full((8, 10), 42.0)
    ref[2:5, 5:9] = np.exp(x.astype(np.float64))
    assert_close(out, ref)


def test_assemble_at_offsets_into_parameter():
    @pypto.jit
    def f(x: pypto.Tensor((3, 4), F32), out: pypto.Tensor((8, 10), F32)):
        pypto.set_vec_tile_shapes(2, 3)
        pypto.assemble(x + 1.0, [4, 6], out)
        pypto.assemble(x * -1.0, [0, 0], out)

    x = randn(rng(3), (3, 4))
    out = np.zeros((8, 10), np.float32)
    f(x, out)
    ref = np.zeros((8, 10))
    ref[4:7, 6:10] = x + 1.0
    ref[0:3, 0:4] = -x
    assert_close(out, ref)


def test_assemble_pieces_into_created_tensor():
    @pypto.jit
    def f(x: pypto.Tensor((6, 8), F32)) -> pypto.Tensor((6, 16), F32):
        pypto.set_vec_tile_shapes(4, 4)
        out = pypto.tensor((6, 16), F32)
        pypto.assemble(pypto.exp(x), [0, 0], out)
        pypto.assemble(pypto.neg(x), [0, 8], out)
        return out

    x = randn(rng(4), (6, 8))
    assert_close(f(x), np.concatenate([np.exp(x.astype(np.float64)), -x], axis=1))


def test_view_of_view_offsets_compose():
    @pypto.jit
    def f(x: pypto.Tensor((6, 10), F32)) -> pypto.Tensor((2, 3), F32):
        pypto.set_vec_tile_shapes(2, 4)
        out = pypto.tensor((2, 3), F32)
        out[:] = x[1:5, 2:9][1:3, 3:6] * 1.0
        return out

    x = np.arange(60, dtype=np.float32).reshape(6, 10)
    np.testing.assert_array_equal(f(x), x[1:5, 2:9][1:3, 3:6])


@pytest.mark.parametrize("key,shape", [
    ((slice(-2, None), Ellipsis), (2, 10)),
    ((Ellipsis, slice(3, -1)), (6, 6)),
    ((slice(1, 4),), (3, 10)),
    ((slice(None), slice(0, 1)), (6, 1)),
])
def test_slice_forms(key, shape):
    @pypto.jit
    def f(x: pypto.Tensor((6, 10), F32)) -> pypto.Tensor(shape, F32):
        pypto.set_vec_tile_shapes(4, 4)
        out = pypto.tensor(shape, F32)
        out[:] = x[key] + 0.5
        return out

    x = randn(rng(5), (6, 10))
    assert_close(f(x), x[key] + 0.5)


def test_view_with_tails_inside_loop():
    @pypto.jit
    def f(x: pypto.Tensor((5, 3, 37), F32)) -> pypto.Tensor((5, 3, 37), F32):
        out = pypto.tensor((5, 3, 37), F32)
        pypto.set_vec_tile_shapes(1, 2, 16)
        for i in pypto.loop(0, 5, 1, name="L", idx_name="i"):
            v = x[i:i + 1, :, :]
            out[i:i + 1, :, :] = v / pypto.sum(pypto.abs(v), dim=-1, keepdim=True)
        return out

    x = randn(rng(6), (5, 3, 37))
    assert_close(f(x), x / np.abs(x.astype(np.float64)).sum(-1, keepdims=True))


def test_multiple_returned_outputs():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        a = pypto.tensor((4, 8), F32)
        b = pypto.tensor((4, 1), F32)
        a[:] = x + 1.0
        b[:] = pypto.amax(x, dim=-1, keepdim=True)
        return a, b

    x = randn(rng(7), (4, 8))
    a, b = f(x)
    assert_close(a, x + 1.0)
    assert_close(b, x.max(-1, keepdims=True))


def test_return_binary_of_two_params():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), y: pypto.Tensor((4, 8), F32)) -> pypto.Tensor((4, 8), F32):
        pypto.set_vec_tile_shapes(2, 4)
        return x + y

    r = rng(8)
    x, y = randn(r, (4, 8)), randn(r, (4, 8))
    assert_close(f(x, y), x.astype(np.float64) + y)


def test_return_view_of_input_is_copied():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32), y: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        return x[1:3, 2:7]

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = f(x, x.copy())
    np.testing.assert_array_equal(y, x[1:3, 2:7])
    y[:] = -1
    assert x[1, 2] == 10.0  # a copy, not an alias of the input


RETURN_BUG = ("Recorder::Return keeps `Value& v = f_.value(id)` across CreateTensor(), which grows the value "
              "vector; when it reallocates, v dangles and the copy is recorded with a garbage rank "
              "('... and 0 offsets must have the same rank')")


def test_return_unary_result_directly():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)) -> pypto.Tensor((4, 8), F32):
        pypto.set_vec_tile_shapes(4, 8)
        return pypto.exp(x)

    x = randn(rng(9), (4, 8))
    assert_close(f(x), np.exp(x.astype(np.float64)))


def test_return_scalar_op_result_directly():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)) -> pypto.Tensor((4, 8), F32):
        pypto.set_vec_tile_shapes(4, 8)
        return x * 2.0

    x = randn(rng(10), (4, 8))
    assert_close(f(x), x * 2.0)


def test_return_input_parameter_is_copied():
    @pypto.jit
    def f(x: pypto.Tensor((4, 8), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        return x

    x = randn(rng(11), (4, 8))
    y = f(x)
    np.testing.assert_array_equal(y, x)
    assert not np.shares_memory(x, y)


def test_non_contiguous_input_array():
    @pypto.jit
    def f(x: pypto.Tensor((6, 10), F32)) -> pypto.Tensor((6, 10), F32):
        pypto.set_vec_tile_shapes(4, 4)
        out = pypto.tensor((6, 10), F32)
        out[:] = x * 1.0 + 0.25
        return out

    x = np.arange(60, dtype=np.float32).reshape(10, 6).T  # Fortran order
    assert_close(f(x), x + 0.25)


def test_non_contiguous_output_parameter_is_written():
    """An in-place output passed as a strided numpy view must be updated in the caller's array."""
    @pypto.jit
    def f(x: pypto.Tensor((4, 5), F32), out: pypto.Tensor((4, 5), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        out[:] = x + 1.0

    x = randn(rng(12), (4, 5))
    backing = np.zeros((4, 10), np.float32)
    out = backing[:, ::2]
    f(x, out)
    assert_close(backing[:, ::2], x + 1.0)
    np.testing.assert_array_equal(backing[:, 1::2], 0.0)


def test_in_place_update_3d_fuses_and_matches():
    R, C, T = 40, 48, 4

    @pypto.jit
    def f(x: pypto.Tensor((T, R, C), pypto.DT_FP32)) -> pypto.Tensor((1, R, C), pypto.DT_FP32):
        acc = pypto.tensor((1, R, C), pypto.DT_FP32)
        pypto.set_vec_tile_shapes(1, 16, 48)
        acc[:] = x[0:1, :, :] * 1.0
        for i in pypto.loop(1, T):
            acc[:] = acc * 0.5 + x[i:i + 1, :, :]
        return acc

    x = np.random.default_rng(0).standard_normal((T, R, C)).astype(np.float32)
    want = x[0].astype(np.float64)
    for i in range(1, T):
        want = want * 0.5 + x[i]
    np.testing.assert_allclose(f(x)[0], want, rtol=1e-5, atol=1e-6)
    block = f.last.program.block_graph()
    loop_kernels = [k for k in block.split("kernel ")[1:] if "mul_scalar_add_assemble" in k.split(" ")[0]]
    assert loop_kernels, block  # the update and its store are one kernel


def test_broadcast_read_then_write_stays_in_two_kernels():
    """Reading a tensor broadcast across tiles and then writing it must not fuse: another tile
    would read what this one already wrote."""
    R, C = 32, 16

    @pypto.jit
    def f(x: pypto.Tensor((R, C), pypto.DT_FP32), s: pypto.Tensor((R, C), pypto.DT_FP32)) -> None:
        pypto.set_vec_tile_shapes(8, 16)
        row = s[0:1, :]
        s[:] = x + row  # every tile reads row 0 of s; the first tile rewrites it

    x = np.random.default_rng(1).standard_normal((R, C)).astype(np.float32)
    s = np.random.default_rng(2).standard_normal((R, C)).astype(np.float32)
    want = x + s[0:1, :]
    f(x, s)
    np.testing.assert_allclose(s, want, rtol=1e-6)


def test_a_written_parameter_returned_is_the_callers_array_written_in_place():
    # `out[:] = ...; return out` (the hw-native-sys pl.jit form, also seen in CANN PyPTO code) used
    # to return a fresh array and leave the caller's `out` unwritten.
    @pypto.jit
    def f(a: pypto.Tensor([16, 32], pypto.DT_FP32), out: pypto.Tensor([16, 32], pypto.DT_FP32)):
        out[:] = a * 2.0
        return out, a + 1.0

    a = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    out = np.zeros_like(a)
    r, s = f(a, out)
    assert r is out
    np.testing.assert_array_equal(out, a * 2)
    np.testing.assert_array_equal(s, a + 1)
    torch = pytest.importorskip("torch")
    ta, tout = torch.from_numpy(a), torch.zeros(16, 32)
    r, _ = f(ta, tout)
    assert r is tout
    np.testing.assert_array_equal(tout.numpy(), a * 2)
