"""The MX (microscaling) formats: ``quant_mx``, ``scaled_mm`` and the conversions of
``DT_FP8E4M3`` / ``DT_FP8E5M2`` / ``DT_FP8E8M0`` / ``DT_FP4_E2M1X2`` to and from the float
dtypes (``pypto.cast``).

On the CPU these dtypes are storage: their bytes move like uint8 (views, copies, gathers), and
every conversion is written here with int32 steps on the bit patterns, which fuse like any
elementwise chain. ``quant_mx`` follows PyPTO's golden bit for bit: the shared exponent of each
group of 32 is OCP's ``floor(log2(amax)) - 8`` (ROUND_DOWN) or NV's ``ceil(log2(amax / 448))``
(ROUND_UP), the scaled values are encoded to E4M3 rounding to nearest even and saturating at
448. ``pypto.cast`` to an FP8 type follows torch's ``.to(torch.float8_*)``: E4M3 saturates at 448
and makes an infinity NaN, E5M2 overflows to inf.

``DT_FP4_E2M1X2`` is a byte holding two E2M1 values (the even index in the low nibble), as
torch's ``float4_e2m1fn_x2``: a tensor's shape counts bytes, so converting one to a float dtype
doubles its last dim and converting to it halves an even last dim (PyPTO's cast golden does the
same). E2M1 encoding rounds to nearest even and saturates at 6; an infinity gives +-6 and NaN
the code 7 (PyPTO's encoder). ``quant_mx`` to it follows PyPTO's golden: groups of 32 share
NV's ``ceil(log2(amax / 6))`` (ROUND_UP) or OCP's ``floor(log2(amax)) - 2`` (ROUND_DOWN)
exponent. ``DT_FP4_E1M2X2`` packs two E1M2 values the same way (PyPTO's cast golden rounds
them: |x| * 4 to nearest even, saturating at 1.75, the sign from x < 0).
"""

from __future__ import annotations

import enum
from typing import Any, Dict, Optional, Tuple

import pypto._core as _core
from .._dtypes import (DT_BF16, DT_FP4_E2M1X2, DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_FP16, DT_FP32,
                       DT_INT32, DT_UINT8, DataType, check_dtype)
from ..tensor import Tensor
from .cast import cast
from .core import _is_dynamic, _suffix, _t, abs, amax, exact_view, mul, same_extent, view  # noqa: A004
from .matmul import matmul
from .mx_codec import _AutoTiles, _decode, _encode_e2m1, _encode_e4m3, _f32, _i32, _pack_e2m1x2, _shr
from .logic import bitwise_and, eq, ge, gt, isnan, lt, where
from .shape import concat, expand_clone, permute, reshape, transpose
from .creation import full
from .fixpipe import fixpipe

__all__ = ["DequantScaleRoundingMode", "ROUND_DOWN", "ROUND_UP", "quant_mx", "scaled_mm"]


class DequantScaleRoundingMode(enum.Enum):
    """How ``quant_mx`` picks a group's shared exponent: ROUND_DOWN is OCP's floor, ROUND_UP
    NV's ceiling of log2(amax / max finite)."""
    ROUND_UP = 0
    ROUND_DOWN = 1


ROUND_UP = DequantScaleRoundingMode.ROUND_UP
ROUND_DOWN = DequantScaleRoundingMode.ROUND_DOWN


def _shared_exponent(amax_abs: Tensor, mode: DequantScaleRoundingMode, fp4: bool = False) -> Tensor:
    """The E8M0 exponent (int32 0..255) of groups whose largest magnitude is ``amax_abs``, for
    E4M3 (largest 448 = 1.75 * 2^8) or E2M1 (6 = 1.5 * 2^2)."""
    bits = _i32(amax_abs)
    biased = bitwise_and(_shr(bits, 23), 0xFF)
    pow2, mant = (2, 0x400000) if fp4 else (8, 0x600000)
    if mode == ROUND_DOWN:  # OCP: floor(log2(amax)) - pow2, inf follows the exponent path
        e = biased - pow2
        if fp4:  # PyPTO's FP4 golden gives an infinity the exponent 255 - 2
            e = where(ge(biased, 255), 253, e)
    else:  # NV: ceil(log2(amax / max)): one more when the mantissa is above the largest value's
        e = biased - pow2 + cast(gt(bitwise_and(bits, 0x7FFFFF), mant), DT_INT32)
        e = where(ge(biased, 255), 254, e)  # inf: the largest finite scale
    e = where(lt(e, 0), 0, where(gt(e, 254), 254, e))
    return where(isnan(amax_abs), 255, e)


def _reciprocal_scale(e: Tensor) -> Tensor:
    """2^(127 - e) as fp32 (2^-127 for e = 254; NaN for the NaN exponent)."""
    v = _f32(where(eq(e, 254), 0x00400000, (254 - e) * (1 << 23)))
    return where(eq(e, 255), float("nan"), v)


def _quantize_rows(x32: Tensor, mode: DequantScaleRoundingMode, src: DataType = DT_FP32,
                   fp4: bool = False) -> Tuple[Tensor, Tensor]:
    """Groups of 32 along the last dim of fp32 ``x32`` [..., C] (values of dtype ``src``): (E4M3
    or, with fp4, E2M1 codes [..., C] as uint8, exponents [..., ceil(C / 32)] as int32)."""
    lead, cols = list(x32.shape[:-1]), x32.shape[-1]
    groups = -(-cols // 32)
    if groups * 32 != cols:  # a partial last group: zeros after it (they change no amax)
        x32 = concat([x32, full(lead + [groups * 32 - cols], 0.0, DT_FP32)], -1)
    xg = reshape(x32, lead + [groups, 32])
    if not fp4:
        e = _shared_exponent(amax(abs(xg), -1, keepdim=True), mode)  # [..., G, 1]
        codes = cast(_encode_e4m3(mul(xg, _reciprocal_scale(e)), inf_is_nan=False), DT_UINT8)
    else:
        # PyPTO's FP4 golden: an fp16 input's OCP amax is taken of its values truncated to bf16;
        # a bf16 input's scaled values are rounded to bf16 (exact but for subnormals).
        amax_of = xg
        if mode == ROUND_DOWN and src == DT_FP16:
            amax_of = _f32(bitwise_and(_i32(xg), -65536))
        e = _shared_exponent(amax(abs(amax_of), -1, keepdim=True), mode, fp4=True)
        scaled = mul(xg, _reciprocal_scale(e))
        if src == DT_BF16:
            scaled = cast(cast(scaled, DT_BF16), DT_FP32)
        codes = _encode_e2m1(scaled)
    codes = reshape(codes, lead + [groups * 32])
    if groups * 32 != cols:
        codes = view(codes, lead + [cols], [0] * (len(lead) + 1))
    return codes, reshape(e, lead + [groups])


def _pairs(e: Tensor) -> Tensor:
    """Exponents [..., G] as E8M0 bytes [..., ceil(G / 2), 2] (a zero after an odd count)."""
    lead, groups = list(e.shape[:-1]), e.shape[-1]
    b = cast(e, DT_UINT8)
    if groups % 2:
        b = concat([b, full(lead + [1], 0, DT_UINT8)], -1)
    return reshape(b, lead + [(groups + 1) // 2, 2])


def quant_mx(input: Tensor, quant_dtype: Any = DT_FP8E4M3,  # noqa: A002 - PyPTO's name
             mode: DequantScaleRoundingMode = ROUND_DOWN, axis: int = -1,
             performance_mode: bool = True) -> Tuple[Tensor, Tensor]:
    """MX quantization of a 1-D to 4-D fp32 / fp16 / bf16 tensor: groups of 32 along ``axis``
    (-1, or -2 with that dim a multiple of 64) share an E8M0 exponent; returns ``(quantized,
    scale)``, quantized of the input's shape in ``DT_FP8E4M3`` (or, for ``DT_FP4_E2M1X2`` from a
    DT_FP16 / DT_BF16 input, packed in pairs: the last dim halved), scale ``DT_FP8E8M0`` of shape
    ``[..., ceil(n / 64), 2]`` (axis -1) or ``[..., m / 64, n, 2]`` (axis -2).
    ``performance_mode`` is accepted (it picks an NPU kernel)."""
    x = _t(input, "quant_mx")
    if isinstance(quant_dtype, DataType) or not hasattr(quant_dtype, "why"):
        quant_dtype = check_dtype(quant_dtype, "pypto.quant_mx", _suffix())
    if quant_dtype not in (DT_FP8E4M3, DT_FP4_E2M1X2):
        name = getattr(quant_dtype, "name", quant_dtype)
        raise _core.UserError(f"pypto.quant_mx: quant_dtype {name} is not supported; DT_FP8E4M3 and DT_FP4_E2M1X2 are"
                              + _suffix())
    fp4 = quant_dtype == DT_FP4_E2M1X2
    if fp4 and x.dtype not in (DT_FP16, DT_BF16):
        raise _core.UserError(f"pypto.quant_mx: DT_FP4_E2M1X2 quantizes a DT_FP16 or DT_BF16 tensor (PyPTO), got {x!r}"
                              + _suffix())
    if x.dtype not in (DT_FP32, DT_FP16, DT_BF16) or not 1 <= x.ndim <= 4:
        raise _core.UserError(f"pypto.quant_mx: the input must be a 1-D to 4-D DT_FP32, DT_FP16 or DT_BF16 tensor, "
                              f"got {x!r}" + _suffix())
    if not isinstance(mode, DequantScaleRoundingMode):
        raise _core.UserError(f"pypto.quant_mx: mode must be pypto.ROUND_DOWN or pypto.ROUND_UP, got {mode!r}"
                              + _suffix())
    a = axis % x.ndim if isinstance(axis, int) and not isinstance(axis, bool) and -x.ndim <= axis < x.ndim else None
    if a is None or a < x.ndim - 2:
        raise _core.UserError(f"pypto.quant_mx: axis must be the last or second-last dim of {x!r}, got {axis!r}"
                              + _suffix())
    last = a == x.ndim - 1
    if any(not isinstance(d, int) for d in x.shape):
        raise _core.UserError(f"pypto.quant_mx: the shape of {x!r} must be static here" + _suffix())
    with _AutoTiles():
        x32 = x if x.dtype == DT_FP32 else cast(x, DT_FP32)
        if last:
            codes, e = _quantize_rows(x32, mode, x.dtype, fp4)
            quant = _pack_e2m1x2(codes, "pypto.quant_mx") if fp4 else view(codes, dtype=DT_FP8E4M3)
            return quant, view(_pairs(e), dtype=DT_FP8E8M0)
        m, n = x.shape[-2], x.shape[-1]
        if m % 64:
            raise _core.UserError(f"pypto.quant_mx: with axis=-2 dim -2 of {x!r} must be a multiple of 64"
                                  + _suffix())
        codes, e = _quantize_rows(transpose(x32, -1, -2), mode, x.dtype, fp4)  # [..., n, m], [..., n, m / 32]
        lead = list(x.shape[:-2])
        k = len(lead)
        pairs = reshape(e, lead + [n, m // 64, 2])
        scale = permute(pairs, list(range(k)) + [k + 1, k, k + 2])  # [..., m / 64, n, 2]
        codes = transpose(codes, -1, -2)
        quant = _pack_e2m1x2(codes, "pypto.quant_mx") if fp4 else view(codes, dtype=DT_FP8E4M3)
        return quant, view(cast(scale, DT_UINT8), dtype=DT_FP8E8M0)


# --- scaled_mm -------------------------------------------------------------------------------

def _group_scales(scale: Tensor, rows: Any, k: int, trans: bool, what: str) -> Tensor:
    """E8M0 scales [rows, ceil(K/64), 2] (or [ceil(K/64), rows, 2] with trans) as fp32 [rows, K]:
    each group's scale repeated over its 32 columns (the last group may be partial)."""
    groups = -(-k // 32)
    k64 = -(-groups // 2)
    want = [k64, rows, 2] if trans else [rows, k64, 2]
    if scale.dtype != DT_FP8E8M0 or scale.ndim != 3 or not all(
            same_extent(g, w, f"the rows of pypto.scaled_mm's {what}") for g, w in zip(scale.shape, want)):
        raise _core.UserError(f"pypto.scaled_mm: {what} must be DT_FP8E8M0 of shape {tuple(want)}, got {scale!r}"
                              + _suffix())
    s = _decode(scale)
    if trans:
        s = permute(s, [1, 0, 2])
    rows = s.shape[0]
    s = reshape(s, [rows, 2 * k64, 1])
    s = reshape(expand_clone(s, [rows, 2 * k64, 32]), [rows, 64 * k64])
    return s if 64 * k64 == k else exact_view(s, [rows, k], [0, 0])


def scaled_mm(mat_a: Tensor, mat_b: Tensor, out_dtype: DataType, scale_a: Tensor, scale_b: Tensor, *,
              a_trans: bool = False, b_trans: bool = False, scale_a_trans: bool = False, scale_b_trans: bool = False,
              c_matrix_nz: bool = False, extend_params: Optional[Dict[str, Any]] = None) -> Tensor:
    """(mat_a * scale_a) @ (mat_b * scale_b) for MX operands: ``mat_a`` [..., M, K] and ``mat_b``
    [..., K, N] (2-D to 4-D, batch dims broadcasting; transposed with a_trans / b_trans) in
    DT_FP8E4M3, DT_FP8E5M2 or DT_FP4_E2M1X2 (two values per byte along the last dim: [M, K / 2]
    holds [M, K]), each group of 32 along K (the last may be partial) scaled by its E8M0
    exponent (``scale_a`` [M, ceil(K/64), 2], ``scale_b`` [ceil(K/64), N, 2], or transposed; one
    set for every batch). Exact products, fp32 accumulation, then matmul's fixpipe steps of
    ``extend_params`` (``bias_tensor``, ``scale`` / ``scale_tensor``, ``relu_type``) and one
    rounding to ``out_dtype``."""
    a, b = _t(mat_a, "scaled_mm"), _t(mat_b, "scaled_mm")
    sa, sb = _t(scale_a, "scaled_mm"), _t(scale_b, "scaled_mm")
    out_dt = check_dtype(out_dtype, "pypto.scaled_mm", _suffix())
    for t, what in ((a, "mat_a"), (b, "mat_b")):
        if getattr(t, "_mx_values", None) is not None and 2 <= t.ndim <= 4:
            continue  # a DT_FP4_E2M1 parameter (or a view of one): its values, logical shape
        if t.dtype not in (DT_FP8E4M3, DT_FP8E5M2, DT_FP4_E2M1X2) or not 2 <= t.ndim <= 4:
            raise _core.UserError(f"pypto.scaled_mm: {what} must be a 2-D to 4-D DT_FP8E4M3, DT_FP8E5M2 or "
                                  f"DT_FP4_E2M1X2 tensor, got {t!r}" + _suffix())
    if out_dt not in (DT_FP32, DT_FP16, DT_BF16, _core.DataType.INT8):
        raise _core.UserError(f"pypto.scaled_mm: out_dtype must be DT_FP32, DT_FP16, DT_BF16 or DT_INT8, got {out_dt}"
                              + _suffix())
    if c_matrix_nz:
        raise _core.UserError("pypto.scaled_mm: c_matrix_nz=True is not supported (nor by PyPTO)" + _suffix())
    ext = dict(extend_params or {})
    # A DT_FP4_E2M1X2 operand holds two values per byte along its last dim.
    ashape = list(a.shape[:-1]) + [a.shape[-1] * (2 if a.dtype == DT_FP4_E2M1X2 else 1)]
    bshape = list(b.shape[:-1]) + [b.shape[-1] * (2 if b.dtype == DT_FP4_E2M1X2 else 1)]
    decoded = [getattr(t, "_mx_values", None) is not None for t in (a, b)]
    m, k = (ashape[-1], ashape[-2]) if a_trans else (ashape[-2], ashape[-1])
    kb, n = (bshape[-1], bshape[-2]) if b_trans else (bshape[-2], bshape[-1])
    if any(_is_dynamic(d) for d in (k, kb)) or k != kb:
        raise _core.UserError(f"pypto.scaled_mm: mat_a {a!r} and mat_b {b!r} must have the same static K"
                              + _suffix())
    with _AutoTiles():
        af = a if decoded[0] else _decode(a)
        af = transpose(af, -1, -2) if a_trans else af  # [..., M, K]
        bf = b if decoded[1] else _decode(b)
        bf = transpose(bf, -1, -2) if b_trans else bf  # [..., K, N]
        af = mul(af, _group_scales(sa, m, k, scale_a_trans, "scale_a"))  # [M, K] broadcast over batches
        bf = mul(bf, transpose(_group_scales(sb, n, k, not scale_b_trans, "scale_b"), 0, 1))  # [K, N]
        res = matmul(af, bf, DT_FP32)
        return fixpipe(res, ext, DT_FP32, out_dt)  # (PyPTO's fixpipe: no vec tile of the program's)
