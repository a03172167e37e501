"""pypto.matmul: a @ b on the cube unit, with PyPTO's operand rules (valid K, 8-bit float and
TF32 operands) and its fixpipe steps (ops/fixpipe.py)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple, Union

import pypto._core as _core
from ..._core import DataType
from .._dtypes import DT_BF16, DT_FP8E4M3, DT_FP8E5M2, DT_FP32, DT_HF8, check_dtype
from .._tracing import batched_tiles, current_recorder, user_loc
from ..tensor import Tensor
from .core import TransMode, _is_dynamic, _suffix, _t, exact_view, same_extent
from .fixpipe import fixpipe
from .mx_codec import convert, round_tf32

__all__ = ["matmul"]


_EXTEND_KEYS = ("bias_tensor", "scale", "scale_tensor", "relu_type", "trans_mode")


def _same_batch_and_k(a: Tensor, b: Tensor, a_trans: bool, b_trans: bool) -> Tuple[Tensor, Tensor]:
    """b with a's extents along K and the batch dims where the two are the same for every call
    but written over different inputs' dims (the tail tiles of a [DYNAMIC, m, k] and a
    [DYNAMIC, k, n] input: same_extent)."""
    bshape = list(b.shape)
    k_a, k_b = (a.ndim - 2 if a_trans else a.ndim - 1), (b.ndim - 1 if b_trans else b.ndim - 2)
    pairs = [(k_a, k_b)] + [(a.ndim - 3 - j, b.ndim - 3 - j) for j in range(min(a.ndim, b.ndim) - 2)]
    changed = False
    for da, db in pairs:
        ea, eb = a.shape[da], b.shape[db]
        if _is_dynamic(ea) and _is_dynamic(eb) and not _core.to_sym(ea).same_as(_core.to_sym(eb)) and same_extent(
                ea, eb, f"dim {da} of {a!r} and dim {db} of {b!r} in pypto.matmul"):
            bshape[db], changed = ea, True
    return a, (exact_view(b, bshape, [0] * len(bshape)) if changed else b)


def _valid_k(a: Tensor, b: Tensor, a_trans: bool, b_trans: bool) -> Tuple[Tensor, Tensor]:
    """PyPTO's valid-shape rule for K: an operand whose K is a run-time extent (the valid part of
    a view, `view(..., valid_shape=[m, n])`) against one with a static K contracts over that
    valid K, the static operand's first K rows (or columns) taking part; the view checks at run
    time that they exist."""
    a, b = _same_batch_and_k(a, b, a_trans, b_trans)
    ka = a.shape[-2] if a_trans else a.shape[-1]
    kb = b.shape[-1] if b_trans else b.shape[-2]

    def dynamic(d: Any) -> bool:
        return isinstance(d, _core.SymbolicScalar) and not d.is_concrete()
    if isinstance(ka, int) == isinstance(kb, int) or not (dynamic(ka) or dynamic(kb)):
        return a, b

    def trim(t: Tensor, k: Any, k_axis: int) -> Tensor:
        shape = list(t.shape)
        shape[k_axis] = k
        return exact_view(t, shape, [0] * len(shape))
    if isinstance(kb, int):
        return a, trim(b, ka, -1 if b_trans else -2)
    return trim(a, kb, -2 if a_trans else -1), b


_FLOAT8 = (DT_FP8E4M3, DT_FP8E5M2, DT_HF8)


def matmul(a: Tensor, b: Tensor, out_dtype: Union[DataType, None] = None, *, a_trans: bool = False,
           b_trans: bool = False, c_matrix_nz: bool = False, extend_params: Optional[Dict[str, Any]] = None) -> Tensor:
    """a @ b on the cube unit. a is [..., M, K] ([..., K, M] with a_trans), b is [K, N] or
    [..., K, N] ([..., N, K] with b_trans). fp32, fp16 and bf16 accumulate in fp32; int8
    accumulates exactly in int32; DT_FP8E4M3, DT_FP8E5M2 and DT_HF8 (both operands alike)
    multiply exactly and sum in fp32. out_dtype defaults to the input dtype (int32 for int8,
    fp32 for the 8-bit floats).

    ``extend_params`` (PyPTO's fixpipe steps, applied to the accumulator in this order before the
    conversion to out_dtype): ``bias_tensor`` ([1, N], added), ``scale`` (a float) or
    ``scale_tensor`` ([1, N]) (multiplied, in fp32: int8 dequantization), ``relu_type``
    (ReLuType.RELU)."""
    rec = current_recorder("matmul")
    a = _t(a, "matmul")
    b = _t(b, "matmul")
    if out_dtype is not None:
        out_dtype = check_dtype(out_dtype, "pypto.matmul: out_dtype", _suffix())
    if a.dtype in _FLOAT8 or b.dtype in _FLOAT8:
        # 8-bit float operands (the 950's FP8 and HiFloat8 matmuls): their values are exact in
        # bf16, so the bf16 cube path gives exact products summed in fp32, as the NPU's.
        if a.dtype != b.dtype:
            raise _core.UserError(f"pypto.matmul: {a!r} and {b!r}: 8-bit float operands must have one dtype"
                                  + _suffix())
        a, b = convert(a, DT_BF16), convert(b, DT_BF16)
        out_dtype = DT_FP32 if out_dtype is None else out_dtype
    if c_matrix_nz:
        raise _core.UserError("pypto.matmul: c_matrix_nz=True (an NZ-format result) is not supported: results are "
                              "row-major" + _suffix())
    ext = dict(extend_params or {})
    unknown = sorted(set(ext) - set(_EXTEND_KEYS))
    if unknown:
        raise _core.UserError(f"pypto.matmul: unknown extend_params key {unknown[0]!r}" + _suffix()
                              + f"\nhint: known keys are {', '.join(_EXTEND_KEYS)}")
    trans = ext.get("trans_mode", TransMode.CAST_NONE)
    if not isinstance(trans, TransMode):
        raise _core.UserError(f"pypto.matmul: trans_mode must be a pypto.TransMode, got {trans!r}" + _suffix())
    if trans != TransMode.CAST_NONE:
        # TF32 operands (the 950): rounded here; their products are exact in fp32, as the cube's.
        if a.dtype != DT_FP32 or b.dtype != DT_FP32 or out_dtype not in (None, DT_FP32):
            raise _core.UserError(f"pypto.matmul: trans_mode {trans} needs fp32 operands and an fp32 result, got "
                                  f"{a!r}, {b!r}, out_dtype {out_dtype}" + _suffix())
        a, b = (round_tf32(v, trans == TransMode.CAST_RINT) for v in (a, b))
    if "scale" in ext and "scale_tensor" in ext:
        raise _core.UserError("pypto.matmul: give extend_params 'scale' or 'scale_tensor', not both" + _suffix())
    a, b = _valid_k(a, b, bool(a_trans), bool(b_trans))
    if not any(k in ext for k in ("bias_tensor", "scale", "scale_tensor", "relu_type")):
        return Tensor(_rec=rec, _id=rec.matmul(a._id, b._id, out_dtype, bool(a_trans), bool(b_trans), user_loc()))
    acc_dtype = _core.DataType.INT32 if a.dtype == _core.DataType.INT8 else DT_FP32
    c = Tensor(_rec=rec, _id=rec.matmul(a._id, b._id, acc_dtype, bool(a_trans), bool(b_trans), user_loc()))
    want = out_dtype if out_dtype is not None else (acc_dtype if a.dtype == _core.DataType.INT8 else a.dtype)
    with batched_tiles("matmul", c.ndim):  # PyPTO fuses these in the fixpipe: no vec tile of c's rank
        return fixpipe(c, ext, acc_dtype, want)
