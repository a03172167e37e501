"""The storage formats' codecs: conversions of DT_FP8E4M3 / DT_FP8E5M2 / DT_FP8E8M0 / DT_HF8 /
DT_FP4_E2M1X2 / DT_FP4_E1M2X2 to and from the float dtypes (pypto.cast of them), and TF32
rounding (matmul's trans_mode), written with int32 steps on the bit patterns that fuse like any
elementwise chain. The MX quantization above them is in ops/mx.py; its docstring gives the
formats' rules."""

from __future__ import annotations

from typing import Any

import pypto._core as _core
from ..._core import DataType
from .._dtypes import (DT_BF16, DT_FP4_E1M2X2, DT_FP4_E2M1X2, DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_FP16, DT_FP32,
                       DT_HF8, DT_INT32, DT_UINT8, DT_UINT16, STORAGE_DTYPES)
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor
from .core import _convert as cast
from .core import _suffix, abs, add, mul, view  # noqa: A004
from .logic import bitwise_and, bitwise_or, eq, ge, gt, isnan, le, logical_and, logical_not, logical_or, lt, ne, where
from .math import round as round_even
from .shape import concat, reshape, unsqueeze


class _AutoTiles:
    """The steps of a composite have their own ranks: automatic vec tiles while they record."""

    def __enter__(self) -> None:
        self.rec = current_recorder("mx")
        self.tile = list(self.rec.vec_tile_shapes())
        self.rec.clear_vec_tile_shapes()

    def __exit__(self, *exc: Any) -> None:
        if self.tile:
            self.rec.set_vec_tile_shapes(self.tile, user_loc())


def _i32(x: Tensor) -> Tensor:
    """The bit pattern of an fp32 tensor as int32."""
    return view(x, dtype=DT_INT32)


def _f32(bits: Tensor) -> Tensor:
    """An int32 bit pattern as fp32."""
    return view(bits, dtype=DT_FP32)


def _shr(x: Tensor, n: int) -> Tensor:
    return x >> n


def _bytes_to_i32(x: Tensor) -> Tensor:
    return cast(view(x, dtype=DT_UINT8), DT_INT32)


# --- FP8 <-> fp32 ----------------------------------------------------------------------------

def _encode_fp8(x: Tensor, mbits: int, ebias: int, over: Tensor, over_code: int, nan: Tensor) -> Tensor:
    """fp32 -> an 8-bit float code (as int32 0..255) with ``mbits`` mantissa bits and exponent
    bias ``ebias``, rounding to nearest even (torchao's bit steps); ``over`` selects the values
    given ``over_code``, ``nan`` those given 0x7F; the sign is put back last."""
    bits = _i32(x)
    sign = bitwise_and(_shr(bits, 24), 0x80)
    abs_bits = bitwise_and(bits, 0x7FFFFFFF)
    a = _f32(abs_bits)
    shift = 23 - mbits
    min_normal = 2.0 ** (1 - ebias)
    denormal = logical_and(lt(a, min_normal), logical_not(over))
    # Subnormals: adding 2^(denorm_exp - 127) puts the code bits at the bottom, rounded by the FPU.
    denorm_exp = 127 - ebias + shift + 1
    denorm_code = _i32(add(a, 2.0 ** (denorm_exp - 127))) - (denorm_exp << 23)
    mant_odd = bitwise_and(_shr(abs_bits, shift), 1)
    normal_code = bitwise_and(_shr(abs_bits + (((ebias - 127) << 23) + (1 << (shift - 1)) - 1) + mant_odd, shift),
                              0x7F)
    code = where(denormal, denorm_code, normal_code)
    code = where(over, over_code, code)
    return bitwise_or(where(nan, 0x7F, code), sign)


def _encode_e4m3(x: Tensor, inf_is_nan: bool) -> Tensor:
    """fp32 -> E4M3 codes, saturating at +-448; an infinity gives NaN with inf_is_nan (torch's
    float8_e4m3fn), else +-448 (the MX quantizer)."""
    a = abs(x)
    nan = isnan(x)
    return _encode_fp8(x, 3, 7, ge(a, 448.0), 0x7E, logical_or(nan, eq(a, float("inf"))) if inf_is_nan else nan)


def _encode_e5m2(x: Tensor) -> Tensor:
    """fp32 -> E5M2 codes, overflow to inf (torch's float8_e5m2): halfway between 57344 and 2^16
    rounds (to even) to inf."""
    return _encode_fp8(x, 2, 15, ge(abs(x), 61440.0), 0x7C, isnan(x))


def _decode(x: Tensor) -> Tensor:
    """An MX tensor's values as fp32 (exact); DT_FP4_E2M1X2 [..., n] gives [..., 2n]."""
    if x.dtype == DT_FP4_E2M1X2:
        return _e2m1_value(_unpack_e2m1x2(x))
    if x.dtype == DT_FP4_E1M2X2:
        return _e1m2_value(_unpack_e2m1x2(x))
    b = _bytes_to_i32(x)
    if x.dtype == DT_HF8:
        return _hf8_value(b)
    if x.dtype == DT_FP8E5M2:  # the top byte of an fp16
        return cast(view(cast(b * 256, DT_UINT16), dtype=DT_FP16), DT_FP32)
    if x.dtype == DT_FP8E8M0:  # 2^(b - 127); 0xFF is NaN; 0 is the fp32 subnormal 2^-127
        v = _f32(where(eq(b, 0), 0x00400000, b * (1 << 23)))
        return where(eq(b, 255), float("nan"), v)
    # E4M3 (fn): no infinities, S.1111.111 is NaN, exponent 0 is subnormal (m * 2^-9).
    e = bitwise_and(_shr(b, 3), 0xF)
    m = bitwise_and(b, 7)
    negative = ge(b, 0x80)
    normal = _f32(bitwise_or(bitwise_or((b - e * 8 - m) * (1 << 24), (e + 120) * (1 << 23)), m * (1 << 20)))
    sub = mul(cast(m, DT_FP32), 2.0 ** -9)
    value = where(eq(e, 0), where(negative, mul(sub, -1.0), sub), normal)
    return where(eq(bitwise_and(b, 0x7F), 0x7F), float("nan"), value)


# --- HiFloat8 <-> fp32 ------------------------------------------------------------------------
# A sign bit, then a prefix-coded "dot" field that says how many bits the exponent has (the
# exponent's own sign first), then the mantissa in what is left: dot 11: |e| in 8..15, 1 mantissa
# bit; 10: 4..7, 2 bits; 01: 2..3, 3 bits; 001: |e| = 1, 3 bits; 0001: e = 0, 3 bits; 0000: the
# powers 2^-22 .. 2^-16 (m = 1..7, no mantissa), 0 (m = 0) and NaN (m = 0 with the sign set, the
# only NaN: there is no -0). S.11.0.1.111 is infinity; the largest finite value is 2^15. Every
# value is exact in bf16 and fp16.

def _hf8_value(b: Tensor) -> Tensor:
    """HiFloat8 codes (int32 0..255) as fp32 (exact): the fp32 bits are built from the fields."""
    low = bitwise_and(b, 0x7F)
    mag = where(ge(low, 0x60), bitwise_and(_shr(low, 1), 7) + 8,
                where(ge(low, 0x40), bitwise_and(_shr(low, 2), 3) + 4,
                      where(ge(low, 0x20), bitwise_and(_shr(low, 3), 1) + 2, bitwise_and(_shr(low, 4), 1))))
    e_negative = where(ge(low, 0x20), bitwise_and(_shr(low, 4), 1), bitwise_and(_shr(low, 3), 1))
    e = where(lt(low, 8), bitwise_and(low, 7) - 23, mag - e_negative * mag * 2)
    mant = where(ge(low, 0x60), bitwise_and(low, 1) * (1 << 22),
                 where(ge(low, 0x40), bitwise_and(low, 3) * (1 << 21),
                       where(ge(low, 8), bitwise_and(low, 7) * (1 << 20), 0)))
    v = where(eq(low, 0), 0.0, where(eq(low, 0x6F), float("inf"), _f32((e + 127) * (1 << 23) + mant)))
    v = where(ge(b, 0x80), mul(v, -1.0), v)
    return where(eq(b, 0x80), float("nan"), v)


def _encode_hf8(x: Tensor) -> Tensor:
    """fp32 -> HiFloat8 codes (int32 0..255): the nearest value, ties away from zero (the 950's
    ROUND_A, as PyPTO's golden and the PTO CPU simulator), saturating at +-2^15 (an infinity
    too); NaN gives 0x80, and results that round to 0 are +0. The magnitude's bits are rounded at
    the mantissa width of its binade (adding half a step, then clearing the step's bits: a carry
    into the next binade gives its power of two, which every width holds)."""
    negative = lt(_i32(x), 0)
    a = abs(x)
    a = where(ge(a, 32768.0), 32768.0, a)
    ab = _i32(a)
    e0 = _shr(ab, 23) - 127
    me0 = abs(e0)

    def rounded(shift: int) -> Tensor:
        return bitwise_and(ab + (1 << (shift - 1)), -(1 << shift))

    r = where(le(e0, -16), rounded(23), where(le(me0, 3), rounded(20), where(le(me0, 7), rounded(21), rounded(22))))
    e = _shr(r, 23) - 127
    me = abs(e)
    e_neg = bitwise_and(_shr(e, 27), 16)  # the exponent's sign bit in the 01 / 10 / 11 fields (e >= -22)
    m3, m2, m1 = bitwise_and(_shr(r, 20), 7), bitwise_and(_shr(r, 21), 3), bitwise_and(_shr(r, 22), 1)
    code = where(eq(e, 0), m3 + 0x08,
                 where(eq(me, 1), m3 + 0x10 + bitwise_and(_shr(e, 28), 8),
                       where(le(me, 3), m3 + 0x20 + e_neg + (me - 2) * 8,
                             where(le(me, 7), m2 + 0x40 + e_neg + (me - 4) * 4,
                                   where(le(me, 15), m1 + 0x60 + e_neg + (me - 8) * 2, e + 23)))))
    # Below 2^-22 (the smallest value) the nearest is 2^-22 from 2^-23 up (2^-23 a tie), else 0.
    code = where(lt(a, 2.0 ** -23), 0, where(lt(a, 2.0 ** -22), 1, code))
    code = where(logical_and(negative, ne(code, 0)), code + 0x80, code)
    return where(isnan(x), 0x80, code)


# --- FP4 E2M1, two per byte <-> fp32 ---------------------------------------------------------

def _e2m1_value(c: Tensor) -> Tensor:
    """E2M1 codes (int32 0..15) as fp32: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives."""
    m = bitwise_and(c, 7)
    e, mant = _shr(m, 1), bitwise_and(m, 1)
    normal = _f32((e + 126) * (1 << 23) + mant * (1 << 22))  # (1 + mant / 2) * 2^(e - 1)
    v = where(eq(e, 0), mul(cast(mant, DT_FP32), 0.5), normal)
    return where(ge(c, 8), mul(v, -1.0), v)


def _encode_e2m1(x: Tensor) -> Tensor:
    """fp32 -> E2M1 codes (int32 0..15), rounding to nearest even: |x| + 2^(e + 22) rounds |x| to
    the code's step (0.5 below 2, 1 below 4, 2 above) in the FPU; saturating at 6 (code 7), an
    infinity gives +-6, NaN the code 7 without a sign."""
    bits = _i32(x)
    sign = bitwise_and(_shr(bits, 28), 8)
    a = abs(x)
    exp = bitwise_and(_shr(_i32(a), 23), 0xFF)
    exp = where(lt(exp, 127), 127, where(gt(exp, 129), 129, exp))
    magic = (exp + 22) * (1 << 23)
    q = _i32(add(a, _f32(magic))) - magic
    code = q + (exp - 127) * 2
    code = where(gt(code, 7), 7, code)  # also an infinity
    return where(isnan(x), 7, bitwise_or(code, sign))


def _unpack_e2m1x2(x: Tensor) -> Tensor:
    """The codes of a DT_FP4_E2M1X2 tensor [..., n] as int32 [..., 2n] (low nibble first)."""
    b = _bytes_to_i32(x)
    pairs = concat([unsqueeze(bitwise_and(b, 15), -1), unsqueeze(_shr(b, 4), -1)], -1)
    return reshape(pairs, list(x.shape[:-1]) + [2 * x.shape[-1]])


def check_packable(x: Tensor, what: str, dtype: DataType) -> None:
    """The user's tensor, before its values are encoded: a two-per-byte FP4 format needs a static
    even last dim (the error names `x`, not an intermediate of the encoding)."""
    n = x.shape[-1] if x.shape else 1
    if not isinstance(n, int) or n % 2:
        raise _core.UserError(f"{what}: {_core.dtype_name(dtype)} packs two values per byte: the last dim of "
                              f"{x!r} must be static and even" + _suffix()
                              + "\nhint: pad the last dim to an even size (pypto.pad) before the cast")


def _pack_e2m1x2(codes: Tensor, what: str, dtype: DataType = DT_FP4_E2M1X2) -> Tensor:
    """int32 4-bit codes [..., 2n] as bytes [..., n] of ``dtype`` (a two-per-byte FP4 format)."""
    lead, n2 = list(codes.shape[:-1]), codes.shape[-1]
    if not isinstance(n2, int) or n2 % 2:
        raise _core.UserError(f"{what}: {_core.dtype_name(dtype)} packs two values per byte: the last dim of "
                              f"{codes!r} must be static and even" + _suffix())
    pairs = reshape(codes, lead + [n2 // 2, 2])
    at = [0] * (len(lead) + 2)
    lo = view(pairs, lead + [n2 // 2, 1], at)
    hi = view(pairs, lead + [n2 // 2, 1], at[:-1] + [1])
    return _as_format(reshape(bitwise_or(lo, hi * 16), lead + [n2 // 2]), dtype)


def _e1m2_value(c: Tensor) -> Tensor:
    """E1M2 codes (int32 0..15) as fp32: (c & 7) / 4, negative for c >= 8 (-0 for 8)."""
    v = mul(cast(bitwise_and(c, 7), DT_FP32), 0.25)
    return where(ge(c, 8), mul(v, -1.0), v)


def _encode_e1m2(x: Tensor) -> Tensor:
    """fp32 -> E1M2 codes (int32 0..15) as PyPTO's cast golden: |x| * 4 rounded to nearest even,
    saturating at 1.75 (code 7, an infinity too); the sign from x < 0 (so -0 gives 0, a small
    negative value the code 8); NaN the code 7 without a sign."""
    a = abs(x)
    code = cast(round_even(mul(where(gt(a, 1.75), 1.75, a), 4.0)), DT_INT32)  # exact: at most 7
    code = where(isnan(x), 7, code)  # (an infinity was clamped to 1.75 above)
    return where(lt(x, 0.0), bitwise_or(code, 8), code)


def logical_values(packed: Tensor, name: str, dtype: Any) -> Tensor:
    """A ``DT_FP4_E2M1`` / ``DT_FP4_E1M2`` parameter (``dtype``, a PackedDType) as the program
    sees it: the values of its bytes [..., n] as an fp32 tensor [..., 2n] (exact), marked so that
    views of it stay MX operands of scaled_mm and refuse writes (the bytes are the caller's;
    nothing is encoded back)."""
    with _AutoTiles():
        values = _decode(packed)
    values._mx_values = packed.dtype
    values._read_only = f"parameter '{name}' (pypto.{dtype.name}: its values, decoded from the caller's bytes)"
    return values


_FP4_X2 = (DT_FP4_E2M1X2, DT_FP4_E1M2X2)  # two values per byte: a conversion changes the last dim


def _as_format(code: Tensor, dtype: DataType) -> Tensor:
    return view(cast(code, DT_UINT8), dtype=dtype)


def convert(x: Tensor, dtype: DataType) -> Tensor:
    """pypto.cast where either side is an MX format."""
    if not x.shape and dtype not in _FP4_X2 and x.dtype not in _FP4_X2:
        # A 0-d tensor: the bit steps read its bits in another dtype, which needs a dim.
        return reshape(convert(reshape(x, [1]), dtype), [])
    with _AutoTiles():
        if x.dtype in STORAGE_DTYPES:
            if dtype == x.dtype:
                return x
            if dtype not in (DT_FP32, DT_FP16, DT_BF16):
                raise _core.UserError(f"pypto.cast: {x!r} converts to a float dtype (DT_FP32, DT_FP16, DT_BF16), "
                                      f"not {dtype}" + _suffix())
            v = _decode(x)
            return v if dtype == DT_FP32 else cast(v, dtype)
        if x.dtype not in (DT_FP32, DT_FP16, DT_BF16) or dtype == DT_FP8E8M0:
            raise _core.UserError(f"pypto.cast: {x!r} to {dtype}: the float dtypes convert to DT_FP8E4M3, "
                                  "DT_FP8E5M2, DT_HF8, DT_FP4_E2M1X2 and DT_FP4_E1M2X2 (E8M0 scales come from "
                                  "pypto.quant_mx)" + _suffix())
        x32 = x if x.dtype == DT_FP32 else cast(x, DT_FP32)
        if dtype == DT_FP4_E2M1X2:
            check_packable(x, "pypto.cast", dtype)
            return _pack_e2m1x2(_encode_e2m1(x32), "pypto.cast")
        if dtype == DT_FP4_E1M2X2:
            check_packable(x, "pypto.cast", dtype)
            return _pack_e2m1x2(_encode_e1m2(x32), "pypto.cast", DT_FP4_E1M2X2)
        if dtype == DT_HF8:
            code = _encode_hf8(x32)
        else:
            code = _encode_e4m3(x32, inf_is_nan=True) if dtype == DT_FP8E4M3 else _encode_e5m2(x32)
        return _as_format(code, dtype)


def round_tf32(x: Tensor, ties_to_even: bool) -> Tensor:
    """fp32 values rounded to TF32 (10 stored mantissa bits, fp32's exponent range), as the 950's
    matmul trans_mode converts its operands: to nearest, ties to even (CAST_RINT) or away from
    zero (CAST_ROUND); a value past TF32's largest rounds to inf; inf and NaN stay as they are."""
    with _AutoTiles():
        b = _i32(x)
        half = (_shr(b, 13) & 1) + 0xFFF if ties_to_even else 0x1000  # the 13 dropped bits round
        r = (b + half) & -0x2000
        special = eq(b & 0x7F800000, 0x7F800000)  # inf and NaN: a carry would change them
        return _f32(where(special, b, r))


# --- quant_mx --------------------------------------------------------------------------------

