"""DT_FP4_E2M1X2 (two E2M1 values per byte, the even index in the low nibble; torch's
float4_e2m1fn_x2): every byte decodes, pypto.cast encodes to nearest even with saturation at 6
(checked against a nearest-value search, not the bit trick the implementation uses), quant_mx
to it (ROUND_DOWN / ROUND_UP, axis -1 / -2, fp16 / bf16 inputs, inf / NaN / zero groups) against
a reference written from the MX rules, and scaled_mm of FP4 operands against float64."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

torch = pytest.importorskip("torch")
X2 = pypto.DT_FP4_E2M1X2
MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def _decode(bytes_):
    """float64 values [..., 2n] of packed bytes [..., n]."""
    b = np.asarray(bytes_, np.uint8)
    codes = np.stack([b & 15, b >> 4], -1).reshape(b.shape[:-1] + (2 * b.shape[-1],))
    v = MAGNITUDES[codes & 7]
    return np.where(codes >= 8, -v, v)


def _encode(x):
    """E2M1 codes of float values: the nearest magnitude, ties to the even code, saturating at 6;
    NaN is the code 7 without a sign."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    dist = np.abs(a[..., None] - MAGNITUDES)
    best = dist.min(-1, keepdims=True)
    ties = dist == best
    code = np.where(ties.sum(-1) > 1, np.argmax(ties & (np.arange(8) % 2 == 0), -1), np.argmin(dist, -1))
    code = np.where(np.isnan(x), 7, np.where(a >= 6, 7, code))
    sign = np.where(np.signbit(x) & ~np.isnan(x), 8, 0)
    return (code | sign).astype(np.uint8)


def _pack(codes):
    c = np.asarray(codes, np.uint8)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


@pytest.mark.parametrize("mode", MODES)
def test_every_byte_decodes(mode):
    @pypto.jit
    def f(x: pypto.Tensor((16, 16), X2)):
        return pypto.cast(x, pypto.DT_FP32), pypto.cast(x, pypto.DT_BF16), pypto.cast(x, pypto.DT_FP16)

    b = np.arange(256, dtype=np.uint8).reshape(16, 16)
    f32, bf16, f16 = run_in(mode, f, torch.from_numpy(b).view(torch.float4_e2m1fn_x2))
    want = _decode(b)
    assert f32.shape == (16, 32)
    for got in (f32, bf16, f16):
        np.testing.assert_array_equal(torch.as_tensor(got).double().numpy(), want)
        assert np.array_equal(np.signbit(torch.as_tensor(got).float().numpy()), np.signbit(want))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src", [pypto.DT_FP32, pypto.DT_BF16, pypto.DT_FP16], ids=["fp32", "bf16", "fp16"])
def test_cast_encodes_to_nearest_even(src, mode):
    r = rng(11)
    steps = np.concatenate([MAGNITUDES, (MAGNITUDES[1:] + MAGNITUDES[:-1]) / 2])  # every value and tie
    vals = np.concatenate([steps, -steps, r.standard_normal(400) * 3, r.uniform(-8, 8, 400),
                           [0.0, -0.0, 6.5, 7.0, 1e30, -1e30, np.inf, -np.inf, np.nan, 1e-40, 0.2500001, 5.0001]])
    vals = vals[: len(vals) // 16 * 16].reshape(-1, 16).astype(np.float32)
    tdt = {pypto.DT_FP32: torch.float32, pypto.DT_BF16: torch.bfloat16, pypto.DT_FP16: torch.float16}[src]
    x = torch.from_numpy(vals).to(tdt)

    @pypto.jit
    def f(a: pypto.Tensor(list(vals.shape), src)):
        return pypto.cast(a, X2)

    got = run_in(mode, f, x)
    assert got.dtype == torch.float4_e2m1fn_x2 and tuple(got.shape) == (vals.shape[0], 8)
    np.testing.assert_array_equal(got.view(torch.uint8).numpy(), _pack(_encode(x.double().numpy())))


def test_fp4_moves_as_bytes_and_needs_an_even_last_dim():
    @pypto.jit
    def move(x: pypto.Tensor((6, 4), X2)):
        return pypto.transpose(x, 0, 1), x[1:3, :]

    b = rng(2).integers(0, 256, (6, 4)).astype(np.uint8)
    t, v = move(torch.from_numpy(b).view(torch.float4_e2m1fn_x2))
    assert torch.equal(t.view(torch.uint8), torch.from_numpy(b.T.copy()))
    assert torch.equal(v.view(torch.uint8), torch.from_numpy(b[1:3]))

    @pypto.jit
    def odd(a: pypto.Tensor((2, 7), pypto.DT_FP32)):
        return pypto.cast(a, X2)

    with pytest.raises(pypto.UserError, match=r"the last dim of pypto.Tensor\(\(2, 7\), DataType.FP32\) %a must be static "
                       "and even"):  # the user's tensor, not an int32 intermediate of the encoding
        odd(np.zeros((2, 7), np.float32))

    @pypto.jit
    def arith(x: pypto.Tensor((2, 4), X2)):
        return x + x

    with pytest.raises(pypto.UserError, match="cast"):
        arith(np.zeros((2, 4), np.uint8))


def _reference_quant_fp4(x, src, nv):
    """quant_mx to E2M1 along the last dim (a multiple of 32) by the MX rules as PyPTO states
    them: the shared exponent is ceil(log2(amax / 6)) (NV) or floor(log2(amax)) - 2 (OCP; an fp16
    input's amax is of its values truncated to bf16); inf gives 254 (NV) or 253 (OCP), NaN 255."""
    x = np.asarray(x, np.float32)
    rows = x.reshape(-1, x.shape[-1])
    g = rows.shape[-1] // 32
    xg = rows.reshape(-1, g, 32)
    src_amax = xg
    if not nv and src == "fp16":
        src_amax = (xg.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    with np.errstate(invalid="ignore"):
        amax = np.abs(src_amax.astype(np.float64)).max(-1)
    amax = np.where(np.isnan(xg).any(-1), np.nan, amax)
    e = np.zeros(amax.shape, np.int64)
    fin = np.isfinite(amax) & (amax > 0)
    if nv:
        e[fin] = np.ceil(np.log2(amax[fin] / 6.0)) + 127
    else:
        e[fin] = np.floor(np.log2(amax[fin])) - 2 + 127
    e = np.clip(e, 0, 254)
    e[np.isinf(amax)] = 254 if nv else 253
    e[np.isnan(amax)] = 255
    scale = np.where(e == 255, np.nan, np.ldexp(1.0, 127 - e))
    with np.errstate(invalid="ignore"):
        scaled = (xg.astype(np.float64) * scale[..., None]).astype(np.float32)
    q = _pack(_encode(scaled.reshape(rows.shape))).reshape(x.shape[:-1] + (x.shape[-1] // 2,))
    pairs = np.zeros((rows.shape[0], -(-g // 2) * 2), np.uint8)
    pairs[:, :g] = e
    return q, pairs.reshape(x.shape[:-1] + (-(-g // 2), 2))


def _fp4_input(shape, seed, tdt):
    r = rng(seed)
    x = (r.standard_normal(shape) * np.exp(r.uniform(-6, 6, shape[:-1] + (1,)))).astype(np.float32)
    flat = x.reshape(-1)
    flat[:6] = [0.0, -0.0, 6.0, -3.0, 1e-3, 12.0]
    flat[32:64] = 0.0  # an all-zero group
    flat[64 + 3] = np.inf
    flat[-5] = np.nan
    return torch.from_numpy(x).to(tdt)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nv", [False, True], ids=["ROUND_DOWN", "ROUND_UP"])
@pytest.mark.parametrize("src", ["fp16", "bf16"])
@pytest.mark.parametrize("shape,axis", [((4, 128), -1), ((2, 3, 96), -1), ((128, 6), -2)])
def test_quant_mx_to_fp4_matches_the_mx_rules(shape, axis, src, nv, mode):
    dt, tdt = (pypto.DT_FP16, torch.float16) if src == "fp16" else (pypto.DT_BF16, torch.bfloat16)
    rmode = pypto.ROUND_UP if nv else pypto.ROUND_DOWN

    @pypto.jit
    def f(x: pypto.Tensor(list(shape), dt)):
        pypto.set_vec_tile_shapes(*([16] * len(shape)))
        return pypto.quant_mx(x, X2, rmode, axis)

    x = _fp4_input(shape, len(shape) + 3 * nv, tdt)
    q, s = run_in(mode, f, x)
    assert q.dtype == torch.float4_e2m1fn_x2 and s.dtype == torch.float8_e8m0fnu
    x32 = x.float().numpy()
    if axis == -1:
        want_q, want_s = _reference_quant_fp4(x32, src, nv)
    else:  # groups down the columns: quantize the transpose, then pack the codes along the rows
        tq, ts = _reference_quant_fp4(np.swapaxes(x32, -1, -2), src, nv)
        want_q = _pack(np.swapaxes(np.stack([tq & 15, tq >> 4], -1).reshape(tq.shape[0], -1), -1, -2))
        m = shape[-2]
        want_s = np.swapaxes(ts.reshape(shape[-1], m // 32)[:, :].reshape(shape[-1], m // 64, 2), 0, 1)
    np.testing.assert_array_equal(s.view(torch.uint8).numpy(), want_s)
    np.testing.assert_array_equal(q.view(torch.uint8).numpy(), want_q)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("a_t,b_t", [(False, False), (False, True), (True, False)])
def test_scaled_mm_of_fp4_operands(a_t, b_t, mode):
    m, k, n = 12, 64, 10
    r = rng(9)
    a_bytes = r.integers(0, 256, (k, m // 2) if a_t else (m, k // 2)).astype(np.uint8)
    b_bytes = r.integers(0, 256, (n, k // 2) if b_t else (k, n // 2)).astype(np.uint8)
    ea = r.integers(122, 132, (m, 1, 2)).astype(np.uint8)
    eb = r.integers(122, 132, (1, n, 2)).astype(np.uint8)
    as_fp4, as_e8 = (lambda b: torch.from_numpy(b).view(torch.float4_e2m1fn_x2)), (
        lambda b: torch.from_numpy(b).view(torch.float8_e8m0fnu))

    @pypto.jit
    def f(a: pypto.Tensor(list(a_bytes.shape), X2), b: pypto.Tensor(list(b_bytes.shape), X2),
          sa: pypto.Tensor((m, 1, 2), pypto.DT_FP8E8M0), sb: pypto.Tensor((1, n, 2), pypto.DT_FP8E8M0)):
        return pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb, a_trans=a_t, b_trans=b_t)

    got = run_in(mode, f, as_fp4(a_bytes), as_fp4(b_bytes), as_e8(ea), as_e8(eb))
    a64 = _decode(a_bytes).T if a_t else _decode(a_bytes)  # [M, K]
    b64 = _decode(b_bytes).T if b_t else _decode(b_bytes)  # [K, N]
    a64 = a64 * np.repeat(np.ldexp(1.0, ea.reshape(m, 2).astype(np.int64) - 127), 32, 1)
    b64 = b64 * np.repeat(np.ldexp(1.0, eb.transpose(1, 0, 2).reshape(n, 2).astype(np.int64) - 127), 32, 1).T
    want = a64 @ b64
    np.testing.assert_allclose(got.double().numpy(), want, rtol=0, atol=1e-6 * (np.abs(a64) @ np.abs(b64)).max())


@pytest.mark.parametrize("a_t", [False, True])
def test_logical_fp4_parameters_view_in_values_and_feed_scaled_mm(a_t):
    """PyPTO's DT_FP4_E2M1: a uint8 [.., n / 2] argument is the [.., n] tensor of its values;
    views and valid shapes count values (A transposed is packed along M), as in PyPTO's
    test_scaled_mm_mxfp4.py; a bias window clipped from a static bias meets a tile of the
    dynamic output."""
    m, k, n, vm, vn = 20, 64, 14, 8, 8
    r = rng(10)
    a_bytes = r.integers(0, 256, (k, m // 2) if a_t else (m, k // 2)).astype(np.uint8)
    b_bytes = r.integers(0, 256, (k, n // 2)).astype(np.uint8)
    ea = r.integers(122, 132, (m, 1, 2)).astype(np.uint8)
    eb = r.integers(122, 132, (1, n, 2)).astype(np.uint8)
    bias = r.standard_normal((1, n)).astype(np.float32)
    E2M1, E8 = pypto.DT_FP4_E2M1, pypto.DT_FP8E8M0
    D = pypto.DYNAMIC

    @pypto.jit
    def f(a: pypto.Tensor([D, D], E2M1), b: pypto.Tensor([k, n], E2M1), out: pypto.Tensor([D, D], pypto.DT_FP32),
          sa: pypto.Tensor((m, 1, 2), E8), sb: pypto.Tensor((1, n, 2), E8), bias_t: pypto.Tensor((1, n))):
        mm, nn = out.shape
        assert list(b.shape) == [k, n]  # the annotation counts values
        for i in pypto.loop((mm + vm - 1) // vm):
            for j in pypto.loop((nn + vn - 1) // vn):
                rows = (mm - i * vm).min(vm)
                cols = (nn - j * vn).min(vn)
                va = (pypto.view(a, [k, vm], [0, i * vm], valid_shape=[k, rows]) if a_t
                      else pypto.view(a, [vm, k], [i * vm, 0], valid_shape=[rows, k]))
                vb = pypto.view(b, [k, vn], [0, j * vn], valid_shape=[k, cols])
                vsa = pypto.view(sa, [vm, 1, 2], [i * vm, 0, 0], valid_shape=[rows, 1, 2])
                vsb = pypto.view(sb, [1, vn, 2], [0, j * vn, 0], valid_shape=[1, cols, 2])
                pypto.set_vec_tile_shapes(8, 8)
                res = pypto.scaled_mm(va, vb, pypto.DT_FP32, vsa, vsb, a_trans=a_t,
                                      extend_params={"bias_tensor": bias_t[:, j * vn:j * vn + vn]})
                pypto.assemble(res, [i * vm, j * vn], out)

    out = np.zeros((m, n), np.float32)
    f(torch.from_numpy(a_bytes), b_bytes, out, torch.from_numpy(ea).view(torch.float8_e8m0fnu),
      torch.from_numpy(eb).view(torch.float8_e8m0fnu), bias)
    a64 = _decode(a_bytes).T if a_t else _decode(a_bytes)
    a64 = a64 * np.repeat(np.ldexp(1.0, ea.reshape(m, 2).astype(np.int64) - 127), 32, 1)
    b64 = _decode(b_bytes) * np.repeat(np.ldexp(1.0, eb.transpose(1, 0, 2).reshape(n, 2).astype(np.int64) - 127),
                                       32, 1).T
    want = a64 @ b64 + bias
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6 * (np.abs(a64) @ np.abs(b64)).max())


def test_logical_fp4_is_an_input_only():
    @pypto.jit
    def f(a: pypto.Tensor([4, 8], pypto.DT_FP4_E2M1)):
        a[:] = pypto.mul(a, 2.0)

    with pytest.raises(pypto.UserError, match=r"assignment: parameter 'a' \(pypto.DT_FP4_E2M1.*cannot be written"):
        f(np.zeros((4, 4), np.uint8))

    @pypto.jit
    def g(a: pypto.Tensor([4, 7], pypto.DT_FP4_E2M1)):
        return pypto.mul(a, 2.0)

    with pytest.raises(pypto.UserError, match=r"odd last dim 7"):
        g(np.zeros((4, 4), np.uint8))

    @pypto.jit
    def h(a: pypto.Tensor([4, 8], pypto.DT_FP32)):
        return pypto.tensor([4, 8], pypto.DT_FP4_E2M1)

    with pytest.raises(pypto.UserError, match=r"(?s)DT_FP4_E2M1 \(logical shape.*DT_FP4_E2M1X2"):
        h(np.zeros((4, 8), np.float32))


def test_logical_e1m2_parameter_decodes_every_code():
    """DT_FP4_E1M2: codes c give (c & 7) / 4, negative from 8 on (PyPTO's table), and feed
    scaled_mm as A."""
    E8 = pypto.DT_FP8E8M0

    @pypto.jit
    def f(a: pypto.Tensor([16, 64], pypto.DT_FP4_E1M2), b: pypto.Tensor([64, 8], pypto.DT_FP32)):
        return a * 1.0

    codes = np.arange(16 * 64, dtype=np.uint8).reshape(16, 64) % 16
    table = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75], np.float32)
    want = np.where(codes >= 8, -table[codes & 7], table[codes & 7])
    got = f(_pack(codes), np.zeros((64, 8), np.float32))
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # code 8 is -0

    b_bytes = rng(11).integers(0, 256, (64, 4)).astype(np.uint8)
    ea = np.full((16, 1, 2), 127, np.uint8)
    eb = np.full((1, 8, 2), 128, np.uint8)

    @pypto.jit
    def g(a: pypto.Tensor([16, 64], pypto.DT_FP4_E1M2), b: pypto.Tensor((64, 4), X2),
          sa: pypto.Tensor((16, 1, 2), E8), sb: pypto.Tensor((1, 8, 2), E8)):
        return pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)

    out = g(_pack(codes), torch.from_numpy(b_bytes).view(torch.float4_e2m1fn_x2),
            torch.from_numpy(ea).view(torch.float8_e8m0fnu), torch.from_numpy(eb).view(torch.float8_e8m0fnu))
    np.testing.assert_allclose(out.double().numpy(), want.astype(np.float64) @ (_decode(b_bytes) * 2.0), rtol=1e-6)
