"""The matmul fixpipe: PyPTO's ``extend_params`` steps on a matmul's fp32 (int32) accumulator,
in the NPU's order (bias, scale or scale tensor, ReLU), then the one conversion to the output
dtype. ``matmul``, ``scaled_mm`` and ``conv`` end with it."""

from __future__ import annotations

from typing import Any, Dict

import pypto._core as _core
from ..._core import DataType
from .._dtypes import DT_FP32, DT_INT64, DT_UINT32, DT_UINT64, is_float_dtype, is_int_dtype
from ..tensor import Tensor
from .cast import cast
from .core import CastMode, ReLuType, _suffix, _t, add, mul, relu, view
from .shape import reshape
from .logic import bitwise_and


def _scale_tensor(st: Tensor) -> Tensor:
    """A scale_tensor as fp32: float values as they are; a 64-bit integer one holds the NPU's
    packed form (torch_npu.npu_trans_quant_param: the fp32 bits in the low 32 bits), of which the
    fixpipe uses sign, exponent and 10 mantissa bits."""
    if st.dtype not in (DT_INT64, DT_UINT64):
        return st if st.dtype == DT_FP32 else cast(st, DT_FP32)
    words = view(st, dtype=DT_UINT32)  # [..., 2n]: the low word first (little-endian)
    lead, n2 = list(words.shape[:-1]), words.shape[-1]
    pairs = reshape(words, lead + [n2 // 2, 2])
    low = reshape(view(pairs, lead + [n2 // 2, 1], [0] * (len(lead) + 2)), lead + [n2 // 2])
    return view(bitwise_and(low, 0xFFFFE000), dtype=DT_FP32)


def _per_column(t: Tensor, c: Tensor) -> Tensor:
    """A fixpipe operand [..., N'] for the result c [..., N]: when N' is another run-time extent
    than c's (the bias window of a tail tile, clipped from a static bias, beside the tile of a
    dynamic output), it is read over c's extent, which the run time checks lies inside it (the
    fixpipe reads N values)."""
    n, nt = c.shape[-1] if c.shape else 1, t.shape[-1] if t.shape else 1
    if isinstance(nt, int) and (nt == 1 or isinstance(n, int)) or _core.to_sym(n).same_as(_core.to_sym(nt)):
        return t
    bound = getattr(t, "_padded_shape", None)
    bound = bound[-1] if bound else (nt.upper_bound() if isinstance(nt, _core.SymbolicScalar) else nt)
    if not isinstance(bound, int):
        return t  # no static bound to read it over: add's own check names the shapes
    lead = list(t.shape[:-1])
    return view(t, lead + [bound], [0] * t.ndim, valid_shape=lead + [n])


def fixpipe(c: Tensor, ext: Dict[str, Any], acc_dtype: DataType, want: DataType) -> Tensor:
    """matmul's extend_params steps on the accumulator c: bias, scale, ReLU, then out_dtype."""
    if "bias_tensor" in ext:
        bias = _per_column(_t(ext["bias_tensor"], "matmul"), c)
        c = add(c, bias if bias.dtype == acc_dtype else cast(bias, acc_dtype))
    if "scale" in ext or "scale_tensor" in ext:
        c = c if c.dtype == DT_FP32 else cast(c, DT_FP32)
        if "scale" in ext:
            c = mul(c, float(ext["scale"]))
        else:
            c = mul(c, _per_column(_scale_tensor(_t(ext["scale_tensor"], "matmul")), c))
    relu_type = ext.get("relu_type", ReLuType.NO_RELU)
    if not isinstance(relu_type, ReLuType):
        raise _core.UserError(f"pypto.matmul: relu_type must be a pypto.ReLuType, got {relu_type!r}" + _suffix())
    if relu_type == ReLuType.RELU:
        c = relu(c)
    if c.dtype == want:
        return c
    # The fixpipe's quantization to an integer rounds to nearest even and saturates (torch.round
    # then clamp in PyPTO's goldens); pypto.cast's default for a float would truncate.
    scaled = "scale" in ext or "scale_tensor" in ext
    return cast(c, want, CastMode.CAST_RINT if scaled and is_int_dtype(want) and is_float_dtype(c.dtype) else
                CastMode.CAST_NONE)
