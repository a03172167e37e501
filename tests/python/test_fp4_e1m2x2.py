"""DT_FP4_E1M2X2: two E1M2 values per byte (low nibble first), a storage dtype like
DT_FP4_E2M1X2. The reference is PyPTO's cast golden, written here again from its definition:
the code of |x| is round-half-even(min(|x|, 1.75) * 4), the sign bit (8) is x < 0, NaN and the
infinities give the code 7 (with the infinity's sign); a code c reads (c & 7) / 4, negative
from 8 on."""

import numpy as np
import pytest
import torch

import pypto

TABLE = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75], np.float32)
VALUES = np.concatenate([TABLE, -TABLE])  # code 8 is -0


def _ref_codes(x: np.ndarray) -> np.ndarray:
    a = np.abs(x.astype(np.float64))
    code = np.where(np.isnan(a) | (a > 1.75), 7, np.round(np.minimum(a, 1.75) * 4)).astype(np.uint8)
    return code | np.where(x < 0, 8, 0).astype(np.uint8)


def _pack(codes: np.ndarray) -> np.ndarray:
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def _edge_inputs() -> np.ndarray:
    """Every value, each midpoint (a tie) and its float neighbours, beyond the largest, zeros,
    infinities, NaN, subnormals, random values."""
    mids = ((TABLE[1:] + TABLE[:-1]) / 2).astype(np.float32)
    pos = np.concatenate([TABLE, mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(2)),
                          np.array([1.875, 1.8750001, 2.0, 1e30, 3.4e38, np.inf, 1e-45, 1e-39, 0.1], np.float32)])
    rand = np.random.default_rng(3).uniform(-3, 3, 600).astype(np.float32)
    x = np.concatenate([pos, -pos, rand, np.array([0.0, -0.0, np.nan, -np.nan], np.float32)])
    return np.concatenate([x, np.zeros((-x.size) % 64, np.float32)]).reshape(-1, 64)


def test_cast_into_it_rounds_as_pyptos_golden_and_back_is_exact():
    x = _edge_inputs()

    @pypto.jit
    def f(a: pypto.Tensor([], pypto.DT_FP32), packed: pypto.Tensor([], pypto.DT_FP4_E1M2X2),
          back: pypto.Tensor([], pypto.DT_FP32)):
        p = pypto.cast(a, pypto.DT_FP4_E1M2X2)
        packed[:] = p
        back[:] = pypto.cast(p, pypto.DT_FP32)

    packed = np.zeros((x.shape[0], x.shape[1] // 2), np.uint8)
    back = np.zeros(x.shape, np.float32)
    f(x, packed, back)
    want = _ref_codes(x)
    bad = np.argwhere(packed != _pack(want))
    assert bad.size == 0, [(x[r, 2 * c:2 * c + 2], hex(packed[r, c])) for r, c in bad[:5]]
    np.testing.assert_array_equal(back, VALUES[want])
    assert np.array_equal(np.signbit(back), np.signbit(VALUES[want]))  # -0 where the code is 8


@pytest.mark.parametrize("out", [pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16])
def test_every_byte_decodes_exactly(out):
    every = np.arange(256, dtype=np.uint8).reshape(8, 32)

    @pypto.jit
    def decode(c: pypto.Tensor([], pypto.DT_FP4_E1M2X2), o: pypto.Tensor([], out)):
        o[:] = pypto.cast(c, out)

    tdt = {pypto.DT_FP32: torch.float32, pypto.DT_FP16: torch.float16, pypto.DT_BF16: torch.bfloat16}[out]
    o = torch.zeros(8, 64, dtype=tdt)
    decode(torch.from_numpy(every), o)
    lo, hi = every & 15, every >> 4
    want = np.stack([VALUES[lo], VALUES[hi]], -1).reshape(8, 64)
    np.testing.assert_array_equal(o.float().numpy(), want)


@pytest.mark.parametrize("src", [torch.float16, torch.bfloat16])
def test_cast_from_16_bit_floats_and_returned_bytes(src):
    x = torch.from_numpy(np.nan_to_num(_edge_inputs(), posinf=9.0, neginf=-9.0)).to(src)

    @pypto.jit
    def enc(a: pypto.Tensor()):
        return pypto.cast(a, pypto.DT_FP4_E1M2X2)

    got = enc(x)
    assert got.dtype == torch.uint8 and tuple(got.shape) == (x.shape[0], x.shape[1] // 2)
    np.testing.assert_array_equal(got.numpy(), _pack(_ref_codes(x.float().numpy())))


def test_the_logical_e1m2_parameter_reads_the_packed_dtype():
    codes = (np.arange(16 * 64) % 16).astype(np.uint8).reshape(16, 64)

    @pypto.jit
    def f(a: pypto.Tensor([16, 64], pypto.DT_FP4_E1M2)):
        return a * 2.0

    np.testing.assert_array_equal(f(_pack(codes)), VALUES[codes] * 2)


def test_refusals_and_size():
    assert pypto.bytes_of(pypto.DT_FP4_E1M2X2) == 1

    @pypto.jit
    def odd(a: pypto.Tensor((4, 7), pypto.DT_FP32)):
        return pypto.cast(a, pypto.DT_FP4_E1M2X2)

    with pytest.raises(pypto.UserError, match="packs two values per byte: the last dim"):
        odd(np.zeros((4, 7), np.float32))

    @pypto.jit
    def arith(a: pypto.Tensor((4, 8), pypto.DT_FP4_E1M2X2)):
        return a + a

    with pytest.raises(pypto.UserError, match="fp4e1m2x2|FP4E1M2X2|DT_FP4_E1M2X2"):
        arith(np.zeros((4, 8), np.uint8))


def test_scaled_mm_refuses_the_packed_e1m2_format():
    E8 = pypto.DT_FP8E8M0

    @pypto.jit
    def g(a: pypto.Tensor((16, 32), pypto.DT_FP4_E1M2X2), b: pypto.Tensor((64, 8), pypto.DT_FP8E4M3),
          sa: pypto.Tensor((16, 1, 2), E8), sb: pypto.Tensor((1, 8, 2), E8)):
        return pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)

    with pytest.raises(pypto.UserError, match="scaled_mm"):
        g(np.zeros((16, 32), np.uint8), np.zeros((64, 8), np.uint8), np.zeros((16, 1, 2), np.uint8),
          np.zeros((1, 8, 2), np.uint8))
