"""The numeric contract (docs/numerics.md), case by case on both backends: fp32 gives numpy's
answer (NaN, inf, signed zeros and subnormals included, fused or not), fp16/bf16 give torch's
(fp32 inside, one rounding), integer scalars are exact or refused."""

import numpy as np
import pytest

import pypto
from _util import run_in, randn, rng

F32, F16, BF16, I32, I8 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16, pypto.DT_INT32, pypto.DT_INT8
MODES = ["interp", "cpu"]
R, C = 8, 64


def run(fn, mode, *args):
    return run_in(mode, fn, *args)


def same_fp32(got, want, ulps=0):
    """NaN where want is NaN, equal infinities, finite values within `ulps` ulp."""
    got = np.asarray(got, np.float32)
    want = np.asarray(want, np.float32)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaN positions differ")
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    assert np.all(np.isfinite(got[fin])), "a finite value became inf/NaN"
    if ulps == 0:
        np.testing.assert_array_equal(got[fin], want[fin])
    else:
        spacing = np.spacing(np.abs(want[fin]).astype(np.float32))
        assert np.all(np.abs(got[fin].astype(np.float64) - want[fin]) <= ulps * spacing), \
            np.max(np.abs(got[fin].astype(np.float64) - want[fin]) / spacing)


def with_nans(seed=0):
    x = randn(rng(seed), (R, C))
    x[1, 3] = np.nan
    x[2, 60] = np.nan  # in a lane other than the first
    x[4, :] = 0.0
    x[4, 9] = np.nan
    return x


# --- 1. NaN through fused max / min / relu ----------------------------------------------------

@pypto.jit
def fused_max_min_relu(a: pypto.Tensor((R, C), F32), b: pypto.Tensor((R, C), F32)):
    pypto.set_vec_tile_shapes(R, C)
    return pypto.maximum(a * 1.0, b) + pypto.minimum(a - 1.0, b) + pypto.relu(a + 0.0) + pypto.maximum(b * 2.0, 0.5)


@pytest.mark.parametrize("mode", MODES)
def test_nan_through_fused_max_min_relu(mode):
    a, b = with_nans(1), with_nans(2)[::-1].copy()
    want = np.maximum(a, b) + np.minimum(a - 1, b) + np.maximum(a, 0) + np.maximum(b * 2, np.float32(0.5))
    same_fp32(run(fused_max_min_relu, mode, a, b), want)


@pypto.jit
def relu_signed_zero(a: pypto.Tensor((R, C), F32)):
    pypto.set_vec_tile_shapes(R, C)
    return pypto.relu(a * 1.0)


@pytest.mark.parametrize("mode", MODES)
def test_relu_keeps_negative_zero_and_nan(mode):
    a = np.zeros((R, C), np.float32)
    a[0, :] = -0.0
    a[1, 5] = np.nan
    a[2, :] = -3.0
    got = run(relu_signed_zero, mode, a)
    same_fp32(got, np.where(a < 0, np.float32(0), a))
    assert np.all(np.signbit(got[0]))


# --- 2. NaN through a row amax / amin followed by another op ----------------------------------

@pypto.jit
def row_max_then_op(a: pypto.Tensor((R, C), F32)):
    pypto.set_vec_tile_shapes(R, C)
    return pypto.amax(a, -1, keepdim=True) * 2.0 + pypto.amin(a, -1, keepdim=True)


@pytest.mark.parametrize("mode", MODES)
def test_nan_through_row_amax_amin_then_op(mode):
    a = with_nans(3)
    same_fp32(run(row_max_then_op, mode, a), a.max(-1, keepdims=True) * 2 + a.min(-1, keepdims=True))


# --- 3. division by subnormal divisors; scalar / tensor ---------------------------------------

@pypto.jit
def row_divide(a: pypto.Tensor((R, C), F32), d: pypto.Tensor((R, 1), F32)):
    pypto.set_vec_tile_shapes(R, C)
    return a / d


@pypto.jit
def scalar_over_tensor(a: pypto.Tensor((R, C), F32)):
    pypto.set_vec_tile_shapes(R, C)
    return 1e-39 / a + (3.0 - a)


@pytest.mark.parametrize("mode", MODES)
def test_division_by_subnormal_row_values(mode):
    a = randn(rng(4), (R, C))
    d = np.array([1e-40, -3e-42, 1.4e-45, 1e-38, 2.0, 0.0, -0.0, np.inf], np.float32).reshape(R, 1)
    with np.errstate(all="ignore"):
        same_fp32(run(row_divide, mode, a, d), a / d)


@pytest.mark.parametrize("mode", MODES)
def test_scalar_divided_by_tensor_is_a_division(mode):
    a = randn(rng(5), (R, C))
    a[0, :8] = [1e-40, -1e-41, 0.0, -0.0, np.inf, np.nan, 1e-30, 3.0]
    with np.errstate(all="ignore"):
        want = np.float32(1e-39) / a + (np.float32(3.0) - a)
    same_fp32(run(scalar_over_tensor, mode, a), want)


def test_reciprocal_division_is_an_opt_in_fast_path():
    @pypto.jit(pass_options={"reciprocal_division": True})
    def fast(a: pypto.Tensor((R, C), F32), d: pypto.Tensor((R, 1), F32)):
        pypto.set_vec_tile_shapes(R, C)
        return a / d

    a = randn(rng(6), (R, C))
    d = (randn(rng(7), (R, 1)) + 3).astype(np.float32)
    same_fp32(fast(a, d), a / d, ulps=2)
    # The documented difference: 1 / d overflows for a subnormal divisor.
    d[0, 0] = 1e-40
    a[0] = 1e-39 * (np.abs(a[0]) + 1)  # a / d is finite (10 to ~40)
    assert np.all(np.isinf(fast(a, d)[0]))
    same_fp32(row_divide(a, d), a / d)


# --- 4/5. integer scalars: exact, range-checked -----------------------------------------------

@pypto.jit
def int_scalars(x: pypto.Tensor((R, C), I32)):
    pypto.set_vec_tile_shapes(R, C)
    return pypto.maximum(x + 16777217, 2**31 - 1 - 2**24) - (-7)


@pypto.jit
def int_bounds(x: pypto.Tensor((R, C), I32)):
    pypto.set_vec_tile_shapes(R, C)
    return pypto.minimum(x, -1) * 2147483647 + pypto.maximum(x, 2**31 - 1)


@pytest.mark.parametrize("mode", MODES)
def test_integer_scalars_are_exact(mode):
    x = rng(8).integers(-1000, 1000, (R, C)).astype(np.int32)
    np.testing.assert_array_equal(run(int_scalars, mode, x), np.maximum(x + 16777217, 2**31 - 1 - 2**24) + 7)
    with np.errstate(over="ignore"):
        want = (np.minimum(x, -1).astype(np.int64) * 2147483647 + 2**31 - 1).astype(np.int64)
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)  # int32 wraps
    np.testing.assert_array_equal(run(int_bounds, mode, x), want)


@pytest.mark.parametrize("dtype, value", [(I32, 2**40), (I32, -2**31 - 1), (I8, 300), (I8, -129), (I32, 0.5)])
def test_out_of_range_integer_scalar_is_a_user_error(dtype, value):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        return x + value

    np_dt = {I32: np.int32, I8: np.int8}[dtype]
    with pytest.raises(pypto.UserError, match=r"(?s)scalar .* (out of the range|not an integer).*test_numerics.py\", line"):
        f(np.zeros((R, C), np_dt))


# --- 6. non-finite Python scalars -------------------------------------------------------------

@pypto.jit
def nonfinite_scalars(a: pypto.Tensor((R, C), F32)):
    pypto.set_vec_tile_shapes(R, C)
    return pypto.maximum(a, float("-inf")) + (a * float("inf")) * 0.0 + pypto.minimum(a, float("nan"))


@pytest.mark.parametrize("mode", MODES)
def test_inf_and_nan_scalars_compile(mode):
    a = randn(rng(9), (R, C))
    with np.errstate(all="ignore"):
        want = np.maximum(a, -np.inf) + (a * np.inf) * 0 + np.minimum(a, np.float32(np.nan))
    same_fp32(run(nonfinite_scalars, mode, a), want)


# --- 7-10. 16-bit: torch's answer -------------------------------------------------------------

torch = pytest.importorskip("torch")
TORCH = {F16: torch.float16, BF16: torch.bfloat16}
NP16 = {F16: np.float16}


def to_np(dtype, t):
    return t.float().numpy() if dtype == BF16 else t.numpy()


def from_torch(dtype, t):
    """A torch tensor as the array pypto takes (bf16: a torch tensor; fp16: numpy)."""
    return t if dtype == BF16 else t.numpy()


def same16(dtype, got, want, ulps=1):
    got = np.asarray(got.float() if hasattr(got, "float") else got, np.float32)
    want = np.asarray(want, np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    ulp = np.float32(2.0 ** -10 if dtype == F16 else 2.0 ** -7)
    mag = np.maximum(np.abs(want[fin]), np.float32(6.1e-5 if dtype == F16 else 1e-38))
    assert np.all(np.abs(got[fin] - want[fin]) <= ulps * ulp * mag * 1.0001), \
        np.max(np.abs(got[fin] - want[fin]) / (ulp * mag))


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("mode", MODES)
def test_16bit_sigmoid_silu_negative_tail(mode, dtype):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        pypto.set_vec_tile_shapes(R, C)
        return pypto.silu(x) + pypto.sigmoid(x) * 0.0

    t = (torch.randn(R, C, generator=torch.Generator().manual_seed(10)) * 8).to(TORCH[dtype])
    t[0, :6] = torch.tensor([-12.0, -11.5, -20.0, -60.0, 15.0, 0.0])
    want = torch.nn.functional.silu(t) + torch.sigmoid(t) * 0.0
    got = run(f, mode, from_torch(dtype, t))
    same16(dtype, got, to_np(dtype, want))
    assert to_np(dtype, want)[0, 0] != 0 and np.asarray(got if dtype != BF16 else got.float())[0, 0] != 0


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("mode", MODES)
def test_16bit_norms_with_a_large_value(mode, dtype):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype), g: pypto.Tensor((1, C), dtype), b: pypto.Tensor((1, C), dtype)):
        pypto.set_vec_tile_shapes(2, C)
        return pypto.rms_norm(x, g) + pypto.layer_norm(x, g, b)

    gen = torch.Generator().manual_seed(11)
    t = torch.randn(R, C, generator=gen).to(TORCH[dtype])
    t[1, 1] = 1000.0
    t[3, :] = 300.0
    t[3, 0] = 301.0
    g = (torch.rand(1, C, generator=gen) + 0.5).to(TORCH[dtype])
    b = torch.randn(1, C, generator=gen).to(TORCH[dtype])
    want = (torch.nn.functional.rms_norm(t, (C,), g[0], eps=1e-6)
            + torch.nn.functional.layer_norm(t, (C,), g[0], b[0], eps=1e-5))
    got = run(f, mode, *(from_torch(dtype, v) for v in (t, g, b)))
    # Each norm is rounded once, then the sum once more: 2 ulp.
    same16(dtype, got, to_np(dtype, want), ulps=2)


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tile", [(2, 16), (2, 64), (8, 8)])
def test_16bit_sum_does_not_depend_on_the_tile(mode, dtype, tile):
    @pypto.jit
    def f(x: pypto.Tensor((4, 256), dtype)):
        pypto.set_vec_tile_shapes(*tile)
        return pypto.sum(x, -1, keepdim=True) + pypto.mean(x, -1, keepdim=True) * 0.0

    t = torch.randn(4, 256, generator=torch.Generator().manual_seed(12)).to(TORCH[dtype])
    if dtype == F16:
        t[0, :] = 0
        t[0, :16], t[0, 16:32], t[0, 32] = 30000.0, -30000.0, 7.0
    want = t.sum(-1, keepdim=True) + t.mean(-1, keepdim=True) * 0.0
    same16(dtype, run(f, mode, from_torch(dtype, t)), to_np(dtype, want))


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("mode", MODES)
def test_16bit_scalars_stay_fp32(mode, dtype):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        pypto.set_vec_tile_shapes(R, C)
        return (x * 1e5) + (x / 1e5) * 1e4 + x * 0.1

    t = (torch.rand(R, C, generator=torch.Generator().manual_seed(13)) * 0.01).to(TORCH[dtype])
    t[0, 0] = 0.001
    want = (t * 1e5) + (t / 1e5) * 1e4 + t * 0.1
    # Three ops rounded separately, then two sums: each element within 2 ulp of torch's.
    same16(dtype, run(f, mode, from_torch(dtype, t)), to_np(dtype, want), ulps=2)
    if dtype == F16:
        assert np.isfinite(run(f, mode, from_torch(dtype, t))[0, 0])


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("mode", MODES)
def test_16bit_single_op_with_scalar_matches_torch_bit_for_bit(mode, dtype):
    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        pypto.set_vec_tile_shapes(R, C)
        return x * 0.1

    t = torch.randn(R, C, generator=torch.Generator().manual_seed(14)).to(TORCH[dtype])
    got = run(f, mode, from_torch(dtype, t))
    np.testing.assert_array_equal(np.asarray(got.float() if dtype == BF16 else got, np.float32),
                                  to_np(dtype, t * 0.1).astype(np.float32))


# --- 11. matmul: one reference -----------------------------------------------------------------

@pytest.mark.parametrize("k_tiles", [([64, 64]), ([64, 128]), ([32, 256])])
def test_interp_matmul_does_not_depend_on_the_cube_tile(k_tiles):
    @pypto.jit
    def f(a: pypto.Tensor((16, 256), F32), b: pypto.Tensor((256, 16), F32)):
        pypto.set_cube_tile_shapes([16, 16], k_tiles, [16, 16])
        return pypto.matmul(a, b)

    r = rng(15)
    a = (r.standard_normal((16, 256)) * 10 ** r.uniform(-3, 3, (16, 256))).astype(np.float32)
    b = r.standard_normal((256, 16)).astype(np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)  # one rounding
    np.testing.assert_array_equal(run(f, "interp", a, b), want)


@pytest.mark.parametrize("mode", MODES)
def test_matmul_cancellation_within_the_bound(mode):
    @pypto.jit
    def f(a: pypto.Tensor((1, 3), F32), b: pypto.Tensor((3, 1), F32)):
        return pypto.matmul(a, b)

    a = np.array([[1e8, 1, -1e8]], np.float32)
    b = np.ones((3, 1), np.float32)
    got = float(run(f, mode, a, b)[0, 0])
    bound = 3 * 2.0 ** -24 * (1e8 + 1 + 1e8)
    assert abs(got - 1.0) <= bound
    if mode == "interp":
        assert got == 1.0  # the exact sum, rounded once


# --- found by the differential fuzzer ----------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_multiply_then_add_rounds_twice(mode):
    # GCC contracted a * b + c into one FMA in generated kernels (one rounding, not numpy's two):
    # kernels and the PTO library now build with -ffp-contract=off (seed 99, programs 3 and 20).
    @pypto.jit
    def f(x: pypto.Tensor((16, 9), F32)):
        pypto.set_vec_tile_shapes(16, 16)
        t0 = 0.5 + x
        return t0 + (t0 * 2.5 + 0.1)

    x = np.abs(randn(rng(30), (16, 9))) * 3
    t0 = np.float32(0.5) + x
    same_fp32(run(f, mode, x), t0 + (t0 * np.float32(2.5) + np.float32(0.1)))


@pytest.mark.parametrize("mode", MODES)
def test_division_by_negative_zero_scalar(mode):
    # -0.0 was emitted as the literal "-0", the integer 0: x / -0.0 gave +inf (program 45).
    @pypto.jit
    def f(x: pypto.Tensor((3, 20), F32)):
        pypto.set_vec_tile_shapes(1, 16)
        return pypto.relu(pypto.abs(x)) / -0.0 + x * -0.0

    x = randn(rng(31), (3, 20))
    x[0, 0] = 0.0
    with np.errstate(all="ignore"):
        want = np.maximum(np.abs(x), 0) / np.float32(-0.0) + x * np.float32(-0.0)
    same_fp32(run(f, mode, x), want)


@pytest.mark.parametrize("mode", MODES)
def test_reduction_of_a_reduction_in_one_row_loop(mode):
    # The sum (mean) of a min of a 1-wide row ran in the same column loop as the min it reads
    # and read it before it was made (program 54).
    @pypto.jit
    def f(x: pypto.Tensor((5, 33), F32), r: pypto.Tensor((5, 1), F32)):
        pypto.set_vec_tile_shapes(1, 4)
        out = pypto.tensor((5, 33), F32)
        for i in pypto.loop(5):
            t = pypto.amin(pypto.amin(r[i:i + 1, :] - x[i:i + 1, :], -1, keepdim=True), -1, keepdim=True)
            pypto.assemble(pypto.mean(t, -1, keepdim=True) + x[i:i + 1, :], [i, 0], out)
        return out

    x, r = randn(rng(32), (5, 33)), randn(rng(33), (5, 1))
    same_fp32(run(f, mode, x, r), (r - x).min(-1, keepdims=True) + x)


# --- found by the 5000-program fuzz run (seed 1) ---------------------------------------------------

@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("mode", MODES)
def test_negative_zero_scalars_keep_their_sign(mode, dtype):
    # The fast library broadcast a scalar as 0 + s, which makes -0.0 +0.0: copysign(x, -0.0) was
    # |x|, minimum(-0.0, x >= 0) was +0, x / -0.0 was +inf (programs 1504, 1642, 2660, 3222, 4763).
    np_dt = np.float32 if dtype == F32 else np.float16

    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        pypto.set_vec_tile_shapes(4, 16)
        return pypto.copysign(x, -0.0), pypto.minimum(-0.0, x), x / -0.0, x + (-0.0)

    x = np.abs(randn(rng(30), (R, C))).astype(np_dt) + np_dt(0.5)
    x[0, 0] = 0.0
    x[0, 1] = -0.0
    a, b, c, d = run(f, mode, x)
    np.testing.assert_array_equal(a, -x)
    assert np.all(np.signbit(a))
    nz = x != 0  # (which zero a tie of -0 and +0 gives is not numpy-consistent: fp32 and fp16 differ)
    np.testing.assert_array_equal(np.signbit(b[nz]), np.signbit(np.minimum(np_dt(-0.0), x)[nz]))
    assert np.all(np.isneginf(c[x > 0]))
    np.testing.assert_array_equal(np.signbit(d), np.signbit(x + np_dt(-0.0)))  # -0 + -0 is -0


@pytest.mark.parametrize("dtype", [I8, I32])
@pytest.mark.parametrize("mode", MODES)
def test_integer_tensor_compared_with_an_infinity(mode, dtype):
    # x == float("inf") on an integer tensor raised OverflowError (programs 779, 635, 2102, ...).
    np_dt = np.int8 if dtype == I8 else np.int32

    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        pypto.set_vec_tile_shapes(R, C)
        inf = float("inf")
        return (x == inf, x != inf, x < inf, x <= -inf, x > -inf, x >= inf, pypto.eq(-inf, x))

    x = rng(31).integers(np.iinfo(np_dt).min, np.iinfo(np_dt).max, (R, C), endpoint=True).astype(np_dt)
    got = run(f, mode, x)
    inf = np.inf
    want = (x == inf, x != inf, x < inf, x <= -inf, x > -inf, x >= inf, x == -inf)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_where_with_an_integer_scalar_the_dtype_cannot_hold_is_a_user_error():
    # where(c, x, 1000) on int8 wrapped silently (programs 1107, 1188, ...).
    @pypto.jit
    def f(x: pypto.Tensor((R, C), I8)):
        return pypto.where(x > 0, x, 1000)

    with pytest.raises(pypto.UserError, match=r"pypto.where: the scalar 1000 is out of the range of .*int8"):
        f(np.zeros((R, C), np.int8))

    @pypto.jit
    def g(x: pypto.Tensor((R, C), I32)):
        return pypto.where(x > 0, float("inf"), x)

    with pytest.raises(pypto.UserError, match="is not an integer"):
        g(np.zeros((R, C), np.int32))


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("mode", MODES)
def test_16bit_scalar_first_op_without_its_instruction_computes_in_fp32(mode, dtype):
    # fmod(0.1, x) has no scalar/tile instruction: the scalar was expanded into a tile of x's
    # dtype, i.e. rounded to 0.10009765625 in bf16 (program 3238).
    @pypto.jit
    def f(x: pypto.Tensor((R, C), dtype)):
        pypto.set_vec_tile_shapes(R, C)
        return pypto.fmod(0.1, x)

    t = (torch.rand(R, C, generator=torch.Generator().manual_seed(32)) * 0.01 + 1e-4).to(TORCH[dtype])
    want = torch.fmod(torch.full_like(t, 0.1, dtype=torch.float32), t.float()).to(TORCH[dtype])
    np.testing.assert_array_equal(np.asarray(to_np(dtype, torch.from_numpy(np.zeros(1))) if False else
                                             _as_f32(dtype, run(f, mode, from_torch(dtype, t)))),
                                  _as_f32(dtype, want))


def _as_f32(dtype, v):
    """A 16-bit result (numpy fp16, bf16 bits, or a torch tensor) as float32 values."""
    if isinstance(v, torch.Tensor):
        return v.float().numpy()
    if dtype == BF16 and v.dtype == np.uint16:
        return pypto.from_bf16(v)
    return np.asarray(v, np.float32)
