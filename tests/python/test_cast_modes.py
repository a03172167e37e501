"""pypto.cast with PyPTO's CastMode: float -> int truncates by default (torch's .to(int)), the
modes round as named into integers, into narrower floats in their direction, and a float cast
to its own dtype with a mode rounds to an integer; into integers it saturates (NaN -> 0)."""

import numpy as np
import pytest

import pypto

F32, F16, BF16, I32, I8 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16, pypto.DT_INT32, pypto.DT_INT8
SPECIAL = [2.7, -2.7, 2.5, -2.5, 0.5, -0.5, 1.5, 0.49999997, np.nan, np.inf, -np.inf, -0.0, 3e10, -3e10, 126.5, -129.5]


def _round_half_away(v):
    return np.copysign(np.floor(np.abs(v) + 0.5), v)


ROUNDING = {pypto.CastMode.CAST_NONE: np.trunc, pypto.CastMode.CAST_TRUNC: np.trunc,
            pypto.CastMode.CAST_RINT: np.rint, pypto.CastMode.CAST_ROUND: _round_half_away,
            pypto.CastMode.CAST_FLOOR: np.floor, pypto.CastMode.CAST_CEIL: np.ceil,
            pypto.CastMode.CAST_ODD: np.trunc}


def _data(rows=3, cols=37, seed=0):
    x = (np.random.default_rng(seed).standard_normal((rows, cols)) * 200).astype(np.float32)
    x.ravel()[:len(SPECIAL)] = SPECIAL
    return x


@pytest.mark.parametrize("mode", list(pypto.CastMode))
@pytest.mark.parametrize("out", [I32, I8])
def test_float_to_int_rounds_by_the_mode_and_saturates(mode, out):
    x = _data()

    @pypto.jit
    def f(a: pypto.Tensor((3, 37), F32)):
        pypto.set_vec_tile_shapes(2, 16)
        return pypto.cast(a, out, mode)

    info = np.iinfo(np.int32 if out == I32 else np.int8)
    ref = np.clip(np.nan_to_num(ROUNDING[mode](x.astype(np.float64)), nan=0.0), info.min, info.max)
    np.testing.assert_array_equal(f(x), ref.astype(info.dtype))


def test_the_default_matches_torch_to_int():
    torch = pytest.importorskip("torch")
    x = _data()
    x = np.where(np.isfinite(x) & (np.abs(x) < 2e9), x, 1.0).astype(np.float32)

    @pypto.jit
    def f(a: pypto.Tensor((3, 37), F32)):
        return pypto.cast(a, I32)

    np.testing.assert_array_equal(f(x), torch.from_numpy(x).to(torch.int32).numpy())


@pytest.mark.parametrize("mode", [pypto.CastMode.CAST_RINT, pypto.CastMode.CAST_ROUND, pypto.CastMode.CAST_FLOOR,
                                  pypto.CastMode.CAST_CEIL, pypto.CastMode.CAST_TRUNC])
def test_a_float_cast_to_its_own_dtype_with_a_mode_rounds_to_an_integer(mode):
    x = _data()

    @pypto.jit
    def f(a: pypto.Tensor((3, 37), F32)):
        pypto.set_vec_tile_shapes(2, 16)
        return pypto.cast(a, F32, mode), pypto.cast(a, F32)

    rounded, same = f(x)
    np.testing.assert_array_equal(rounded, ROUNDING[mode](x.astype(np.float64)).astype(np.float32))
    np.testing.assert_array_equal(same, x)  # no mode: the values as they are


@pytest.mark.parametrize("mode,direction", [(pypto.CastMode.CAST_FLOOR, -1), (pypto.CastMode.CAST_CEIL, 1),
                                            (pypto.CastMode.CAST_TRUNC, 0)])
@pytest.mark.parametrize("dt,np_half", [(F16, np.float16), (BF16, None)])
def test_narrowing_floats_round_in_the_modes_direction(mode, direction, dt, np_half):
    x = (np.random.default_rng(1).standard_normal((3, 37)) * 3).astype(np.float32)

    @pypto.jit
    def f(a: pypto.Tensor((3, 37), F32)):
        return pypto.cast(pypto.cast(a, dt, mode), F32)

    y = f(x).astype(np.float64)
    xd = x.astype(np.float64)
    if direction < 0:
        assert (y <= xd).all()
    elif direction > 0:
        assert (y >= xd).all()
    else:
        assert (np.abs(y) <= np.abs(xd)).all()
    # and it is the neighbour: within one 16-bit ulp of the value
    ulp = 2.0 ** (np.floor(np.log2(np.abs(xd))) - (10 if np_half is not None else 7))
    assert (np.abs(y - xd) < ulp).all()


def test_cast_mode_errors_name_the_op():
    @pypto.jit
    def f(a: pypto.Tensor((3, 37), F32)):
        return pypto.cast(a, I32, "trunc")

    with pytest.raises(pypto.UserError, match="pypto.cast: mode must be a pypto.CastMode"):
        f(_data())


@pytest.mark.parametrize("run_mode", ["cpu", "interp"])
def test_fp32_to_bf16_round_is_ties_away_bit_for_bit(run_mode):
    """CAST_ROUND into bf16 (the pl language's default cast) has its own vector path: every class
    of fp32 bit pattern (ties both signs, near-ties, NaN, inf, subnormals, the largest finite)
    against the bit rule, in both run modes."""
    rng = np.random.default_rng(5)
    ties = (rng.integers(0, 2**16, 512, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    bits = np.concatenate([rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32), ties,
                           ties | 0x80000000, ties - 1, ties + 1,
                           np.array([0x7F800000, 0xFF800000, 0x7F7FFFFF, 0x7F7F8000, 0x00008000, 0x80008000,
                                     0x7FC00000, 0x7F800001, 0, 0x80000000, 0x00000001, 0x807FFFFF], np.uint32)])
    bits = bits[:bits.size - bits.size % 64]
    x = bits.view(np.float32).reshape(-1, 64)

    @pypto.jit
    def f(a: pypto.Tensor((x.shape[0], 64), F32)):
        return pypto.cast(a, BF16, pypto.CastMode.CAST_ROUND)

    pypto.set_runtime_options(run_mode=run_mode)
    try:
        got = np.asarray(f(x)).view(np.uint16)
    finally:
        pypto.reset_options()
    u = x.view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    want = np.where(nan, (u >> 16) | 0x40, (u + 0x8000) >> 16).astype(np.uint16)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]
