"""pypto.uniform / pypto.normal: PyPTO's counter-based Philox-4x32-10 numbers, bit for bit (its
documented example), independent of the tiling and the backend."""

import numpy as np
import pytest
import torch

import pypto
from _util import MODES, run_in

F32, F16, BF16 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16
M32 = 0xFFFFFFFF


def philox_words(n, key, offset):
    """An independent Philox-4x32-10 (Salmon et al. 2011), word g of the flat stream."""
    words = []
    block = 0
    while len(words) < n:
        c = [block & M32, block >> 32, offset & M32, offset >> 32]
        k0, k1 = key & M32, key >> 32
        for _ in range(10):
            p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
            c = [(p1 >> 32) ^ c[1] ^ k0, p1 & M32, (p0 >> 32) ^ c[3] ^ k1, p0 & M32]
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        words += c
        block += 1
    return np.array(words[:n], np.uint64)


def reference(n, key, offset, dtype):
    w = philox_words(n, key, offset)
    bits = {"fp32": 23, "fp16": 10, "bf16": 7}[dtype]
    return (w & ((1 << bits) - 1)).astype(np.float64) / (1 << bits)


DOC_UNIFORM = [[0.1689806, 0.9725481, 0.90036285, 0.16582811], [0.1454581, 0.48029935, 0.02495587, 0.99239147],
               [0.02835405, 0.10649502, 0.45283175, 0.87260246], [0.6877538, 0.24809706, 0.95886254, 0.24039495]]
DOC_NORMAL = [[-0.32364845, 1.8577391, 0.39556974, 0.2311697], [0.24243996, -1.9485782, -0.12983137, 2.7137496],
              [1.6558666, 2.0938187, -0.90338254, 0.8765667], [0.86518306, 0.01034508, 0.2893259, 0.01748212]]


@pytest.mark.parametrize("mode", MODES)
def test_pypto_documented_examples(mode):
    @pypto.jit
    def f(u: pypto.Tensor((4, 4), F32), z: pypto.Tensor((4, 4), F32)):
        pypto.set_vec_tile_shapes(4, 4)
        u[:] = pypto.uniform([4, 4], [1234], [0, 1], [1], F32)
        z[:] = pypto.normal([4, 4], [1234], [0, 1], [3], F32)

    u, z = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    run_in(mode, f, u, z)
    np.testing.assert_allclose(u, DOC_UNIFORM, rtol=1e-7, atol=0)  # the docs print 8 digits
    np.testing.assert_array_equal(u.reshape(-1), reference(16, 1234, 1, "fp32").astype(np.float32))
    # Box-Muller through sin / cos / log within 2 ulp (docs/numerics.md): a few ulp from the NPU's
    # numbers, more where cos(2 pi u2) nearly cancels (0.01034508).
    np.testing.assert_allclose(z, np.float32(DOC_NORMAL), rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_uniform_bits_do_not_depend_on_the_tiling(dtype, mode):
    pdt, tdt = {"fp32": (F32, torch.float32), "fp16": (F16, torch.float16), "bf16": (BF16, torch.bfloat16)}[dtype]
    shape, key, off = [7, 3, 11], 2**64 - 5, 2**40 + 3  # 231 elements: blocks split across tiles

    @pypto.jit
    def f(a: pypto.Tensor(shape, pdt), b: pypto.Tensor(shape, pdt), c: pypto.Tensor((231,), pdt)):
        pypto.set_vec_tile_shapes(3, 2, 5)
        a[:] = pypto.uniform(shape, [key], [99, off], [1], pdt)
        pypto.set_vec_tile_shapes(1, 1, 64)
        b[:] = pypto.uniform(shape, [key], [0, off], [1], pdt)  # counter[0] is not used (PyPTO)
        pypto.set_vec_tile_shapes(13)
        c[:] = pypto.uniform([231], [key], [0, off], [1], pdt)

    a, b, c = torch.zeros(shape, dtype=tdt), torch.zeros(shape, dtype=tdt), torch.zeros(231, dtype=tdt)
    run_in(mode, f, a, b, c)
    want = torch.from_numpy(reference(231, key, off, dtype)).to(tdt)  # exact in every dtype
    assert torch.equal(a.reshape(-1), want) and torch.equal(b.reshape(-1), want) and torch.equal(c, want)
    assert float(want.min()) >= 0 and float(want.max()) < 1


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_normal_is_standard_normal(dtype):
    pdt = {"fp32": F32, "bf16": BF16}[dtype]
    n = 200_001  # odd: the last pair's second value is dropped

    @pypto.jit
    def f(z: pypto.Tensor((n,), pdt)):
        pypto.set_vec_tile_shapes(4096)
        z[:] = pypto.normal([n], [42], [0, 7], [1], pdt)

    z = torch.zeros(n, dtype={"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
    f(z)
    x = z.double().numpy()
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    assert abs((np.abs(x) < 1).mean() - 0.6827) < 0.005
    w = reference(n + 1, 42, 7, "fp32").astype(np.float32)
    u1, u2 = np.maximum(w[0::2], np.float32(1e-7)), w[1::2]
    r = np.sqrt(-2 * np.log(u1.astype(np.float64)))
    box = np.stack([np.sin(2 * np.pi * u2) * r, np.cos(2 * np.pi * u2) * r], 1).reshape(-1)[:n]
    tol = 1e-4 if dtype == "fp32" else 1e-2
    assert np.mean(np.abs(x - box) <= tol * np.maximum(1, np.abs(box))) > 0.999


def test_bad_arguments_are_errors():
    def trace(**kw):
        args = dict(shape=[4], key=[1], counter=[0, 0], alg=[1], dtype=F32)
        args.update(kw)

        @pypto.jit
        def f(z: pypto.Tensor((4,), F32)):
            z[:] = pypto.uniform(args["shape"], args["key"], args["counter"], args["alg"], args["dtype"])

        f(np.zeros(4, np.float32))

    with pytest.raises(pypto.UserError, match=r"alg \[2\] is not supported"):
        trace(alg=[2])
    with pytest.raises(pypto.UserError, match=r"key must be a list of 1 int"):
        trace(key=[1, 2])
    with pytest.raises(pypto.UserError, match=r"dtype .* is not supported: DT_FP32, DT_FP16 or DT_BF16"):
        trace(dtype=pypto.DT_INT32)
    with pytest.raises(pypto.UserError, match=r"key\[0\] must be an int in \[0, 2\*\*64\)"):
        trace(key=[-1])
