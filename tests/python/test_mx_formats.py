"""The MX formats: DT_FP8E4M3 / DT_FP8E5M2 / DT_FP8E8M0 as storage (bytes that move), their
conversions with pypto.cast (bit-exact to torch's float8 types, all 256 bytes and the edges),
quant_mx (OCP ROUND_DOWN and NV ROUND_UP, axis -1 and -2, fp32 / fp16 / bf16 inputs, NaN, inf,
subnormals) against a reference written from the MX rules, and scaled_mm against float64."""

import numpy as np
import pytest

import pypto
from _util import MODES, rng, run_in

torch = pytest.importorskip("torch")
FORMATS = [(pypto.DT_FP8E4M3, torch.float8_e4m3fn), (pypto.DT_FP8E5M2, torch.float8_e5m2),
           (pypto.DT_FP8E8M0, torch.float8_e8m0fnu)]


def _same(got, ref):
    """Equal as floats, NaN where the reference is NaN."""
    got, ref = torch.as_tensor(got).double(), torch.as_tensor(ref).double()
    nan = torch.isnan(ref)
    return bool(torch.equal(torch.isnan(got), nan) and torch.equal(got[~nan], ref[~nan]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMATS, ids=["e4m3", "e5m2", "e8m0"])
def test_every_byte_decodes_as_torch(fmt, mode):
    dt, tdt = fmt

    @pypto.jit
    def decode(x: pypto.Tensor((16, 16), dt)):
        return pypto.cast(x, pypto.DT_FP32), pypto.cast(x, pypto.DT_BF16)

    codes = torch.arange(256, dtype=torch.uint8).reshape(16, 16).view(tdt)
    f32, bf16 = run_in(mode, decode, codes)
    assert _same(f32, codes.float()) and _same(bf16, codes.float().bfloat16())


def _edge_values():
    r = torch.Generator().manual_seed(3)
    # The edge values first: the random tail is what the cut to rows of 32 drops.
    vals = torch.cat([torch.tensor([0.0, -0.0, 448.0, 449.0, 464.0, 465.0, 1e6, 57344.0, 61439.0, 61440.0, 7e4,
                                    float("inf"), -float("inf"), float("nan"), 1e-10, 2.0 ** -9, 2.0 ** -10,
                                    3 * 2.0 ** -11, 2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -18, 1e-45, -448.0, -465.0,
                                    -57344.0, -61440.0, -1e-45]),
                      torch.randn(3000, generator=r) * 30, torch.randn(1000, generator=r) * 1e-3])
    return vals[: len(vals) // 32 * 32].reshape(-1, 32)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMATS[:2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("src", [pypto.DT_FP32, pypto.DT_BF16], ids=["fp32", "bf16"])
def test_encoding_matches_torch_bit_for_bit(fmt, src, mode):
    dt, tdt = fmt
    vals = _edge_values()
    if src == pypto.DT_BF16:
        vals = vals.bfloat16()

    @pypto.jit
    def encode(x: pypto.Tensor(list(vals.shape), src)):
        return pypto.cast(x, dt)

    got = run_in(mode, encode, vals)
    assert got.dtype == tdt
    assert torch.isinf(vals.float()).sum() == 2  # the edges are in
    ref = vals.to(tdt)
    nan = torch.isnan(ref.float())
    if dt == pypto.DT_FP8E4M3:  # E4M3 has no inf: pypto makes ±inf NaN (ops/mx.py); torch 2.13 gives ±448
        nan = nan | torch.isinf(vals.float())
    assert torch.equal(got.view(torch.uint8)[~nan], ref.view(torch.uint8)[~nan])
    assert torch.isnan(got.float()[nan]).all()


def test_fp8_tensors_move_and_refuse_arithmetic():
    @pypto.jit
    def move(x: pypto.Tensor((8, 32), pypto.DT_FP8E4M3), idx: pypto.Tensor((3,), pypto.DT_INT32)):
        t = pypto.transpose(x, 0, 1)
        return t, pypto.concat([x, x], 0), pypto.index_select(x, 0, idx), x[2:5, 8:16]

    x = torch.randn(8, 32).to(torch.float8_e4m3fn)
    idx = torch.tensor([7, 0, 3], dtype=torch.int32)
    t, c, g, v = move(x, idx)
    bytes_ = x.view(torch.uint8)
    for got, want in ((t, bytes_.T), (c, torch.cat([bytes_, bytes_])), (g, bytes_[idx.long()]), (v, bytes_[2:5, 8:16])):
        assert got.dtype == torch.float8_e4m3fn and torch.equal(got.view(torch.uint8), want)
    assert np.array_equal(move(bytes_.numpy(), idx.numpy())[0], bytes_.T.numpy())  # numpy: the bytes

    @pypto.jit
    def add(x: pypto.Tensor((8, 32), pypto.DT_FP8E4M3)):
        return x + x

    with pytest.raises(pypto.UserError, match="fp8e4m3 is a storage format here") as e:
        add(x)
    assert "test_mx_formats.py" in str(e.value) and "pypto.cast(x, pypto.DT_FP32)" in str(e.value)


# --- quant_mx --------------------------------------------------------------------------------

def _reference_quant_mx(x, nv, axis):
    """The MX rules in float64: groups of 32 along axis share 2^(e - 127) with e the E8M0
    exponent; values divided by it are rounded to E4M3, saturating at 448."""
    x = np.asarray(x, np.float32)
    if axis == -2:
        q, e = _reference_quant_mx(np.swapaxes(x, -1, -2), nv, -1)
        lead, n, m = x.shape[:-2], x.shape[-1], x.shape[-2]
        groups = e.reshape(*lead, n, m // 32)
        pairs = groups.reshape(*lead, n, m // 64, 2)
        return np.swapaxes(q, -1, -2), np.swapaxes(pairs, -2, -3)
    cols = x.shape[-1]
    g = -(-cols // 32)
    xp = np.zeros(x.shape[:-1] + (g * 32,), np.float32)
    xp[..., :cols] = x
    xg = xp.reshape(x.shape[:-1] + (g, 32)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        amax = np.abs(xg).max(-1)
    amax = np.where(np.isnan(xg).any(-1), np.nan, amax)
    e = np.zeros(amax.shape, np.int64)
    fin = np.isfinite(amax) & (amax > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if nv:
            e[fin] = np.ceil(np.log2(amax[fin] / 448.0)) + 127
        else:
            e[fin] = np.floor(np.log2(amax[fin])) - 8 + 127
    e = np.clip(e, 0, 254)
    e[np.isinf(amax)] = 254 if nv else 255 - 8
    e[np.isnan(amax)] = 255
    scale = np.where(e == 255, np.nan, np.ldexp(1.0, 127 - e))
    scaled = torch.from_numpy((xg * scale[..., None]).astype(np.float32))
    codes = scaled.to(torch.float8_e4m3fn).view(torch.uint8)
    codes[torch.isinf(scaled)] = (0x7E | (torch.signbit(scaled[torch.isinf(scaled)]).to(torch.uint8) << 7))
    q = codes.numpy().reshape(x.shape[:-1] + (g * 32,))[..., :cols]
    pairs = np.zeros(x.shape[:-1] + (-(-g // 2) * 2,), np.uint8)
    pairs[..., :g] = e
    return q, pairs.reshape(x.shape[:-1] + (-(-g // 2), 2))


def _assert_codes_equal(got, want):
    """E4M3 codes equal; a NaN's sign (which NaN operand a product propagates) is free."""
    got, want = np.asarray(got), np.asarray(want)
    nan = (want & 0x7F) == 0x7F
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert ((got[nan] & 0x7F) == 0x7F).all()


def _mx_input(shape, seed):
    r = rng(seed)
    x = (r.standard_normal(shape) * np.exp(r.uniform(-12, 12, shape[:-1] + (1,)))).astype(np.float32)
    flat = x.reshape(-1)
    flat[:9] = [0.0, -0.0, np.inf, 1e-42, 3e38, -448.0, 449.0, 2.0 ** -9, -np.inf]
    flat[-40] = np.nan
    return x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nv", [False, True], ids=["ROUND_DOWN", "ROUND_UP"])
@pytest.mark.parametrize("shape,axis", [((4, 256), -1), ((3, 100), -1), ((2, 3, 40), -1), ((70,), -1),
                                        ((128, 24), -2), ((2, 64, 33), -2)])
def test_quant_mx_matches_the_mx_rules(shape, axis, nv, mode):
    rmode = pypto.ROUND_UP if nv else pypto.ROUND_DOWN

    @pypto.jit
    def f(x: pypto.Tensor(list(shape), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(*([8] * len(shape)))
        return pypto.quant_mx(x, pypto.DT_FP8E4M3, rmode, axis, True)

    x = _mx_input(shape, len(shape) * 10 + nv)
    q, s = run_in(mode, f, x)
    want_q, want_s = _reference_quant_mx(x, nv, axis)
    assert q.shape == x.shape and s.shape == want_s.shape
    _assert_codes_equal(q, want_q)
    np.testing.assert_array_equal(s, want_s)


@pytest.mark.parametrize("src", [pypto.DT_FP16, pypto.DT_BF16], ids=["fp16", "bf16"])
def test_quant_mx_of_16_bit_inputs_returns_torch_float8(src):
    tdt = torch.float16 if src == pypto.DT_FP16 else torch.bfloat16

    @pypto.jit
    def f(x: pypto.Tensor((6, 64), src)):
        return pypto.quant_mx(x)

    x = torch.from_numpy(_mx_input((6, 64), 5)).clamp(-6e4, 6e4).to(tdt)
    q, s = f(x)
    assert q.dtype == torch.float8_e4m3fn and s.dtype == torch.float8_e8m0fnu
    want_q, want_s = _reference_quant_mx(x.float().numpy(), False, -1)
    _assert_codes_equal(q.view(torch.uint8).numpy(), want_q)
    np.testing.assert_array_equal(s.view(torch.uint8).numpy(), want_s)


# --- scaled_mm -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("trans", [(False, False, False, False), (True, True, True, True), (False, True, False, True)],
                         ids=["plain", "all-transposed", "b-transposed"])
def test_scaled_mm_against_float64(trans, mode):
    a_t, b_t, sa_t, sb_t = trans
    m, k, n = 20, 96, 24

    def layout(x, t):
        return np.ascontiguousarray(np.swapaxes(x, 0, 1)) if t else x

    r = rng(7)
    a = torch.from_numpy(r.standard_normal((m, k)).astype(np.float32)).to(torch.float8_e4m3fn)
    b = torch.from_numpy(r.standard_normal((k, n)).astype(np.float32) * 100).to(torch.float8_e5m2)
    ea = r.integers(120, 134, (m, 2, 2)).astype(np.uint8)  # [M, ceil(K/64), 2]
    eb = r.integers(120, 134, (2, n, 2)).astype(np.uint8)  # [ceil(K/64), N, 2]
    bias = torch.from_numpy(r.standard_normal(n).astype(np.float32))
    a_in = torch.from_numpy(layout(a.view(torch.uint8).numpy(), a_t)).view(torch.float8_e4m3fn)
    b_in = torch.from_numpy(layout(b.view(torch.uint8).numpy(), b_t)).view(torch.float8_e5m2)
    sa_in = torch.from_numpy(layout(ea, sa_t)).view(torch.float8_e8m0fnu)
    sb_in = torch.from_numpy(np.ascontiguousarray(eb.transpose(1, 0, 2)) if sb_t else eb).view(torch.float8_e8m0fnu)

    @pypto.jit
    def f(a_: pypto.Tensor(list(a_in.shape), pypto.DT_FP8E4M3), b_: pypto.Tensor(list(b_in.shape), pypto.DT_FP8E5M2),
          sa: pypto.Tensor(list(sa_in.shape), pypto.DT_FP8E8M0), sb: pypto.Tensor(list(sb_in.shape), pypto.DT_FP8E8M0),
          bias_: pypto.Tensor((n,), pypto.DT_FP32)):
        return pypto.scaled_mm(a_, b_, pypto.DT_FP32, sa, sb, a_trans=a_t, b_trans=b_t, scale_a_trans=sa_t,
                               scale_b_trans=sb_t, extend_params={"bias_tensor": bias_})

    got = run_in(mode, f, a_in, b_in, sa_in, sb_in, bias)
    sa64 = np.ldexp(1.0, ea.reshape(m, 4).astype(np.int64) - 127)[:, :k // 32]
    sb64 = np.ldexp(1.0, eb.transpose(1, 0, 2).reshape(n, 4).astype(np.int64) - 127)[:, :k // 32]
    a64 = a.double().numpy() * np.repeat(sa64, 32, 1)
    b64 = b.double().numpy() * np.repeat(sb64, 32, 1).T
    # Exact products summed in fp32: the error is bounded by the magnitude of the terms.
    err = np.abs(got.double().numpy() - (a64 @ b64 + bias.double().numpy()))
    assert (err <= 1e-5 * (np.abs(a64) @ np.abs(b64) + np.abs(bias.double().numpy()))).all()


def test_mx_errors():
    @pypto.jit
    def fp4(x: pypto.Tensor((4, 64), pypto.DT_FP32)):
        return pypto.quant_mx(x, pypto.DT_FP4_E2M1X2)

    with pytest.raises(pypto.UserError, match="quantizes a DT_FP16 or DT_BF16 tensor"):
        fp4(np.zeros((4, 64), np.float32))

    @pypto.jit
    def dn(x: pypto.Tensor((40, 8), pypto.DT_FP32)):
        return pypto.quant_mx(x, axis=-2)

    with pytest.raises(pypto.UserError, match="multiple of 64"):
        dn(np.zeros((40, 8), np.float32))

    @pypto.jit
    def other_k(a: pypto.Tensor((4, 40), pypto.DT_FP8E4M3), b: pypto.Tensor((48, 4), pypto.DT_FP8E4M3),
                sa: pypto.Tensor((4, 1, 2), pypto.DT_FP8E8M0), sb: pypto.Tensor((1, 4, 2), pypto.DT_FP8E8M0)):
        return pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)

    z = np.zeros
    with pytest.raises(pypto.UserError, match="the same static K"):
        other_k(z((4, 40), np.uint8), z((48, 4), np.uint8), z((4, 1, 2), np.uint8), z((1, 4, 2), np.uint8))


@pytest.mark.parametrize("mode", MODES)
def test_scaled_mm_batched_with_a_partial_k_group_and_the_fixpipe(mode):
    """3-D operands sharing one set of scales, K = 72 (the third group of 32 is partial), a bias
    and a per-tensor scale, into bf16."""
    bsz, m, k, n = 2, 6, 72, 5
    r = rng(12)
    a = torch.from_numpy(r.standard_normal((bsz, m, k)).astype(np.float32)).to(torch.float8_e4m3fn)
    b = torch.from_numpy(r.standard_normal((bsz, k, n)).astype(np.float32)).to(torch.float8_e4m3fn)
    ea = r.integers(124, 130, (m, 2, 2)).astype(np.uint8)
    eb = r.integers(124, 130, (2, n, 2)).astype(np.uint8)
    bias = torch.from_numpy(r.standard_normal((1, n)).astype(np.float32))

    @pypto.jit
    def f(a_: pypto.Tensor((bsz, m, k), pypto.DT_FP8E4M3), b_: pypto.Tensor((bsz, k, n), pypto.DT_FP8E4M3),
          sa: pypto.Tensor((m, 2, 2), pypto.DT_FP8E8M0), sb: pypto.Tensor((2, n, 2), pypto.DT_FP8E8M0),
          bias_: pypto.Tensor((1, n), pypto.DT_FP32)):
        return pypto.scaled_mm(a_, b_, pypto.DT_BF16, sa, sb, extend_params={"bias_tensor": bias_, "scale": 0.5})

    got = run_in(mode, f, a, b, torch.from_numpy(ea).view(torch.float8_e8m0fnu),
                 torch.from_numpy(eb).view(torch.float8_e8m0fnu), bias)
    sa64 = np.repeat(np.ldexp(1.0, ea.reshape(m, 4).astype(np.int64) - 127), 32, 1)[:, :k]
    sb64 = np.repeat(np.ldexp(1.0, eb.transpose(1, 0, 2).reshape(n, 4).astype(np.int64) - 127), 32, 1)[:, :k].T
    want = ((a.double().numpy() * sa64) @ (b.double().numpy() * sb64) + bias.double().numpy()) * 0.5
    torch.testing.assert_close(got.double(), torch.from_numpy(want).bfloat16().double(), rtol=8e-3, atol=1e-5)
