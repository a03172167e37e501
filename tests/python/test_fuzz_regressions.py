"""Framework bugs the differential fuzzer (python -m pypto.fuzz, docs/fuzzing.md) found, each as the
smallest program that shows it, on both backends.

A bug that is still open is an xfail(strict=True) test with its key in pypto.fuzz.common.KNOWN_BUGS
(the fuzzer generates such programs only with PYPTO_FUZZ_KNOWN_BUGS=1). When it is fixed the test
passes, strict makes that a failure: then the xfail mark goes, and so does the KNOWN_BUGS entry
(and its gate in the generator). The tests without a mark are bugs that are fixed."""

import numpy as np
import pytest

import pypto
from _util import MODES, run_in

DYN = pypto.DYNAMIC


# --- fixed (session 15) ----------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_int64_scalar_beyond_2_to_the_53_is_exact(mode):
    @pypto.jit
    def f(x: pypto.Tensor((1, 4), pypto.DT_INT64)):
        return x + (2 ** 53 + 1), pypto.maximum(x, 2 ** 62 + 1), x == 2 ** 53 + 1

    x = np.array([[0, 1, 2 ** 53, -5]], np.int64)
    add, mx, eq = run_in(mode, f, x)
    np.testing.assert_array_equal(add, x + (2 ** 53 + 1))  # was [2**53, 2**53 + 1, 2**54, 2**53 - 5]
    np.testing.assert_array_equal(mx, np.maximum(x, 2 ** 62 + 1))
    np.testing.assert_array_equal(eq, x == 2 ** 53 + 1)  # was True for 2**53


@pytest.mark.parametrize("mode", MODES)
def test_uint64_scalar_above_2_to_the_63(mode):
    @pypto.jit
    def f(x: pypto.Tensor((1, 3), pypto.DT_UINT64)):
        return x + (2 ** 64 - 1), x // (2 ** 63 + 4096)

    x = np.array([[0, 5, 2 ** 64 - 1]], np.uint64)
    add, div = run_in(mode, f, x)  # was refused: "out of the range of uint64"
    np.testing.assert_array_equal(add, x + np.uint64(2 ** 64 - 1))
    np.testing.assert_array_equal(div, x // np.uint64(2 ** 63 + 4096))


@pytest.mark.parametrize("mode", MODES)
def test_int64_scalars_of_full_where_clip_and_comparisons_are_exact(mode):
    big = 2 ** 53 + 1

    @pypto.jit
    def f(x: pypto.Tensor((1, 4), pypto.DT_INT64)):
        return (pypto.full([1, 4], 2 ** 63 - 1, pypto.DT_INT64) - x, pypto.where(x > 0, x, big),
                pypto.clip(x, big, 2 ** 62 + 3), x < big, x >= -(2 ** 63))

    x = np.array([[0, big - 1, big + 1, 2 ** 62 + 9]], np.int64)
    full, wh, cl, lt, ge = run_in(mode, f, x)
    np.testing.assert_array_equal(full, np.int64(2 ** 63 - 1) - x)
    np.testing.assert_array_equal(wh, np.where(x > 0, x, big))
    np.testing.assert_array_equal(cl, np.clip(x, big, 2 ** 62 + 3))
    np.testing.assert_array_equal(lt, x < big)
    assert ge.all()


@pytest.mark.parametrize("mode", MODES)
def test_empty_dynamic_dim_with_an_output_that_does_not_depend_on_it(mode):
    @pypto.jit
    def f(x: pypto.Tensor((DYN, 7), pypto.DT_FP32), g: pypto.Tensor((1, 7), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(2, 8)
        return pypto.exp(x), g * 2.0

    g = np.arange(7, dtype=np.float32).reshape(1, 7)
    e, g2 = run_in(mode, f, np.zeros((3, 7), np.float32), g)  # compiles; fine with 3 rows
    e, g2 = run_in(mode, f, np.zeros((0, 7), np.float32), g)  # was refused: "a dynamic dim is 0"
    assert e.shape == (0, 7)
    np.testing.assert_array_equal(g2, g * 2.0)


@pytest.mark.parametrize("mode", MODES)
def test_arg_reduction_over_a_window_in_a_loop(mode):
    """argmax / argmin along the rows of a loop's window x[i:i + 4] (extent min(16 - i, 4), one
    tile of the bound) was taken for a reduction across tiles, which they have no instruction to
    combine: the code generator read an unset opcode (seed 21, program 51: an IndexError with a
    garbage index). A run-time extent bounded by one tile no longer splits."""
    @pypto.jit
    def f(x: pypto.Tensor((16, 9), pypto.DT_INT32), y: pypto.Tensor((16, 9), pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(4, 8)
        out = pypto.tensor((16, 9), pypto.DT_INT32)
        low = pypto.tensor((4, 9), pypto.DT_INT32)
        for i in pypto.loop(0, 16, 4, name="L0"):
            pypto.assemble(x[i:i + 4, :].argmax(0, keepdim=True) * y[i:i + 4, :], [i, 0], out)
            pypto.assemble(pypto.argmin(x[i:i + 4, :], 0, keepdim=True), [i // 4, 0], low)
        return out, low

    rng = np.random.default_rng(51)
    x = rng.integers(-999, 999, (16, 9)).astype(np.int32)
    y = rng.integers(-999, 999, (16, 9)).astype(np.int32)
    out, low = run_in(mode, f, x, y)
    blocks = x.reshape(4, 4, 9)
    np.testing.assert_array_equal(out, (np.argmax(blocks, 1)[:, None, :] * y.reshape(4, 4, 9)).reshape(16, 9))
    np.testing.assert_array_equal(low, np.argmin(blocks, 1))


# --- fixed (commit 6406183) ----------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_fp8_cast_of_a_0d_tensor(mode):
    """pypto.cast of a 0-d tensor to FP8 viewed it as int32, which a 0-d tensor refused ('a 0-d
    tensor cannot be reinterpreted')."""
    @pypto.jit
    def f(x: pypto.Tensor((), pypto.DT_FP32)):
        return pypto.cast(pypto.cast(x, pypto.DT_FP8E4M3), pypto.DT_FP32), pypto.cast(x, pypto.DT_FP8E5M2)

    back, e5 = run_in(mode, f, np.array(1.3, np.float32))
    assert back.shape == () and float(back) == 1.25  # 1.3 to E4M3 (3 mantissa bits) rounds to 1.25
    assert e5.shape == () and int(np.asarray(e5).view(np.uint8)) == 0x3D  # 1.3 to E5M2 is 1.25: 0 01111 01


def test_fp8_tensor_with_a_scalar_names_the_storage_format():
    """An FP8 tensor with a Python scalar was checked as an integer tensor first: 'the scalar 2 is
    out of the range of fp8e4m3 [0, 0]' instead of the storage-format message every other op gives."""
    @pypto.jit
    def f(x: pypto.Tensor((2, 8), pypto.DT_FP8E4M3)):
        return x * 2.0

    with pytest.raises(pypto.UserError, match="storage format"):
        f(np.zeros((2, 8), np.uint8))


@pytest.mark.parametrize("mode", MODES)
def test_comparison_of_two_dynamic_inputs(mode):
    """Comparisons recorded their operands without fit_valid, so two inputs' dynamic dims were not
    unified as they are for + - * / maximum where: 'operand shapes (a_dim0, 8) and (b_dim0, 1) do
    not broadcast'."""
    @pypto.jit
    def f(a: pypto.Tensor((DYN, 8), pypto.DT_FP32), b: pypto.Tensor((DYN, 1), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(2, 8)
        return a > b, a + b

    a = np.arange(40, dtype=np.float32).reshape(5, 8) % 7
    b = np.arange(5, dtype=np.float32).reshape(5, 1)
    gt, add = run_in(mode, f, a, b)
    np.testing.assert_array_equal(gt, a > b)
    np.testing.assert_array_equal(add, a + b)


def test_comparison_of_two_dynamic_inputs_in_a_loop():
    """The same inside a loop over a dynamic dim, where the rows of two inputs are
    min(1, max(n - i, 0)) of their own dims."""
    @pypto.jit
    def f(a: pypto.Tensor((DYN, 8), pypto.DT_FP32), b: pypto.Tensor((DYN, 8), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8)
        out = pypto.tensor((a.shape[0], 8), pypto.DT_BOOL)
        for i in pypto.loop(a.shape[0]):
            out[i:i + 1, :] = pypto.eq(a[i:i + 1, :], b[i:i + 1, :])
        return out

    a = np.arange(24, dtype=np.float32).reshape(3, 8) % 5
    b = np.arange(24, dtype=np.float32).reshape(3, 8) % 3
    np.testing.assert_array_equal(f(a, b), a == b)


def test_numpy_scalar_for_a_written_parameter_is_refused():
    """A numpy scalar passed for a parameter the function writes was taken as a copy and the write
    lost, where a read-only array or a Python float is a UserError (found through the fuzzer's own
    0-d bf16 outputs: numpy makes (bits >> 16).astype(np.uint16) of a 0-d array a scalar)."""
    @pypto.jit
    def f(x: pypto.Tensor((), pypto.DT_FP32), o: pypto.Tensor((), pypto.DT_FP32)):
        o[...] = x * 2.0

    ro = np.array(0.0, np.float32)
    ro.setflags(write=False)
    with pytest.raises(pypto.UserError, match="read-only"):
        f(np.array(3.0, np.float32), ro)
    with pytest.raises(pypto.UserError):
        f(np.array(3.0, np.float32), np.float32(0.0))
    o = np.array(0.0, np.float32)
    f(np.array(3.0, np.float32), o)
    assert float(o) == 6.0
