"""pypto.conv (1-D, 2-D, 3-D convolution) against torch.nn.functional.conv1d/2d/3d: strides,
dilations, asymmetric paddings, groups, bias, scale and ReLU, fp32 / fp16 / bf16, a dynamic batch,
NaN and inf in the input, both backends; the tile-shape configuration and the errors."""

import numpy as np
import pytest

import pypto
from pypto import pypto_impl
from _util import MODES, run_in

torch = pytest.importorskip("torch")
F = torch.nn.functional
TORCH = {pypto.DT_FP32: torch.float32, pypto.DT_FP16: torch.float16, pypto.DT_BF16: torch.bfloat16}


def _reference(x, w, b, strides, pads, dils, groups, scale=0.0, relu=False):
    """torch's convolution in float64 of the same (rounded) inputs; paddings as PyPTO's pairs."""
    nd = x.dim() - 2
    xp = F.pad(x.double(), [p for i in reversed(range(nd)) for p in (pads[2 * i], pads[2 * i + 1])])
    conv = [F.conv1d, F.conv2d, F.conv3d][nd - 1]
    r = conv(xp, w.double(), None if b is None else b.double(), stride=strides, dilation=dils, groups=groups)
    if scale:
        r = r * scale
    return F.relu(r) if relu else r


def _conv_fn(xs, ws, dt, strides, pads, dils, groups, bias, scale=0.0, relu=False, batch_dynamic=False):
    xshape = [pypto.DYNAMIC, *xs[1:]] if batch_dynamic else list(xs)

    @pypto.jit
    def f(x: pypto.Tensor(xshape, dt), w: pypto.Tensor(ws, dt), b: pypto.Tensor((ws[0],), dt)):
        ext = {}
        if bias:
            ext["bias_tensor"] = b
        if scale:
            ext["scale"] = scale
        if relu:
            ext["relu_type"] = pypto.ConvReLuType.RELU
        return pypto.conv(x, w, dt, strides, pads, dils, groups=groups, extend_params=ext)
    return f


CASES = [  # input, weight, strides, paddings, dilations, groups, bias, scale, relu
    ((2, 5, 33), (7, 5, 3), [1], [0, 0], [1], 1, False, 0.0, False),
    ((1, 16, 32), (16, 8, 3), [2], [1, 1], [2], 2, True, 0.0, False),  # PyPTO's conv1d test
    ((2, 3, 7, 9), (4, 3, 3, 3), [1, 1], [0, 0, 0, 0], [1, 1], 1, False, 0.0, False),
    ((2, 4, 10, 11), (6, 2, 3, 2), [2, 1], [1, 2, 0, 1], [1, 2], 2, True, 0.0, True),
    ((1, 32, 8, 16), (32, 32, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, True, 0.5, True),  # PyPTO's doc example
    ((3, 6, 13, 12), (6, 1, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 6, False, 0.0, False),  # depthwise
    ((1, 16, 5, 5, 32), (16, 8, 3, 3, 3), [2, 2, 2], [1] * 6, [2, 2, 2], 2, True, 0.0, False),  # PyPTO's conv3d
    # stride 1 (shifted windows of the padded input) with padding and dilation
    ((2, 4, 10, 11), (6, 2, 3, 2), [1, 1], [1, 2, 0, 1], [2, 1], 2, True, 0.0, True),
    ((1, 4, 5, 6, 7), (4, 4, 3, 2, 3), [1, 1, 1], [1, 0, 2, 1, 0, 2], [1, 2, 1], 1, False, 0.0, False),
    ((3, 3, 20), (5, 3, 4), [1], [3, 1], [2], 1, True, 0.0, False),
]


@pytest.mark.parametrize("dt", [pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(CASES)])
def test_conv_matches_torch(case, dt):
    xs, ws, strides, pads, dils, groups, bias, scale, relu = case
    g = torch.Generator().manual_seed(hash(str(case)) % 2 ** 31)
    x = torch.randn(xs, generator=g).to(TORCH[dt])
    w = torch.randn(ws, generator=g).to(TORCH[dt])
    b = torch.randn(ws[0], generator=g).to(TORCH[dt])
    got = _conv_fn(xs, ws, dt, strides, pads, dils, groups, bias, scale, relu)(x, w, b)
    ref = _reference(x, w, b if bias else None, strides, pads, dils, groups, scale, relu)
    assert got.dtype == TORCH[dt] and tuple(got.shape) == tuple(ref.shape)
    if dt == pypto.DT_FP32:  # fp32 accumulation in another order: a few ulp of the terms' scale
        np.testing.assert_allclose(got.double().numpy(), ref.numpy(), rtol=1e-5, atol=2e-5)
    else:  # accumulated in fp32, rounded once: within one ulp of the exact result
        exact = ref.to(TORCH[dt]).double()
        ulp = (exact.abs() * (2 ** -10 if dt == pypto.DT_FP16 else 2 ** -7)).clamp_min(1e-3)
        assert ((got.double() - exact).abs() <= ulp * 1.01).all()


@pytest.mark.parametrize("mode", MODES)
def test_dynamic_batch_and_both_backends(mode):
    xs, ws = (3, 4, 9, 10), (8, 4, 3, 3)
    f = _conv_fn(xs, ws, pypto.DT_FP32, [2, 2], [1, 1, 1, 1], [2, 1], 1, True, batch_dynamic=True)
    w = torch.randn(ws)
    b = torch.randn(ws[0])
    for batch in (3, 1, 5):
        x = torch.randn(batch, *xs[1:])
        got = run_in(mode, f, x, w, b)
        np.testing.assert_allclose(got.numpy(), _reference(x, w, b, [2, 2], [1, 1, 1, 1], [2, 1], 1).numpy(),
                                   rtol=1e-5, atol=1e-5)


def test_nan_and_inf_reach_exactly_the_outputs_that_read_them():
    xs, ws = (1, 2, 8, 8), (3, 2, 3, 3)
    x = torch.randn(xs)
    x[0, 0, 0, 0] = float("nan")  # read only by the top-left outputs (and never through the padding)
    x[0, 1, 7, 7] = float("inf")
    w = torch.rand(ws) + 0.1  # positive: inf stays inf
    got = _conv_fn(xs, ws, pypto.DT_FP32, [1, 1], [1, 1, 1, 1], [1, 1], 1, False)(x, w, torch.zeros(3))
    ref = _reference(x, w, None, [1, 1], [1, 1, 1, 1], [1, 1], 1).float()
    assert torch.equal(torch.isnan(got), torch.isnan(ref)) and torch.isnan(got).sum() == 3 * 4
    assert torch.equal(torch.isposinf(got), torch.isposinf(ref)) and torch.isposinf(got).sum() == 3 * 4
    finite = torch.isfinite(ref)
    np.testing.assert_allclose(got[finite].numpy(), ref[finite].numpy(), rtol=1e-5, atol=1e-5)


def test_conv_beside_the_users_tile_shapes():
    """A kernel that sets vec and conv tile shapes (PyPTO's conv tests do) and goes on with
    other ops after the conv: the conv's steps take their own tiles, the user's come back."""
    l1 = pypto_impl.TileL1Info(tileHin=1, tileHout=1, tileWin=32, tileWout=16, tileCinFmap=16, tileCinWeight=16,
                               tileN=16, tileBatch=1)
    l0 = pypto_impl.TileL0Info(tileH=1, tileW=16, tileK=16, tileN=16)

    @pypto.jit
    def f(x: pypto.Tensor((1, 16, 32), pypto.DT_FP16), w: pypto.Tensor((16, 8, 3), pypto.DT_FP16),
          out: pypto.Tensor((1, 16, 15), pypto.DT_FP16)):
        pypto.set_conv_tile_shapes(l1, l0)
        pypto.set_vec_tile_shapes(16, 16, 16)
        y = pypto.conv(x, w, pypto.DT_FP16, [2], [1, 1], [2], groups=2)
        assert pypto.get_vec_tile_shapes() == [16, 16, 16]
        out.move(y * 2.0)

    x, w = torch.randn(1, 16, 32).half(), torch.randn(16, 8, 3).half()
    out = torch.zeros(1, 16, 15, dtype=torch.float16)
    f(x, w, out)
    ref = (_reference(x, w, None, [2], [1, 1], [2], 2).half() * 2).double()
    assert ((out.double() - ref).abs() <= ref.abs() * 2 ** -9 + 1e-3).all()
    assert pypto.get_conv_tile_shapes() == (l1, l0, True)
    assert repr(l1) == "TileL1Info([1, 1, 32, 16, 16, 16, 16, 1])"
    assert pypto_impl.TileL0Info(1, 16, 16, 16) == l0


def test_errors_name_the_op_and_shapes():
    def build(xs, ws, dt=pypto.DT_FP32, **kw):
        @pypto.jit
        def f(x: pypto.Tensor(xs, dt), w: pypto.Tensor(ws, dt)):
            args = dict(strides=[1, 1], paddings=[0, 0, 0, 0], dilations=[1, 1])
            args.update(kw)
            return pypto.conv(x, w, dt, args.pop("strides"), args.pop("paddings"), args.pop("dilations"), **args)
        npdt = np.float32 if dt == pypto.DT_FP32 else np.int32
        return lambda: f(np.zeros(xs, npdt), np.zeros(ws, npdt))

    cases = [
        (build((1, 4, 8, 8), (4, 4, 3)), "must both be 3-D"),
        (build((1, 4, 8, 8), (4, 3, 3, 3)), "groups=1"),
        (build((1, 4, 8, 8), (4, 2, 3, 3), groups=3), "groups=3"),
        (build((1, 4, 8, 8), (4, 4, 3, 3), strides=[1]), "strides must be 2 ints"),
        (build((1, 4, 8, 8), (4, 4, 3, 3), paddings=[0, 0]), "paddings must be 4 ints"),
        (build((1, 4, 8, 8), (4, 4, 3, 3), transposed=True), "transposed"),
        (build((1, 4, 2, 2), (4, 4, 3, 3)), "no output position"),
        (build((1, 4, 8, 8), (4, 4, 3, 3), extend_params={"scale_tensor": None, "bogus": 1}), "bogus"),
        (build((1, 4, 8, 8), (4, 4, 3, 3), pypto.DT_INT32), "DT_FP32, DT_FP16 or DT_BF16"),
    ]
    for call, match in cases:
        with pytest.raises(pypto.UserError, match=match) as e:
            call()
        assert "test_conv.py" in str(e.value)
    with pytest.raises(pypto.UserError, match="tileBatch must be 1"):
        pypto.set_conv_tile_shapes(pypto_impl.TileL1Info(1, 1, 1, 1, 1, 1, 1, 2))
    with pytest.raises(pypto.UserError, match="unknown field 'tileQ'"):
        pypto_impl.TileL0Info(tileQ=1)


def test_a_loop_over_output_rows_with_a_partial_last_tile():
    """PyPTO's dynamic-Hout pattern: a view of tile_hout + 2 input rows with a run-time valid
    extent per iteration; the last tile is partial, and only its valid output rows are written."""
    @pypto.jit
    def f(a: pypto.Tensor([1, 4, pypto.DYNAMIC, 12], pypto.DT_FP32), b: pypto.Tensor([6, 4, 3, 3], pypto.DT_FP32),
          out: pypto.Tensor([1, 6, pypto.DYNAMIC, 10], pypto.DT_FP32)):
        hin, ho = a.shape[2], out.shape[2]
        for i in pypto.loop(0, (ho + 7) // 8, 1, name="LOOP_hout"):
            cur = (hin - i * 8).min(10)
            v = pypto.view(a, [1, 4, 10, 12], [0, 0, i * 8, 0], valid_shape=[1, 4, cur, 12])
            r = pypto.conv(v, b, pypto.DT_FP32, [1, 1], [0, 0, 0, 0], [1, 1],
                           extend_params={"relu_type": pypto_impl.ConvReLuType.RELU})
            pypto.assemble(r, [0, 0, i * 8, 0], out)

    w = torch.randn(6, 4, 3, 3)
    for hin in (31, 18, 3):  # last tiles of 5, 8 and 1 output rows
        a = torch.randn(1, 4, hin, 12)
        out = torch.full((1, 6, hin - 2, 10), -7.0)
        f(a, w, out)
        ref = _reference(a, w, None, [1, 1], [0, 0, 0, 0], [1, 1], 1, relu=True)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_output_channels_of_a_loop_tail_over_a_dynamic_weight():
    """PyPTO's st test_conv1d_dynamic_cout: a loop over blocks of 32 output channels of a weight
    whose Cout is DYNAMIC; the block is the weight's slice (a run-time extent)."""
    F32 = pypto.DT_FP32

    @pypto.jit
    def f(x: pypto.Tensor([1, 16, 64], F32), w: pypto.Tensor([pypto.DYNAMIC, 16, 3], F32),
          out: pypto.Tensor([1, pypto.DYNAMIC, 64], F32)):
        pypto.set_vec_tile_shapes(1, 32, 64)
        for i in pypto.loop(0, (w.shape[0] + 31) // 32, 1, name="LOOP_cout"):
            c = pypto.conv(x, w[i * 32:i * 32 + 32, 0:16, 0:3], F32, [1], [1, 1], [1])
            pypto.assemble(c, [0, i * 32, 0], out)

    r = np.random.default_rng(3)
    x = r.standard_normal((1, 16, 64)).astype(np.float32)
    w = r.standard_normal((40, 16, 3)).astype(np.float32)
    out = np.zeros((1, 40, 64), np.float32)
    f(x, w, out)
    want = _reference(torch.from_numpy(x), torch.from_numpy(w), None, [1], [1, 1], [1], 1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
