"""torch tensors in, torch tensors out; differential checks against torch (skipped without torch)."""

import pytest

import pypto

torch = pytest.importorskip("torch")

F32 = pypto.DT_FP32


@pypto.jit
def _softmax(x: pypto.Tensor((pypto.DYNAMIC, 3, 37), F32)) -> pypto.Tensor((pypto.DYNAMIC, 3, 37), F32):
    b = x.shape[0]
    out = pypto.tensor((b, 3, 37), F32)
    pypto.set_vec_tile_shapes(1, 2, 16)
    for i in pypto.loop(0, b, 1, name="L", idx_name="i"):
        v = x[i:i + 1, :, :]
        e = pypto.exp(v - pypto.amax(v, dim=-1, keepdim=True))
        out[i:i + 1, :, :] = e / pypto.sum(e, dim=-1, keepdim=True)
    return out


@pytest.mark.parametrize("b", [1, 3, 7])
def test_softmax_against_torch(b):
    g = torch.Generator().manual_seed(b)
    x = torch.randn(b, 3, 37, generator=g, dtype=torch.float32)
    y = _softmax(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    torch.testing.assert_close(y, torch.softmax(x.double(), -1).float(), rtol=1e-5, atol=1e-6)


def test_inplace_torch_output():
    @pypto.jit
    def f(x: pypto.Tensor((5, 9), F32), o: pypto.Tensor((5, 9), F32)):
        pypto.set_vec_tile_shapes(2, 4)
        o[:] = pypto.relu(x) * 2.0

    x = torch.randn(5, 9)
    o = torch.zeros(5, 9)
    f(x, o)
    torch.testing.assert_close(o, torch.relu(x) * 2.0)


def test_rmsnorm_against_torch():
    @pypto.jit
    def f(x: pypto.Tensor((13, 70), F32), g: pypto.Tensor((1, 70), F32)) -> pypto.Tensor((13, 70), F32):
        pypto.set_vec_tile_shapes(4, 32)
        out = pypto.tensor((13, 70), F32)
        out[:] = x * pypto.rsqrt(pypto.sum(x * x, dim=-1, keepdim=True) / 70.0 + 1e-6) * g
        return out

    x, g = torch.randn(13, 70), torch.randn(1, 70)
    ref = torch.nn.functional.rms_norm(x.double(), (70,), g.double().reshape(70), eps=1e-6).float()
    torch.testing.assert_close(f(x, g), ref, rtol=1e-5, atol=1e-6)
