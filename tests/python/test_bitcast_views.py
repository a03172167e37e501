"""pypto.view(x, dtype=...): x's bytes read as another dtype, the last dim holding as many bytes
(PyPTO's view with dtype, which sparse attention uses to read fp32 scales and bf16 rope values
packed into an int8 cache)."""

import numpy as np
import pytest
import torch

import pypto
from _util import MODES, rng, run_in

I8, F32, BF16, I32 = pypto.DT_INT8, pypto.DT_FP32, pypto.DT_BF16, pypto.DT_INT32
DYN = pypto.DYNAMIC


@pytest.mark.parametrize("mode", MODES)
def test_packed_cache_columns_read_as_fp32_and_bf16(mode):
    """A [tokens, 656] int8 cache: 512 int8 values, 64 bf16 (128 bytes), 4 fp32 (16 bytes)."""
    @pypto.jit
    def f(cache: pypto.Tensor([DYN, 656], I8), scales: pypto.Tensor([DYN, 4], F32),
          rope: pypto.Tensor([DYN, 64], BF16)):
        pypto.set_vec_tile_shapes(8, 64)
        scales[:] = pypto.view(cache[:, 640:656], dtype=F32)
        rope[:] = pypto.view(cache[:, 512:640], dtype=BF16)

    n = 37
    g = torch.Generator().manual_seed(1)
    sc = torch.rand(n, 4, generator=g) * 3
    sc[0, 0], sc[1, 1], sc[2, 2] = float("nan"), float("-inf"), 1e-42  # bits move as they are
    ro = torch.randn(n, 64, generator=g).to(torch.bfloat16)
    cache = torch.randint(-128, 128, (n, 656), generator=g, dtype=torch.int8)
    cache[:, 512:640] = ro.view(torch.int8)
    cache[:, 640:656] = sc.view(torch.int8)
    scales, rope = torch.zeros(n, 4), torch.zeros(n, 64, dtype=torch.bfloat16)
    run_in(mode, f, cache, scales, rope)
    assert torch.equal(scales.view(torch.int32), sc.view(torch.int32))
    assert torch.equal(rope.view(torch.int16), ro.view(torch.int16))


@pytest.mark.parametrize("mode", MODES)
def test_a_computed_value_and_a_whole_parameter_reinterpreted(mode):
    @pypto.jit
    def f(x: pypto.Tensor((6, 8), F32), b: pypto.Tensor((6, 32), I8)):
        pypto.set_vec_tile_shapes(6, 8)
        bits = pypto.view(x * 2.0, dtype=I32)  # a result kept in memory and read as int32
        back = pypto.view(b, dtype=F32)        # a parameter, whole: no copy
        return bits + 0, back + 1.0

    x = rng(2).standard_normal((6, 8)).astype(np.float32)
    b = rng(3).integers(-128, 128, (6, 32)).astype(np.int8)
    b.view(np.float32)[np.isnan(b.view(np.float32))] = 0  # NaN + 1 keeps a payload torch may not
    bits, back = run_in(mode, f, x, b)
    np.testing.assert_array_equal(bits, (x * 2).view(np.int32))
    np.testing.assert_array_equal(back, b.view(np.float32) + np.float32(1))


def test_bad_reinterpretations_are_errors():
    @pypto.jit
    def odd(x: pypto.Tensor((4, 6), I8)):
        return pypto.view(x, dtype=F32) + 0.0

    with pytest.raises(pypto.UserError, match=r"the last dim holds 6 bytes, not a whole number of 4-byte fp32"):
        odd(np.zeros((4, 6), np.int8))

    @pypto.jit
    def windowed(x: pypto.Tensor((4, 8), I8)):
        return pypto.view(x, [4, 4], [0, 4], dtype=F32) + 0.0

    with pytest.raises(pypto.UserError, match=r"take the window first, then view it with dtype= alone"):
        windowed(np.zeros((4, 8), np.int8))


@pytest.mark.parametrize("mode", MODES)
def test_pack_and_unpack_follow_pypto_docs(mode):
    """pypto.pack: the bytes of a tensor, flattened, as uint8; pypto.unpack: back (PyPTO's example:
    int32 0x03040506 packs to 6 5 4 3)."""
    @pypto.jit
    def f(x: pypto.Tensor([DYN, 2], I32), h: pypto.Tensor((3, 4), BF16)):
        pypto.set_vec_tile_shapes(4, 16)
        b = pypto.pack(x)
        pypto.set_vec_tile_shapes(64)
        return b + 0, pypto.unpack(b, I32) + 0, pypto.unpack(pypto.pack(h), pypto.DT_INT16) + 0

    x = np.array([[0x03040506, 0x01050608], [-1, 7]], np.int32)
    h = torch.randn(3, 4).to(torch.bfloat16)
    b, back, bits = (np.asarray(t) for t in run_in(mode, f, x, h))
    assert b.dtype == np.uint8
    np.testing.assert_array_equal(b[:8], [6, 5, 4, 3, 8, 6, 5, 1])
    np.testing.assert_array_equal(b, x.reshape(-1).view(np.uint8))
    np.testing.assert_array_equal(back, x.reshape(-1))
    np.testing.assert_array_equal(bits, h.view(torch.int16).reshape(-1).numpy())


def test_unpack_needs_a_1d_uint8_tensor():
    @pypto.jit
    def f(x: pypto.Tensor((2, 8), I8)):
        return pypto.unpack(x, I32) + 0

    with pytest.raises(pypto.UserError, match=r"pypto.unpack: the input must be a 1-D DT_UINT8 tensor"):
        f(np.zeros((2, 8), np.int8))
