"""DT_HF8 (HiFloat8): bytes in and out, pypto.cast both ways, matmul operands, and the numpy
codec (pypto.hifloat8) and torch_npu stand-ins that goldens use.

The reference here is written from the format's definition (a sign, the dot field, exponent,
mantissa, read from the bit string as PyPTO's golden does) and rounds by brute force over all
finite values (nearest, ties away from zero, saturating), so it shares no code with the kernel's
bit steps (ops/mx.py) or the vectorized codec (pypto/hifloat8.py)."""

import math

import numpy as np
import pytest
import torch

import pypto
from pypto.hifloat8 import VALUES, from_hifloat8, to_hifloat8


def _ref_value(code: int) -> float:
    bits = format(code, "08b")
    sign = -1.0 if bits[0] == "1" else 1.0
    m = bits[5:]
    if bits[1:3] != "00":
        dot = bits[1:3]
    elif bits[3] == "1":
        dot = bits[1:4]
    else:
        dot = bits[1:5]
    if dot == "0000":
        if m == "000":
            return math.nan if sign < 0 else 0.0
        return sign * 2.0 ** (int(m, 2) - 23)
    if dot == "0001":
        return sign * (1 + int(m, 2) / 8)
    if dot == "001":
        return sign * (1 + int(m, 2) / 8) * 2.0 ** (-1 if bits[4] == "1" else 1)
    esign = -1 if bits[3] == "1" else 1
    if dot == "01":
        return sign * (1 + int(m, 2) / 8) * 2.0 ** (esign * (2 + int(bits[4])))
    if dot == "10":
        return sign * (1 + int(bits[6:], 2) / 4) * 2.0 ** (esign * (4 + int(bits[4:6], 2)))
    if bits[3:5] == "01" and m == "111":
        return sign * math.inf
    return sign * (1 + int(bits[7]) / 2) * 2.0 ** (esign * (8 + int(bits[4:7], 2)))


_REF = [_ref_value(c) for c in range(256)]
_FINITE = [(v, c) for c, v in enumerate(_REF) if math.isfinite(v)]
_MAX = max(v for v, _ in _FINITE)


def _ref_encode(x: float) -> int:
    if math.isnan(x):
        return 0x80
    v = min(max(x, -_MAX), _MAX)
    best = min(abs(t - v) for t, _ in _FINITE)
    return max(((abs(t), c) for t, c in _FINITE if abs(t - v) == best))[1]  # a tie: the larger magnitude


def _edge_inputs() -> np.ndarray:
    """Every value, the midpoints between neighbours (ties) and their float32 neighbours, the
    ends (2^-23, 2^-22, 2^15, beyond), zeros, infinities, NaN, subnormals, random values."""
    vals = np.unique(np.array([v for v, _ in _FINITE if v >= 0], dtype=np.float64))
    mids = ((vals[1:] + vals[:-1]) / 2).astype(np.float32)
    pos = np.concatenate([vals.astype(np.float32), mids, np.nextafter(mids, np.float32(0)),
                          np.nextafter(mids, np.float32(np.inf)),
                          np.array([2.0 ** -23, 2.0 ** -24, 1.5 * 2 ** -23, 2.0 ** -22 * 0.75, 1e-45, 1e-39,
                                    24576, 28672, 28671.998, 32768, 40000, 1e30, 3.4e38, np.inf], np.float32)])
    rng = np.random.default_rng(7)
    rand = np.concatenate([rng.standard_normal(700) * 10.0 ** rng.integers(-6, 5, 700)]).astype(np.float32)
    x = np.concatenate([pos, -pos, rand, np.array([0.0, -0.0, np.nan, -np.nan], np.float32)])
    return x.astype(np.float32)


def test_the_value_table_follows_the_format():
    for c in range(256):
        want, got = _REF[c], float(VALUES[c])
        assert (math.isnan(want) and math.isnan(got)) or want == got, hex(c)
    assert _MAX == 32768.0 and VALUES[0x6F] == np.inf and VALUES[0xEF] == -np.inf
    assert [c for c in range(256) if math.isnan(_REF[c])] == [0x80]


def test_the_numpy_codec_rounds_to_nearest_ties_away():
    x = _edge_inputs()
    got = to_hifloat8(x)
    want = np.array([_ref_encode(float(v)) for v in x], dtype=np.uint8)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    np.testing.assert_array_equal(from_hifloat8(np.arange(256, dtype=np.uint8)), VALUES)


def _pad_rows(x: np.ndarray, width: int = 48) -> np.ndarray:
    flat = np.concatenate([x, np.zeros((-x.size) % width, x.dtype)])
    return flat.reshape(-1, width)


@pypto.jit
def _encode_decode(a: pypto.Tensor([], pypto.DT_FP32), codes: pypto.Tensor([], pypto.DT_HF8),
                   back: pypto.Tensor([], pypto.DT_FP32)):
    h = pypto.cast(a, pypto.DT_HF8)
    codes[:] = h
    back[:] = pypto.cast(h, pypto.DT_FP32)


def test_cast_to_hf8_in_a_program_gives_the_reference_bytes():
    x = _pad_rows(_edge_inputs())
    codes = np.zeros(x.shape, np.uint8)
    back = np.zeros(x.shape, np.float32)
    _encode_decode(x, codes, back)
    want = np.array([_ref_encode(float(v)) for v in x.ravel()], dtype=np.uint8).reshape(x.shape)
    bad = np.argwhere(codes != want)
    assert bad.size == 0, [(float(x[tuple(i)]), hex(codes[tuple(i)]), hex(want[tuple(i)])) for i in bad[:5]]
    np.testing.assert_array_equal(back, VALUES[want])  # NaN where NaN


@pytest.mark.parametrize("out", [pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16])
def test_every_code_decodes_exactly(out):
    codes = np.arange(256, dtype=np.uint8).reshape(8, 32)

    @pypto.jit
    def decode(c: pypto.Tensor([], pypto.DT_HF8), o: pypto.Tensor([], out)):
        o[:] = pypto.cast(c, out)

    tdt = {pypto.DT_FP32: torch.float32, pypto.DT_FP16: torch.float16, pypto.DT_BF16: torch.bfloat16}[out]
    o = torch.zeros(8, 32, dtype=tdt)
    decode(torch.from_numpy(codes), o)
    np.testing.assert_array_equal(o.float().numpy(), VALUES.reshape(8, 32))  # every value is exact in 16 bits


@pytest.mark.parametrize("src", [torch.float16, torch.bfloat16])
def test_cast_from_16_bit_floats(src):
    x = torch.from_numpy(_pad_rows(_edge_inputs()[np.isfinite(_edge_inputs())])).to(src)

    @pypto.jit
    def enc(a: pypto.Tensor(), o: pypto.Tensor([], pypto.DT_HF8)):
        o[:] = pypto.cast(a, pypto.DT_HF8)

    o = torch.zeros(x.shape, dtype=torch.uint8)
    enc(x, o)
    want = np.array([_ref_encode(float(v)) for v in x.float().numpy().ravel()], np.uint8).reshape(x.shape)
    np.testing.assert_array_equal(o.numpy(), want)


def test_a_returned_hf8_tensor_is_uint8_bytes():
    @pypto.jit
    def quant(a: pypto.Tensor([16, 32], pypto.DT_FP32)):
        return pypto.cast(a, pypto.DT_HF8)

    x = torch.randn(16, 32) * 50
    out = quant(x)
    assert out.dtype == torch.uint8
    np.testing.assert_array_equal(out.numpy(), to_hifloat8(x.numpy()))


@pytest.mark.parametrize("b_trans", [False, True])
def test_matmul_of_hf8_operands_multiplies_their_values(b_trans):
    rng = np.random.default_rng(3)
    a = to_hifloat8(rng.standard_normal((67, 129)) * 8)
    b = to_hifloat8(rng.standard_normal((45, 129) if b_trans else (129, 45)))

    @pypto.jit
    def mm(x: pypto.Tensor([], pypto.DT_HF8), y: pypto.Tensor([], pypto.DT_HF8), o: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
        o[:] = pypto.matmul(x, y, pypto.DT_FP32, b_trans=b_trans)

    o = np.zeros((67, 45), np.float32)
    mm(a, b, o)
    bv = VALUES[b].astype(np.float64)
    ref = VALUES[a].astype(np.float64) @ (bv.T if b_trans else bv)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max())


def test_matmul_refuses_mixed_8_bit_operands():
    @pypto.jit
    def mm(x: pypto.Tensor([], pypto.DT_HF8), y: pypto.Tensor([], pypto.DT_FP8E4M3),
           o: pypto.Tensor([], pypto.DT_FP32)):
        o[:] = pypto.matmul(x, y, pypto.DT_FP32)

    with pytest.raises(pypto.UserError, match="8-bit float operands must have one dtype"):
        mm(np.zeros((4, 8), np.uint8), np.zeros((8, 4), np.uint8), np.zeros((4, 4), np.float32))


def test_hf8_refuses_arithmetic_without_a_cast():
    @pypto.jit
    def add(x: pypto.Tensor([], pypto.DT_HF8), o: pypto.Tensor([], pypto.DT_HF8)):
        o[:] = x + x

    with pytest.raises(pypto.UserError, match="storage format"):
        add(np.zeros((4, 8), np.uint8), np.zeros((4, 8), np.uint8))


def test_npu_reference_hifloat8_kernels():
    from pypto import npu_reference as ref
    x = torch.randn(6, 64) * 3
    codes = ref.npu_dtype_cast(x, ref.hifloat8)
    assert codes.dtype == torch.uint8
    np.testing.assert_array_equal(codes.numpy(), to_hifloat8(x.numpy()))
    back = ref.npu_dtype_cast(codes, torch.float32, input_dtype=ref.hifloat8)
    np.testing.assert_array_equal(back.numpy(), VALUES[codes.numpy()])
    y, scale = ref.npu_dynamic_quant(x, dst_type=ref.hifloat8)
    np.testing.assert_allclose(scale.numpy(), x.abs().amax(-1).numpy() / 32768.0, rtol=1e-7)
    assert np.abs(VALUES[y.numpy()]).max(axis=-1).tolist() == [32768.0] * 6  # each row's largest maps to 2^15
    w = torch.from_numpy(to_hifloat8(np.random.default_rng(0).standard_normal((64, 8))))
    out = ref.npu_quant_matmul(codes, w, torch.ones(8), x1_dtype=ref.hifloat8, x2_dtype=ref.hifloat8,
                               output_dtype=torch.float32)
    np.testing.assert_allclose(out.numpy(), VALUES[codes.numpy()].astype(np.float64) @ VALUES[w.numpy()], rtol=1e-6)
