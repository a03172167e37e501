"""CPU versions of the torch_npu kernels that PyPTO's model tests use for their golden data.

CANN PyPTO's GLM and DeepSeek tests compute their expected outputs with a few fused NPU kernels
(per-token dynamic quantization, the quantized matmul, SwiGLU, static quantization). There is no
NPU here, so `pypto.npu_compat` puts these in its ``torch_npu`` module: each computes what the
torch_npu documentation specifies, in float32 with one rounding at the end (as the NPU's
vector units do), so a test's golden is the same function of its inputs. Arguments a test
could pass but these do not implement (int4 outputs, MoE group indices) raise a clear error.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple
from ..core.hifloat8 import from_hifloat8, to_hifloat8

_INT_RANGES = {"int8": (-128, 127), "qint8": (-128, 127), "uint8": (0, 255), "quint8": (0, 255),
               "int32": (-2**31, 2**31 - 1), "qint32": (-2**31, 2**31 - 1), "int16": (-2**15, 2**15 - 1)}


def _unsupported(kernel: str, what: str) -> NotImplementedError:
    return NotImplementedError(f"torch_npu.{kernel}: {what} has no CPU version here (pypto.npu_reference)")


def _int_dtype(torch: Any, dtype: Any, kernel: str) -> Tuple[Any, int, int]:
    """The integer tensor dtype a quantized dtype stands for (qint8 -> int8) and its range."""
    name = str(dtype).replace("torch.", "")
    if name not in _INT_RANGES:
        raise _unsupported(kernel, f"the output dtype {dtype}")
    lo, hi = _INT_RANGES[name]
    plain = {"qint8": "int8", "quint8": "uint8", "qint32": "int32"}.get(name, name)
    return getattr(torch, plain), lo, hi


class _HiFloat8:
    """torch_npu.hifloat8: the dtype torch_npu names HiFloat8 by. torch has none; tensors of it
    are uint8 bytes here (pypto.hifloat8 converts them)."""

    def __repr__(self) -> str:
        return "torch_npu.hifloat8"


hifloat8 = _HiFloat8()


def npu_dtype_cast(input: Any, dtype: Any, *, input_dtype: Any = None) -> Any:  # noqa: A002 - torch_npu's name
    """``input.to(dtype)``, with HiFloat8 on either side: to ``hifloat8`` gives the uint8 bytes
    (nearest, ties away from zero, saturating at +-2^15), and bytes with
    ``input_dtype=hifloat8`` give their values in ``dtype``."""
    import torch

    if dtype is hifloat8:
        return torch.from_numpy(to_hifloat8(input.detach().cpu().float()))
    if input_dtype is hifloat8:
        return torch.from_numpy(from_hifloat8(input.detach().cpu())).to(dtype)
    return input.to(dtype)


def npu_dynamic_quant(x: Any, *, smooth_scales: Any = None, group_index: Any = None,
                      dst_type: Any = None) -> Tuple[Any, Any]:
    """Per-token symmetric quantization: scale = max|x| / 127 over the last dim (after
    x * smooth_scales), y = round(x / scale) in int8; with dst_type=torch.float8_e4m3fn, scale =
    max|x| / 448 and y = x / scale rounded to E4M3; with hifloat8, scale = max|x| / 2^15 and y the
    HiFloat8 bytes of x / scale. Returns (y, scale float32 of x.shape[:-1])."""
    import torch
    if group_index is not None:
        raise _unsupported("npu_dynamic_quant", "group_index (MoE smooth scales)")
    fp8 = dst_type == getattr(torch, "float8_e4m3fn", None)
    hf8 = dst_type is hifloat8
    if dst_type is not None and not hf8 and dst_type != torch.int8 and not fp8:
        raise _unsupported("npu_dynamic_quant", f"dst_type={dst_type}")
    xf = x.float()
    if smooth_scales is not None:
        xf = xf * smooth_scales.float()
    row_max = xf.abs().amax(dim=-1, keepdim=True)
    scale = row_max / (448.0 if fp8 else 32768.0 if hf8 else 127.0)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    if hf8:
        y = npu_dtype_cast(xf / safe, hifloat8)
    else:
        y = (xf / safe).to(dst_type) if fp8 else torch.round(xf / safe).clamp(-128, 127).to(torch.int8)
    return y, scale.squeeze(-1)


def npu_rms_norm(x: Any, gamma: Any, epsilon: float = 1e-6) -> Tuple[Any, Any]:
    """x / sqrt(mean(x^2 over the last dim) + epsilon) * gamma in float32, in x's dtype; and
    the float32 reciprocal root (x.shape[:-1] + (1,))."""
    import torch
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + epsilon)
    return (xf * rstd * gamma.float()).to(x.dtype), rstd


def npu_rotary_mul(x: Any, r1: Any, r2: Any, rotary_mode: str = "half") -> Any:
    """x * r1 + rotate_half(x) * r2 (rotate_half: [-x2, x1] of the halves of the last dim), in
    float32, in x's dtype."""
    import torch
    if rotary_mode != "half":
        raise _unsupported("npu_rotary_mul", f"rotary_mode={rotary_mode!r}")
    xf = x.float()
    x1, x2 = xf.chunk(2, dim=-1)
    return (xf * r1.float() + torch.cat((-x2, x1), dim=-1) * r2.float()).to(x.dtype)


def _mx_quant_matmul(x1: Any, x2: Any, scale: Any, pertoken_scale: Any, bias: Any, output_dtype: Any,
                     group_sizes: list) -> Any:
    """The MX form (group_sizes [1, 1, g]): x1 [M, K] and x2 [K, N] in FP8, every g values along
    K scaled by an E8M0 exponent (pertoken_scale [M, K / 64, 2], scale [K / 64, N, 2]); exact
    products summed in float64, rounded once into output_dtype."""
    import torch
    if len(group_sizes) != 3 or group_sizes[0] != 1 or group_sizes[1] != 1 or pertoken_scale is None:
        raise _unsupported("npu_quant_matmul", f"group_sizes={group_sizes} (only [1, 1, g] with pertoken_scale)")
    g = int(group_sizes[2])
    m, k = x1.shape
    n = x2.shape[1]
    sa = pertoken_scale.double().reshape(m, -1)[:, :k // g].repeat_interleave(g, dim=1)
    sb = scale.double().transpose(1, 2).reshape(-1, n)[:k // g].repeat_interleave(g, dim=0)
    out = (x1.double() * sa) @ (x2.double() * sb)
    if bias is not None:
        out = out + bias.double()
    return out.to(output_dtype or torch.float32)


def npu_quant_matmul(x1: Any, x2: Any, scale: Any, *, offset: Any = None, pertoken_scale: Any = None,
                     bias: Any = None, output_dtype: Any = None, **kwargs: Any) -> Any:
    """int8 x int8 (or HiFloat8 bytes with ``x1_dtype`` / ``x2_dtype=hifloat8``) matmul
    accumulated exactly, an int32 bias added to the accumulator (a float bias after
    dequantization), times ``scale`` (per output column or one value) and
    ``pertoken_scale`` (per row), in float32, rounded once into ``output_dtype`` (int8 when
    None, with ``offset`` added before that rounding)."""
    import torch
    if kwargs.get("x1_dtype") is hifloat8:  # HiFloat8 bytes: their values, exact in float64
        x1 = npu_dtype_cast(x1, torch.float64, input_dtype=hifloat8)
    if kwargs.get("x2_dtype") is hifloat8:
        x2 = npu_dtype_cast(x2, torch.float64, input_dtype=hifloat8)
    if kwargs.get("group_sizes") is not None:
        return _mx_quant_matmul(x1, x2, scale, pertoken_scale, bias, output_dtype, list(kwargs["group_sizes"]))
    acc = torch.matmul(x1.to(torch.float64), x2.to(torch.float64))  # exact: |sum| < 2^53
    if bias is not None and not bias.dtype.is_floating_point:
        acc = acc + bias.to(torch.float64)
    out = acc.float()
    s = scale.float() if scale.dtype != torch.int64 else \
        (scale & 0xFFFFFFFF).to(torch.int32).view(torch.float32)  # a scale packed in int64 (uint64 ABI)
    out = out * s
    if pertoken_scale is not None:
        out = out * pertoken_scale.float().unsqueeze(-1)
    if bias is not None and bias.dtype.is_floating_point:
        out = out + bias.float()
    if output_dtype is None or output_dtype == torch.int8:
        if offset is not None:
            out = out + offset.float()
        return torch.round(out).clamp(-128, 127).to(torch.int8)
    return out.to(output_dtype)


def npu_swiglu(x: Any, dim: int = -1) -> Any:
    """SwiGLU: x split in two halves along ``dim``, silu(first) * second, in float32."""
    import torch
    a, b = x.float().chunk(2, dim=dim)
    return (torch.nn.functional.silu(a) * b).to(x.dtype)


def npu_quantize(input: Any, scales: Any, zero_points: Optional[Any], dtype: Any, axis: int = 1,  # noqa: A002
                 div_mode: bool = True) -> Any:
    """Static quantization: round(x / scales + zero_points) (``div_mode``) or round(x * scales +
    zero_points), the scales and zero points laid along ``axis``, clamped to ``dtype``'s range."""
    import torch
    target, lo, hi = _int_dtype(torch, dtype, "npu_quantize")
    xf = input.float()

    def along(t: Any) -> Any:
        t = t.float()
        if t.numel() == 1:
            return t.reshape([])
        shape = [1] * xf.dim()
        shape[axis] = t.numel()
        return t.reshape(shape)

    y = xf / along(scales) if div_mode else xf * along(scales)
    if zero_points is not None:
        y = y + along(zero_points)
    return torch.round(y).clamp(lo, hi).to(target)


def npu_trans_quant_param(scale: Any, offset: Any = None) -> Any:
    """A float32 dequantization scale ([n] or [1, n]) in the uint64 form the NPU's quantized
    matmuls read (as int64, torch's nearest type): the scale's float32 bits, with the 13 low
    mantissa bits the fixpipe drops cleared, in the low 32 bits. ``offset`` is not encoded here."""
    import torch
    if offset is not None:
        raise NotImplementedError("npu_trans_quant_param: an offset is not encoded by this CPU version")
    bits = scale.float().contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    return bits & 0xFFFFE000


KERNELS = {f.__name__: f for f in (npu_dtype_cast, npu_dynamic_quant, npu_quant_matmul, npu_swiglu, npu_quantize,
                                    npu_rms_norm, npu_rotary_mul, npu_trans_quant_param)}
