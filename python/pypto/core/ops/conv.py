"""PyPTO's convolution: ``conv`` (1-D, 2-D and 3-D, NCL / NCHW / NCDHW), with its tile-shape
configuration (``set_conv_tile_shapes`` with ``TileL1Info`` / ``TileL0Info``) and ``ConvReLuType``.

On the CPU a convolution is an implicit im2col followed by one matmul per group: the input,
flattened over its spatial dims, is gathered along that axis at the positions every (kernel
offset, output position) pair reads (an index computed in the kernel from ``arange``; padding is
a mask, so nothing is copied to a padded buffer), giving ``[B, Cin * KK, L]`` (KK kernel
positions, L output positions); the weight reshaped to ``[Cout, Cin * KK]`` multiplies it on the
cube unit, accumulating in fp32. Bias, scale and ReLU are the fixpipe steps on the fp32 result,
rounded once to ``out_dtype``."""

from __future__ import annotations

import enum
import math as _pymath
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pypto._core as _core
from .._dtypes import DT_BF16, DT_FP16, DT_FP32, DataType, check_dtype
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor
from .cast import cast
from .core import _suffix, _t, add, assemble, mul, relu, ReLuType, view
from .matmul import matmul
from .creation import arange, full
from .index import index_select
from .logic import clip, ge, logical_and, lt, where
from .math import floor_div, remainder
from .shape import concat, permute, reshape, unsqueeze
from ..tensor_factory import tensor as new_tensor

__all__ = ["conv", "ConvReLuType", "TileL1Info", "TileL0Info", "set_conv_tile_shapes", "get_conv_tile_shapes"]


class ConvReLuType(enum.Enum):
    """The fixpipe activation of ``conv`` (PyPTO's ``pypto_impl.ConvReLuType``)."""
    NO_RELU = 0
    RELU = 1


def _int_fields(cls_name: str, names: Sequence[str], args: Sequence[Any], kwargs: Dict[str, Any]) -> List[int]:
    if len(args) > len(names):
        raise _core.UserError(f"pypto_impl.{cls_name} takes at most {len(names)} values, got {len(args)}"
                              + _suffix())
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise _core.UserError(f"pypto_impl.{cls_name}: unknown field {k!r}; the fields are {', '.join(names)}"
                                  + _suffix())
        if k in values:
            raise _core.UserError(f"pypto_impl.{cls_name}: {k} given twice" + _suffix())
        values[k] = v
    out = []
    for n in names:
        v = values.get(n, 0)
        if isinstance(v, _core.SymbolicScalar) and v.is_const():  # pypto.symbolic_scalar(32)
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise _core.UserError(f"pypto_impl.{cls_name}: {n} must be a non-negative int, got {v!r}" + _suffix())
        out.append(v)
    return out


class _TileInfo:
    """A named list of tile extents, given positionally or by field name (PyPTO's keywords)."""
    FIELDS: Tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        name = type(self).__name__
        for n, v in zip(self.FIELDS, _int_fields(name, self.FIELDS, args, kwargs)):
            setattr(self, n, v)

    def values(self) -> List[int]:
        return [getattr(self, n) for n in self.FIELDS]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.values()})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.values() == other.values()  # type: ignore[attr-defined]


class TileL1Info(_TileInfo):
    """L1 tile shape of a convolution (PyPTO's ``pypto_impl.TileL1Info``): input and output rows
    and columns, input channels of the feature map and of the weight, output channels (tileN)
    and batch."""
    FIELDS = ("tileHin", "tileHout", "tileWin", "tileWout", "tileCinFmap", "tileCinWeight", "tileN", "tileBatch")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "tileCout" in kwargs:  # the name PyPTO's docstring example uses for tileN
            kwargs["tileN"] = kwargs.pop("tileCout")
        super().__init__(*args, **kwargs)


class TileL0Info(_TileInfo):
    """L0 tile shape of a convolution (PyPTO's ``pypto_impl.TileL0Info``): tileH, tileW, tileK,
    tileN."""
    FIELDS = ("tileH", "tileW", "tileK", "tileN")


# The conv tile shapes set last (PyPTO keeps them in its global configuration, as here).
_conv_tiles: List[Any] = []


def set_conv_tile_shapes(tile_l1_info: TileL1Info, tile_l0_info: Optional[TileL0Info] = None) -> None:
    """The L1 / L0 tile shapes of the convolutions recorded after this call, as PyPTO's NPU
    kernels cut them. The CPU's convolution is a gather and a matmul whose tiles come from the
    vec and cube tile shapes (automatic when unset), so these are checked and kept (returned by
    ``get_conv_tile_shapes``), not used to schedule."""
    if not isinstance(tile_l1_info, TileL1Info):
        raise _core.UserError(f"pypto.set_conv_tile_shapes: tile_l1_info must be a pypto_impl.TileL1Info, got "
                              f"{tile_l1_info!r}" + _suffix())
    if tile_l0_info is not None and not isinstance(tile_l0_info, TileL0Info):
        raise _core.UserError(f"pypto.set_conv_tile_shapes: tile_l0_info must be a pypto_impl.TileL0Info, got "
                              f"{tile_l0_info!r}" + _suffix())
    if tile_l1_info.tileBatch not in (0, 1):
        raise _core.UserError(f"pypto.set_conv_tile_shapes: tileBatch must be 1 (one batch per L1 tile, as on the "
                              f"NPU), got {tile_l1_info.tileBatch}" + _suffix())
    _conv_tiles[:] = [tile_l1_info, tile_l0_info or TileL0Info(), tile_l0_info is not None]


def get_conv_tile_shapes() -> Tuple[Any, ...]:
    """(TileL1Info, TileL0Info, whether an L0 tile was set), or () before any
    ``set_conv_tile_shapes``."""
    return tuple(_conv_tiles)


def _ints(name: str, v: Any, n: int, lo: int, hi: int) -> List[int]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v] * n
    if (not isinstance(v, (list, tuple)) or len(v) != n
            or any(not isinstance(x, int) or isinstance(x, bool) or not lo <= x <= hi for x in v)):
        raise _core.UserError(f"pypto.conv: {name} must be {n} ints in [{lo}, {hi}], got {v!r}" + _suffix())
    return list(v)


def _static(what: str, dims: Sequence[Any]) -> List[int]:
    if any(not isinstance(d, int) for d in dims):
        raise _core.UserError(f"pypto.conv: the {what} {tuple(dims)} must be static (only the batch may be dynamic)"
                              + _suffix() + "\nhint: annotate those dims with numbers or pypto.STATIC")
    return list(dims)


def _spatial_bounds(x: Tensor, pads: List[int]) -> Tuple[List[int], Optional[List[Any]]]:
    """The static spatial extents the convolution is computed on, and the run-time ones when a
    spatial dim is dynamic with a static bound (a view with ``valid_shape``, the last tile of a
    loop over the output rows), else None."""
    dims = list(x.shape[2:])
    if all(isinstance(d, int) for d in dims):
        return dims, None
    padded = getattr(x, "_padded_shape", None)
    bounds = []
    for d, s in enumerate(dims):
        if isinstance(s, int):
            bounds.append(s)
            continue
        b = padded[d + 2] if padded is not None and isinstance(padded[d + 2], int) else (
            s.upper_bound() if isinstance(s, _core.SymbolicScalar) else None)
        if b is None:
            raise _core.UserError(f"pypto.conv: spatial dim {d} of the input {x!r} is dynamic without a static bound"
                                  + _suffix() + "\nhint: take a view of a fixed shape with valid_shape= (the tile of a "
                                  "loop over the output), or annotate the dim with a number")
        if pads[2 * d] or pads[2 * d + 1]:
            raise _core.UserError(f"pypto.conv: spatial dim {d} of the input {x!r} is dynamic and padded; padding is "
                                  "supported on static dims only (as in PyPTO)" + _suffix())
        bounds.append(int(b))
    return bounds, dims


def _padded_flat(x: Tensor, pads: List[int], extra: int) -> Tensor:
    """x [B, C, *S] placed in zeros (pads: before, after per spatial dim), flattened over its
    spatial dims, with at least ``extra`` zeros after the last element: [B, C, >= P + extra].
    One zero fill and one copy (a spare run of rows along the first spatial dim holds the extra
    zeros, so nothing is concatenated)."""
    batch, cin, *spatial = x.shape
    nd = len(spatial)
    padded = [spatial[d] + pads[2 * d] + pads[2 * d + 1] for d in range(nd)]
    inner = _pymath.prod(padded[1:])
    padded[0] += -(-extra // inner)  # spare rows of zeros past the end
    if not any(pads) and padded[0] == spatial[0]:
        return reshape(x, [batch, cin, _pymath.prod(spatial)])
    whole = new_tensor([batch, cin, *padded], x.dtype)
    whole.move(full([batch, cin, *padded], 0.0, x.dtype))
    assemble(x, [0, 0] + [pads[2 * d] for d in range(nd)], whole)
    return reshape(whole, [batch, cin, _pymath.prod(padded)])


def _shifted_windows(x: Tensor, spatial: List[int], kernel: List[int], out: List[int], dil: List[int],
                     pads: List[int], groups: int) -> Tuple[List[Tensor], List[int]]:
    """Stride 1: im2col by contiguous copies. On the padded input flattened over its spatial dims,
    kernel offset k reads the output positions of the grid [O_0, P_1, ..., P_n] (P: padded
    extents) at a fixed shift, so each offset's column block is one window of the flat input
    (no gather). Returns, per group, [B, KK * Cin_g, L'] ordered (kernel offset, channel) so
    every block is one window copy (L' the grid's size), and the grid; the positions of the grid
    past O in dims >= 1 are computed and dropped by the caller."""
    batch, cin = x.shape[0], x.shape[1]
    cin_g = cin // groups
    nd = len(spatial)
    padded = [spatial[d] + pads[2 * d] + pads[2 * d + 1] for d in range(nd)]
    strides_in = [_pymath.prod(padded[d + 1:]) for d in range(nd)]
    grid = [out[0]] + padded[1:]
    l_n = _pymath.prod(grid)
    # The last windows reach past the padded input: zeros (they feed dropped positions).
    extra = sum((kernel[d] - 1) * dil[d] * strides_in[d] for d in range(1, nd))
    flat = _padded_flat(x, pads, extra)
    shifts = []
    for k in range(_pymath.prod(kernel)):
        offs, rest = [], k
        for d in reversed(range(nd)):
            offs.append(rest % kernel[d])
            rest //= kernel[d]
        offs.reverse()
        shifts.append(sum(offs[d] * dil[d] * strides_in[d] for d in range(nd)))
    cols = []
    for g in range(groups):
        windows = [view(flat, [batch, cin_g, l_n], [0, g * cin_g, sh]) for sh in shifts]
        cols.append(windows[0] if len(windows) == 1 else concat(windows, 1))
    return cols, grid


def _gather_index(spatial: List[int], kernel: List[int], out: List[int], strides: List[int],
                  dilations: List[int], pad_lo: List[int]) -> Tuple[Tensor, Optional[Tensor]]:
    """The flat input position each (kernel offset, output position) reads, as a [KK * L] int32
    tensor (kernel offset major), and where it falls into the padding, a [KK * L] bool mask that
    is True inside the input (None without padding)."""
    kk_n, l_n = _pymath.prod(kernel), _pymath.prod(out)
    l_idx, k_idx = arange(l_n), arange(kk_n)
    flat: Optional[Tensor] = None
    inside: Optional[Tensor] = None
    for d in range(len(spatial)):
        o = l_idx if len(spatial) == 1 else remainder(floor_div(l_idx, _pymath.prod(out[d + 1:])), out[d])
        k = k_idx if len(spatial) == 1 else remainder(floor_div(k_idx, _pymath.prod(kernel[d + 1:])), kernel[d])
        pos = add(unsqueeze(mul(k, dilations[d]), 1), unsqueeze(mul(o, strides[d]), 0))  # [KK, L]
        if pad_lo[d]:
            pos = add(pos, -pad_lo[d])
        reach = (kernel[d] - 1) * dilations[d] + (out[d] - 1) * strides[d] - pad_lo[d]
        if pad_lo[d] or reach >= spatial[d]:
            ok = logical_and(ge(pos, 0), lt(pos, spatial[d]))
            inside = ok if inside is None else logical_and(inside, ok)
            pos = clip(pos, 0, spatial[d] - 1)
        term = pos if d == len(spatial) - 1 else mul(pos, _pymath.prod(spatial[d + 1:]))
        flat = term if flat is None else add(flat, term)
    assert flat is not None
    return reshape(flat, [kk_n * l_n]), None if inside is None else reshape(inside, [kk_n * l_n])


def conv(input_conv: Tensor, weight: Tensor, out_dtype: DataType, strides: Sequence[int], paddings: Sequence[int],
         dilations: Sequence[int], *, groups: int = 1, transposed: bool = False,
         output_paddings: Optional[Sequence[int]] = None, extend_params: Optional[Dict[str, Any]] = None) -> Tensor:
    """Convolution of ``input_conv`` [B, Cin, *S] (S: L, H W or D H W) with ``weight``
    [Cout, Cin / groups, *K], as ``torch.nn.functional.conv1d/2d/3d``: ``strides`` and
    ``dilations`` one per spatial dim, ``paddings`` two (before, after) per spatial dim.
    ``extend_params`` takes PyPTO's ``bias_tensor`` ([Cout]), ``scale`` (a float multiplying the
    result) and ``relu_type`` (``ConvReLuType``). fp32, fp16 and bf16 accumulate in fp32 and round
    once to ``out_dtype``. The batch may be dynamic; the other dims are static."""
    rec = current_recorder("conv")
    x, w = _t(input_conv, "conv"), _t(weight, "conv")
    if transposed or output_paddings:
        raise _core.UserError("pypto.conv: transposed convolution is not supported (nor by PyPTO)" + _suffix())
    if x.ndim not in (3, 4, 5) or w.ndim != x.ndim:
        raise _core.UserError(f"pypto.conv: input {x!r} and weight {w!r} must both be 3-D (1-D conv), 4-D (2-D) or "
                              "5-D (3-D)" + _suffix())
    for t, what in ((x, "input"), (w, "weight")):
        if t.dtype not in (DT_FP32, DT_FP16, DT_BF16):
            raise _core.UserError(f"pypto.conv: the {what} {t!r} must be DT_FP32, DT_FP16 or DT_BF16" + _suffix())
    if x.dtype != w.dtype:
        raise _core.UserError(f"pypto.conv: input {x!r} and weight {w!r} differ in dtype" + _suffix())
    out_dt = check_dtype(out_dtype, "pypto.conv", _suffix())
    if out_dt not in (DT_FP32, DT_FP16, DT_BF16):
        raise _core.UserError(f"pypto.conv: out_dtype must be DT_FP32, DT_FP16 or DT_BF16, got {out_dt}" + _suffix())
    nd = x.ndim - 2
    strides_ = _ints("strides", strides, nd, 1, 63)
    dil = _ints("dilations", dilations, nd, 1, 63)
    pads = _ints("paddings", paddings, 2 * nd, 0, 255)
    if not isinstance(groups, int) or isinstance(groups, bool) or not 1 <= groups <= 65535:
        raise _core.UserError(f"pypto.conv: groups must be an int in [1, 65535], got {groups!r}" + _suffix())
    (cin,) = _static("input channels", x.shape[1:2])
    # The output channels may be a run-time extent (the tail of a loop over them, a DYNAMIC
    # dim) without groups: they are the rows of the matmul.
    cout = w.shape[0] if groups == 1 and not isinstance(w.shape[0], int) else _static("weight shape", w.shape[:1])[0]
    cin_g, *kernel = _static("weight's input channels and kernel", w.shape[1:])
    spatial, valid = _spatial_bounds(x, pads)
    if cin != cin_g * groups or (isinstance(cout, int) and cout % groups):
        raise _core.UserError(f"pypto.conv: input {x!r} and weight {w!r} with groups={groups}: the input's channels "
                              "must be the weight's dim 1 times groups, and the weight's dim 0 a multiple of groups"
                              + _suffix())
    out = [(spatial[d] + pads[2 * d] + pads[2 * d + 1] - dil[d] * (kernel[d] - 1) - 1) // strides_[d] + 1
           for d in range(nd)]
    if any(o < 1 for o in out):
        raise _core.UserError(f"pypto.conv: input {x!r} with kernel {tuple(kernel)}, paddings {pads} and dilations "
                              f"{dil} has no output position" + _suffix())
    ext = dict(extend_params or {})
    unknown = set(ext) - {"bias_tensor", "scale", "scale_tensor", "relu_type"}
    if unknown:
        raise _core.UserError(f"pypto.conv: unknown extend_params {sorted(unknown)}; PyPTO's are bias_tensor, scale, "
                              "scale_tensor and relu_type" + _suffix())
    if ext.get("scale_tensor") is not None:
        raise _core.UserError("pypto.conv: scale_tensor (fixpipe quantization) is not supported, as in PyPTO's conv"
                              + _suffix())
    bias = ext.get("bias_tensor")
    if bias is not None:
        bias = _t(bias, "conv")
        if bias.ndim != 1 or (isinstance(cout, int) and list(bias.shape) != [cout]) or \
                bias.dtype not in (DT_FP32, DT_FP16, DT_BF16):
            raise _core.UserError(f"pypto.conv: bias_tensor {bias!r} must be a float tensor of shape ({cout},)"
                                  + _suffix())
    scale = ext.get("scale", 0.0)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool):
        raise _core.UserError(f"pypto.conv: scale must be a number, got {scale!r}" + _suffix())
    relu_type = ext.get("relu_type", ConvReLuType.NO_RELU)
    if not isinstance(relu_type, (ConvReLuType, ReLuType)):
        raise _core.UserError(f"pypto.conv: relu_type must be a pypto.ConvReLuType, got {relu_type!r}" + _suffix())

    batch = x.shape[0]
    kk_n, l_n = _pymath.prod(kernel), _pymath.prod(out)
    tile = list(rec.vec_tile_shapes())
    rec.clear_vec_tile_shapes()  # the steps below have their own ranks: automatic tiles
    try:
        if valid is not None:  # a view with a run-time valid extent: on a buffer of its bound
            whole = new_tensor([batch, cin, *spatial], x.dtype)
            assemble(x, [0] * x.ndim, whole)
            x = whole
        cout_g = cout // groups
        parts = []
        if all(s == 1 for s in strides_):
            cols, grid = _shifted_windows(x, spatial, kernel, out, dil, pads, groups)
            l_n = _pymath.prod(grid)
            # The weight in the columns' order: [Cout, KK, Cin_g].
            wk = reshape(permute(reshape(w, [cout, cin_g, kk_n]), [0, 2, 1]), [cout, kk_n * cin_g])
            for g in range(groups):
                wg = wk if groups == 1 else view(wk, [cout_g, kk_n * cin_g], [g * cout_g, 0])
                parts.append(matmul(wg, cols[g], DT_FP32))  # [B, Cout / groups, L']
        else:
            grid = list(out)
            idx, inside = _gather_index(spatial, kernel, out, strides_, dil, [pads[2 * d] for d in range(nd)])
            s_n = _pymath.prod(spatial)
            flat = reshape(x, [batch, cin, s_n])
            if inside is not None:  # a padding position reads a zero put after the input's elements
                idx = where(inside, idx, s_n)
                flat = concat([flat, full([batch, cin, 1], 0.0, x.dtype)], 2)
            col = reshape(index_select(flat, 2, idx), [batch, cin * kk_n, l_n])  # [B, Cin * KK, L]
            w2 = reshape(w, [cout, cin_g * kk_n])
            for g in range(groups):
                cg = col if groups == 1 else view(col, [batch, cin_g * kk_n, l_n], [0, g * cin_g * kk_n, 0])
                wg = w2 if groups == 1 else view(w2, [cout_g, cin_g * kk_n], [g * cout_g, 0])
                parts.append(matmul(wg, cg, DT_FP32))  # [B, Cout / groups, L]
        res = parts[0] if groups == 1 else concat(parts, 1)  # [B, Cout, L]
        if bias is not None:
            res = add(res, reshape(bias if bias.dtype == DT_FP32 else cast(bias, DT_FP32), [1, cout, 1]))
        if scale:
            res = mul(res, float(scale))
        if relu_type.value == 1:
            res = relu(res)
        if out_dt != DT_FP32:
            res = cast(res, out_dt)
        res = reshape(res, [batch, cout, *grid])
        if grid != list(out):  # positions computed on the padded grid: the valid ones
            res = view(res, [batch, cout, *out], [0] * res.ndim)
        if valid is None:
            return res
        # The output positions that read only valid input (no padding along those dims).
        valid_out = [o if isinstance(v, int) else (v - dil[d] * (kernel[d] - 1) - 1) // strides_[d] + 1
                     for d, (o, v) in enumerate(zip(out, valid))]
        return view(res, [batch, cout, *out], [0] * res.ndim, valid_shape=[batch, cout, *valid_out])
    finally:
        if tile:
            rec.set_vec_tile_shapes(tile, user_loc())

