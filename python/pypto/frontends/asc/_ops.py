"""The instructions of ``pypto.asc``: data movement (data_copy, data_copy_pad, duplicate),
vector arithmetic in count form (the first `count` elements) and in mask / repeat form (each
repeat covers 256 bytes in 8 blocks of 32, with block and repeat strides, a continuous or bit
mask), reductions, compare / select, cast. Each runs at once with numpy on the block's memory
and is recorded, in checked mode, on its pipe."""

from __future__ import annotations

import enum
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

import pypto._core as _core
from ...core._tracing import _format_loc, user_loc
from ._memory import GlobalTensor, Hardware, LocalTensor, current_block

from . import _native
from ._memory import bfloat16
from ._native import plain
from ._checker import record

Mask = Union[int, Sequence[int]]


class BinaryRepeatParams:
    """Strides of a binary instruction's repeat form: block strides (in 32-byte blocks, within a
    repeat) and repeat strides (in blocks, between repeats)."""

    def __init__(self, dst_blk_stride: int = 1, src0_blk_stride: int = 1, src1_blk_stride: int = 1,
                 dst_rep_stride: int = 8, src0_rep_stride: int = 8, src1_rep_stride: int = 8) -> None:
        self.dst_blk_stride, self.src0_blk_stride = dst_blk_stride, src0_blk_stride
        self.src1_blk_stride, self.dst_rep_stride = src1_blk_stride, dst_rep_stride
        self.src0_rep_stride, self.src1_rep_stride = src0_rep_stride, src1_rep_stride


class UnaryRepeatParams:
    """Strides of a unary instruction's repeat form."""

    def __init__(self, dst_blk_stride: int = 1, src_blk_stride: int = 1, dst_rep_stride: int = 8,
                 src_rep_stride: int = 8) -> None:
        self.dst_blk_stride, self.src_blk_stride = dst_blk_stride, src_blk_stride
        self.dst_rep_stride, self.src_rep_stride = dst_rep_stride, src_rep_stride


class DataCopyParams:
    """``data_copy`` in blocks: `block_count` bursts of `block_len` 32-byte blocks, with gaps
    (in blocks) between bursts on the source and the destination side."""

    def __init__(self, block_count: int = 1, block_len: int = 0, src_stride: int = 0, dst_stride: int = 0) -> None:
        self.block_count, self.block_len = block_count, block_len
        self.src_stride, self.dst_stride = src_stride, dst_stride


class RoundMode(enum.IntEnum):
    CAST_NONE = 0
    CAST_RINT = 1
    CAST_FLOOR = 2
    CAST_CEIL = 3
    CAST_ROUND = 4
    CAST_TRUNC = 5
    CAST_ODD = 6


class CMPMODE(enum.IntEnum):
    LT = 0
    GT = 1
    EQ = 2
    LE = 3
    GE = 4
    NE = 5


class SelMode(enum.IntEnum):
    VSEL_CMPMASK_SPR = 0
    VSEL_TENSOR_SCALAR_MODE = 1
    VSEL_TENSOR_TENSOR_MODE = 2


def _loc() -> str:
    return _format_loc(user_loc())


def get_block_idx() -> int:
    """The index of this core in the launch: [0, block_num) on a cube core and in a vector-only
    kernel; in a MIX kernel (1 cube : 2 vector cores per block) a vector core's index is
    block * 2 + get_sub_block_idx(), in [0, 2 * block_num)."""
    return current_block("get_block_idx").idx


def get_block_num() -> int:
    """The number of blocks launched (``kernel[block_num]``; in a MIX kernel, of AIC/AIV groups)."""
    return current_block("get_block_num").num


def get_sub_block_idx() -> int:
    """Which vector core of its group this is (0 or 1 in a MIX kernel); 0 on a cube core and in
    a vector-only kernel."""
    return current_block("get_sub_block_idx").sub


def get_task_ratio() -> int:
    """Cores of this core's kind per block: 2 on a vector core of a MIX kernel, else 1."""
    return current_block("get_task_ratio").ratio


# --- data movement -------------------------------------------------------------------------------------


def _pipe_of_copy(dst: Any, src: Any) -> str:
    if isinstance(src, GlobalTensor):
        return "MTE2"
    if isinstance(dst, GlobalTensor):
        return "MTE3"
    if src.hw is Hardware.L1 and dst.hw in (Hardware.L0A, Hardware.L0B):
        return "MTE1"
    if src.hw is Hardware.L0C:
        return "FIX"
    return "V"


def _gm_span(t: GlobalTensor, op: str, count: int) -> Tuple[np.ndarray, int, Tuple[Any, int, int]]:
    root, first, n = t.window(op, count)
    return root, first, (("gm", id(root)), first * root.itemsize, n * root.itemsize)


def _check_aligned(op: str, t: LocalTensor) -> None:
    if t.addr % 32:
        raise _core.UserError(f"asc.{op}: the {t.pos.name} tensor starts at byte {t.addr}, not on a 32-byte block "
                              "(the hardware addresses local memory in 32-byte blocks)" + _loc())


def data_copy(dst: Any, src: Any, count_or_params: Any = None, *, count: Any = None, repeat_params: Any = None,
              params: Any = None, intri_params: Any = None) -> None:
    """``data_copy(dst, src, count)`` between global and local memory (or local to local);
    `count` elements, a whole number of 32-byte blocks. Or ``data_copy(dst, src,
    DataCopyParams(...))`` in bursts of blocks. PyAsc's keywords: ``count=``,
    ``repeat_params=`` (``params=``, ``intri_params=``)."""
    given = [v for v in (count_or_params, count, repeat_params, params, intri_params) if v is not None]
    if len(given) != 1:
        raise _core.UserError("asc.data_copy(dst, src, count) or (dst, src, repeat_params=DataCopyParams(...)): give "
                              f"one of them, got {len(given)}" + _loc())
    count_or_params = given[0]
    if isinstance(dst, GlobalTensor) and isinstance(src, GlobalTensor):
        raise _core.UserError("asc.data_copy: global to global is not an instruction; stage through local memory"
                              + _loc())
    pipe = _pipe_of_copy(dst, src)
    local = dst if isinstance(dst, LocalTensor) else src
    es = local.dtype.sizeof()
    if isinstance(count_or_params, DataCopyParams):
        p = count_or_params
        blk = 32 // es
        n_burst = p.block_len * blk
        src_idx = np.concatenate([np.arange(n_burst) + b * (p.block_len + p.src_stride) * blk
                                  for b in range(p.block_count)]) if p.block_count else np.zeros(0, np.int64)
        dst_idx = np.concatenate([np.arange(n_burst) + b * (p.block_len + p.dst_stride) * blk
                                  for b in range(p.block_count)]) if p.block_count else np.zeros(0, np.int64)
        _move("data_copy", pipe, dst, src, dst_idx, src_idx)
        return
    count = int(count_or_params)
    if (count * es) % 32 and pipe in ("MTE2", "MTE3"):
        raise _core.UserError(f"asc.data_copy: {count} elements of {es} bytes is not a whole number of 32-byte blocks"
                              + _loc() + "\nhint: use asc.data_copy_pad for a length that is not 32-byte aligned")
    _move("data_copy", pipe, dst, src, count, count)


def _move(op: str, pipe: str, dst: Any, src: Any, dst_idx: Any, src_idx: Any) -> None:
    n_src, n_dst = _extent(src_idx), _extent(dst_idx)
    s_sel: Any = src_idx if isinstance(src_idx, np.ndarray) else slice(None)
    d_sel: Any = dst_idx if isinstance(dst_idx, np.ndarray) else slice(None)
    reads, writes = [], []
    if isinstance(src, GlobalTensor):
        root, first, span = _gm_span(src, op, n_src)
        values: Any = lambda: root[first:first + n_src][s_sel]  # noqa: E731
        reads.append(span)
    else:
        _check_aligned(op, src)
        local = src.array(op, n_src)
        values = lambda: local[s_sel]  # noqa: E731
        reads.append(src.span(n_src))
    if isinstance(dst, GlobalTensor):
        target, first_dst, span = _gm_span(dst, op, n_dst)
        if not target.flags.writeable:
            raise _core.UserError(f"asc.{op}: {dst.addr.name if dst.addr else 'the output'} is a read-only array"
                                  + _loc())
        target = target[first_dst:first_dst + n_dst]
        writes.append(span)
    else:
        _check_aligned(op, dst)
        target = dst.array(op, n_dst)
        writes.append(dst.span(n_dst))
    native = _native.run("copy", dst, [src], dst_idx, [src_idx])
    record(op, pipe, reads, writes)
    if native is not None:
        native()
        return
    _no_bf16(op, dst, src)
    target[d_sel] = values().astype(target.dtype, copy=False)


def _no_bf16(op: str, *tensors: Any) -> None:
    """The numpy path cannot compute on bfloat16 (stored as bits): those go native or fail here."""
    if any(getattr(t, "dtype", None) == bfloat16 for t in tensors):
        raise _core.UserError(f"asc.{op}: not supported on bfloat16 in this form (bfloat16 runs the native "
                              "instructions: copies, elementwise, cast, reductions)" + _loc())


class DataCopyExtParams:
    """``data_copy_pad`` in bytes: `block_count` bursts of `block_len` bytes, gaps in bytes
    (global side) and blocks (local side)."""

    def __init__(self, block_count: int = 1, block_len: int = 0, src_stride: int = 0, dst_stride: int = 0,
                 rsv: int = 0) -> None:
        self.block_count, self.block_len = block_count, block_len
        self.src_stride, self.dst_stride = src_stride, dst_stride


class DataCopyPadExtParams:
    """The padding ``data_copy_pad`` writes after each burst in local memory (to its 32-byte block)."""

    def __init__(self, is_pad: bool = False, left_padding: int = 0, right_padding: int = 0,
                 padding_value: Any = 0) -> None:
        self.is_pad, self.left_padding, self.right_padding = is_pad, left_padding, right_padding
        self.padding_value = padding_value


def data_copy_pad(dst: Any, src: Any, params: DataCopyExtParams, pad_params: Optional[DataCopyPadExtParams] = None
                  ) -> None:
    """``data_copy_pad(dst, src, DataCopyExtParams(count, bytes, ...)[, DataCopyPadExtParams])``:
    a copy of any byte length; on the local side each burst starts on a 32-byte block."""
    local = dst if isinstance(dst, LocalTensor) else src
    es = local.dtype.sizeof()
    if params.block_len % es:
        raise _core.UserError(f"asc.data_copy_pad: block_len {params.block_len} bytes is not a whole number of "
                              f"{es}-byte elements" + _loc())
    n = params.block_len // es
    local_burst = -(-params.block_len // 32) * 32 // es  # a burst in local memory fills its blocks
    gm_src = isinstance(src, GlobalTensor)
    g_step = n + params.src_stride // es if gm_src else n + params.dst_stride // es
    l_step = local_burst + (params.dst_stride if gm_src else params.src_stride) * (32 // es)
    g_idx = np.concatenate([np.arange(n) + b * g_step for b in range(params.block_count)])
    l_idx = np.concatenate([np.arange(n) + b * l_step for b in range(params.block_count)])
    pipe = "MTE2" if gm_src else "MTE3"
    if gm_src:
        _move("data_copy_pad", pipe, dst, src, l_idx, g_idx)
        if pad_params is not None and pad_params.is_pad and local_burst > n:
            pad = np.concatenate([np.arange(n, local_burst) + b * l_step for b in range(params.block_count)])
            target = dst.array("data_copy_pad", int(pad.max()) + 1)
            native = _native.run("duplicate", dst, [], pad, [], scalar=pad_params.padding_value)
            _native.settle()  # the padding belongs to the copy just recorded
            if native is not None:
                native()
            else:
                target[pad] = plain(pad_params.padding_value)
    else:
        _move("data_copy_pad", pipe, dst, src, g_idx, l_idx)


def duplicate(dst: LocalTensor, scalar: Any, *args: Any, **kwargs: Any) -> None:
    """``duplicate(dst, scalar, count)`` or ``(dst, scalar, mask, repeat_times, dst_block_stride,
    dst_repeat_stride)``: fills with a scalar."""
    if len(args) + len(kwargs) == 1:
        idx: Sel = int(args[0] if args else kwargs["count"])
    else:
        names = ["mask", "repeat_times", "dst_block_stride", "dst_repeat_stride"]
        vals = dict(zip(names, args))
        vals.update({k: v for k, v in kwargs.items() if k in names})
        idx = _repeat_index(dst.dtype.sizeof(), vals["mask"], int(vals["repeat_times"]), int(vals["dst_block_stride"]),
                            int(vals["dst_repeat_stride"]))
    _vector("duplicate", [dst], [], lambda: None, idx, [], fill=scalar)


# --- vector instructions ----------------------------------------------------------------------------------


def _mask_bits(es: int, mask: Mask) -> np.ndarray:
    per_rep = 256 // es
    if isinstance(mask, (list, tuple)):
        bits = np.zeros(per_rep, bool)
        for w, word in enumerate(mask):
            for b in range(64):
                j = w * 64 + b
                if j < per_rep and (int(word) >> b) & 1:
                    bits[j] = True
        return bits
    m = int(mask)  # type: ignore[arg-type]
    if not 0 < m <= per_rep:
        raise _core.UserError(f"asc: a continuous mask of {m} elements; a repeat of {es}-byte elements holds 1 to "
                              f"{per_rep}" + _loc())
    return np.arange(per_rep) < m


def _repeat_index(es: int, mask: Mask, repeat: int, blk_stride: int, rep_stride: int) -> np.ndarray:
    """Element indices a repeat-form instruction touches, in order (repeat, then element)."""
    if not 0 <= repeat <= 255:
        raise _core.UserError(f"asc: repeat_times {repeat} is outside [0, 255]" + _loc())
    per_blk = 32 // es
    j = np.nonzero(_mask_bits(es, mask))[0]
    blk, e = j // per_blk, j % per_blk
    r = np.arange(repeat)[:, None]
    return (r * rep_stride * per_blk + blk[None, :] * blk_stride * per_blk + e[None, :]).reshape(-1)


Sel = Union[int, np.ndarray]  # the first `count` elements, or element indices (the repeat form)


def _extent(sel: Sel) -> int:
    if isinstance(sel, np.ndarray):
        return int(sel.max()) + 1 if sel.size else 0
    return int(sel)


def _vector(op: str, dsts: List[LocalTensor], srcs: List[LocalTensor], fn: Callable[..., Any], dst_sel: Sel,
            src_sel: List[Sel], fill: Any = None, scalar: Any = None, aux: int = 0) -> None:
    """Runs one vector instruction: reads srcs at their selections, writes dsts[0] at dst_sel.
    Natively when the C++ expresses it (the same code a replay runs), else with numpy."""
    reads, arrays = [], []
    for t, sel in zip(srcs, src_sel):
        _local_operand(op, t)
        n = _extent(sel)
        arrays.append((t.array(op, n), sel))
        reads.append(t.span(n))
    dst = dsts[0]
    _local_operand(op, dst)
    n = _extent(dst_sel)
    target = dst.array(op, n)
    native = _native.run(op, dst, srcs, dst_sel, src_sel, aux=aux,
                         scalar=fill if fill is not None else scalar if scalar is not None else 0.0)
    record(op, "V", reads, [dst.span(n)])
    if native is not None:
        native()
        return
    _no_bf16(op, dst, *srcs)
    # 16-bit floats compute in fp32 and round once when written (as torch computes them).
    views = [a[sel] if isinstance(sel, np.ndarray) else a for a, sel in arrays]
    views = [a.astype(np.float32) if a.dtype == np.float16 else a for a in views]
    where: Any = dst_sel if isinstance(dst_sel, np.ndarray) else slice(None)
    with np.errstate(all="ignore"):
        if fill is not None:
            target[where] = np.asarray(plain(fill)).astype(target.dtype)
        else:
            target[where] = np.asarray(fn(*views)).astype(target.dtype, copy=False)


def _local_operand(op: str, t: Any) -> None:
    if not isinstance(t, LocalTensor):
        raise _core.UserError(f"asc.{op}: vector instructions work on LocalTensors in UB, got {type(t).__name__}"
                              + _loc())
    if t.hw is not Hardware.UB:
        raise _core.UserError(f"asc.{op}: the operand is in {t.hw.name} ({t.pos.name}); vector instructions read and "
                              "write UB (VECIN / VECOUT / VECCALC)" + _loc())
    _check_aligned(op, t)


def _count_or_repeat(es: int, args: Sequence[Any], kwargs: dict, params_kind: str
                     ) -> Tuple[Optional[int], Any, int, Any]:
    """(count, mask, repeat_times, repeat params) of an instruction's trailing arguments."""
    if "count" in kwargs or (len(args) == 1 and not kwargs.keys() - {"is_set_mask"}):
        return int(kwargs.get("count", args[0] if args else 0)), None, 0, None
    names = ["mask", "repeat_times", "repeat_params"]
    vals = dict(zip(names, args))
    vals.update({k: v for k, v in kwargs.items() if k in names or k == "repeat_time"})
    if "repeat_time" in vals:
        vals["repeat_times"] = vals.pop("repeat_time")
    if "mask" not in vals or "repeat_times" not in vals:
        raise _core.UserError("asc: give `count`, or `mask, repeat_times, repeat_params`" + _loc())
    params = vals.get("repeat_params")
    if params is None:
        params = BinaryRepeatParams() if params_kind == "binary" else UnaryRepeatParams()
    return None, vals["mask"], int(vals["repeat_times"]), params


def _binary(name: str, fn: Callable[[Any, Any], Any]) -> Callable[..., None]:
    def op(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, *args: Any, **kwargs: Any) -> None:
        count, mask, rep, p = _count_or_repeat(dst.dtype.sizeof(), args, kwargs, "binary")
        es = dst.dtype.sizeof()
        if count is not None:
            _vector(name, [dst], [src0, src1], fn, count, [count, count])
        else:
            _vector(name, [dst], [src0, src1], fn, _repeat_index(es, mask, rep, p.dst_blk_stride, p.dst_rep_stride),
                    [_repeat_index(es, mask, rep, p.src0_blk_stride, p.src0_rep_stride),
                     _repeat_index(es, mask, rep, p.src1_blk_stride, p.src1_rep_stride)])
    op.__name__ = name
    op.__doc__ = (f"``{name}(dst, src0, src1, count)`` or ``(dst, src0, src1, mask, repeat_times, "
                  "BinaryRepeatParams)``: elementwise in UB.")
    return op


def _unary(name: str, fn: Callable[..., Any], scalar: bool = False) -> Callable[..., None]:
    def op(dst: LocalTensor, src: LocalTensor, *args: Any, **kwargs: Any) -> None:
        s = None
        if scalar:
            s, args = (kwargs.pop("scalar"), args) if "scalar" in kwargs else (args[0], args[1:])
        count, mask, rep, p = _count_or_repeat(dst.dtype.sizeof(), args, kwargs, "unary")
        es = dst.dtype.sizeof()
        f = (lambda x: fn(x, np.asarray(plain(s)).astype(x.dtype))) if scalar else fn
        if count is not None:
            _vector(name, [dst], [src], f, count, [count], scalar=s)
        else:
            _vector(name, [dst], [src], f, _repeat_index(es, mask, rep, p.dst_blk_stride, p.dst_rep_stride),
                    [_repeat_index(es, mask, rep, p.src_blk_stride, p.src_rep_stride)])
    op.__name__ = name
    op.__doc__ = (f"``{name}(dst, src, {'scalar, ' if scalar else ''}count)`` or ``(..., mask, repeat_times, "
                  "UnaryRepeatParams)``: elementwise in UB.")
    return op


def _relu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.zeros_like(x))


add = _binary("add", np.add)
sub = _binary("sub", np.subtract)
mul = _binary("mul", np.multiply)
div = _binary("div", np.divide)
max = _binary("max", np.maximum)  # noqa: A001 - Ascend C's name
min = _binary("min", np.minimum)  # noqa: A001
bitwise_and = _binary("bitwise_and", np.bitwise_and)
bitwise_or = _binary("bitwise_or", np.bitwise_or)
add_relu = _binary("add_relu", lambda a, b: _relu(a + b))
adds = _unary("adds", np.add, scalar=True)
muls = _unary("muls", np.multiply, scalar=True)
maxs = _unary("maxs", np.maximum, scalar=True)
mins = _unary("mins", np.minimum, scalar=True)
leaky_relu = _unary("leaky_relu", lambda x, a: np.where(x >= 0, x, x * a), scalar=True)
exp = _unary("exp", np.exp)
ln = _unary("ln", np.log)
abs = _unary("abs", np.abs)  # noqa: A001
sqrt = _unary("sqrt", np.sqrt)
rsqrt = _unary("rsqrt", lambda x: 1 / np.sqrt(x))
reciprocal = _unary("reciprocal", lambda x: 1 / x)
relu = _unary("relu", _relu)
bitwise_not = _unary("bitwise_not", np.invert)


_ROUNDING: dict = {RoundMode.CAST_FLOOR: np.floor, RoundMode.CAST_CEIL: np.ceil, RoundMode.CAST_TRUNC: np.trunc,
                   RoundMode.CAST_ROUND: lambda a: np.sign(a) * np.floor(np.abs(a) + 0.5)}


def cast(dst: LocalTensor, src: LocalTensor, round_mode: RoundMode, *args: Any, **kwargs: Any) -> None:
    """``cast(dst, src, round_mode, count)``: conversion with a RoundMode (CAST_RINT: to nearest
    even; CAST_ROUND: half away from zero; CAST_FLOOR / CEIL / TRUNC; CAST_NONE: exact, or to
    nearest even when narrowing); into integers it saturates."""
    count, mask, rep, p = _count_or_repeat(src.dtype.sizeof(), args, kwargs, "unary")
    mode = RoundMode(round_mode)
    out_np = dst.dtype.np

    def conv(x: np.ndarray) -> np.ndarray:
        v = x.astype(np.float64)
        if np.issubdtype(out_np, np.integer) or mode not in (RoundMode.CAST_NONE, RoundMode.CAST_RINT):
            v = _ROUNDING.get(mode, np.rint)(v)
        if np.issubdtype(out_np, np.integer):
            info = np.iinfo(out_np)
            v = np.clip(np.nan_to_num(v, nan=0.0), info.min, info.max)
        return v.astype(out_np)
    if count is not None:
        _vector("cast", [dst], [src], conv, count, [count], aux=int(mode))
    else:
        _vector("cast", [dst], [src], conv, _repeat_index(dst.dtype.sizeof(), mask, rep, p.dst_blk_stride,
                                                           p.dst_rep_stride),
                [_repeat_index(src.dtype.sizeof(), mask, rep, p.src_blk_stride, p.src_rep_stride)], aux=int(mode))


_CMP = {CMPMODE.LT: np.less, CMPMODE.GT: np.greater, CMPMODE.EQ: np.equal, CMPMODE.LE: np.less_equal,
        CMPMODE.GE: np.greater_equal, CMPMODE.NE: np.not_equal}


def compare(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, cmp_mode: CMPMODE, count: int) -> None:
    """``compare(dst, src0, src1, cmp_mode, count)``: one bit per element into `dst` (uint8,
    bit k of byte k // 8)."""
    n = int(count)
    a, b = src0.array("compare", n), src1.array("compare", n)
    _write_bits("compare", dst, lambda: _CMP[CMPMODE(cmp_mode)](a, b), [src0, src1], n, int(cmp_mode), 0.0, 0)


def _write_bits(op: str, dst: LocalTensor, flags: Callable[[], np.ndarray], srcs: List[LocalTensor], n: int,
                mode: int, scalar: Any, with_scalar: int) -> None:
    """The comparison's flags packed one bit per element (bit k of byte k // 8) into `dst`."""
    _local_operand(op, dst)
    for s in srcs:
        _local_operand(op, s)
    nbytes = -(-n // 8)
    elems = -(-nbytes // dst.dtype.sizeof())
    out = dst.array(op, elems).view(np.uint8)
    native = _native.run("compare", dst, srcs, elems, [n] * len(srcs), aux=mode, flags=with_scalar, scalar=scalar,
                         count=n)
    record(op, "V", [s.span(n) for s in srcs], [dst.span(elems)])
    if native is not None:
        native()
        return
    _no_bf16(op, *srcs)
    bits = np.packbits(flags(), bitorder="little")
    out[:bits.size] = bits


def compare_scalar(dst: LocalTensor, src0: LocalTensor, scalar: Any, cmp_mode: CMPMODE, count: int) -> None:
    """``compare_scalar(dst, src0, scalar, cmp_mode, count)``: bits of src0 against a scalar."""
    n = int(count)
    a = src0.array("compare_scalar", n)
    _write_bits("compare_scalar", dst, lambda: _CMP[CMPMODE(cmp_mode)](a, np.asarray(plain(scalar)).astype(a.dtype)),
                [src0], n, int(cmp_mode), scalar, 1)


def select(dst: LocalTensor, sel_mask: LocalTensor, src0: LocalTensor, src1: Any, sel_mode: SelMode,
           count: int) -> None:
    """``select(dst, sel_mask, src0, src1, sel_mode, count)``: src0 where the mask bit is 1, else
    src1 (a tensor, or a scalar in VSEL_TENSOR_SCALAR_MODE)."""
    n = int(count)
    nbytes = -(-n // 8)
    mask_elems = -(-nbytes // sel_mask.dtype.sizeof())
    mask = sel_mask.array("select", mask_elems)
    a = src0.array("select", n)
    reads = [sel_mask.span(mask_elems), src0.span(n)]
    tensor_b = isinstance(src1, LocalTensor)
    if tensor_b:
        b_arr = src1.array("select", n)
        reads.append(src1.span(n))
    out = dst.array("select", n)
    native = _native.run("select", dst, [sel_mask, src0], n, [mask_elems, n], count=n,
                         scalar=0.0 if tensor_b else src1, other=src1 if tensor_b else None)
    record("select", "V", reads, [dst.span(n)])
    if native is not None:
        native()
        return
    _no_bf16("select", dst, src0)
    bits = np.unpackbits(mask.view(np.uint8)[:nbytes], bitorder="little")[:n].astype(bool)
    b = b_arr if tensor_b else np.full(n, plain(src1), a.dtype)
    out[:] = np.where(bits, a, b)


# --- reductions -----------------------------------------------------------------------------------------


def _reduce(name: str, fn: Callable[[np.ndarray], Any], arg: Optional[Callable[[np.ndarray], Any]]
            ) -> Callable[..., None]:
    def op(dst: LocalTensor, src: LocalTensor, shared_tmp_buffer: LocalTensor, *args: Any, **kwargs: Any) -> None:
        cal_index = bool(kwargs.pop("cal_index", False))
        es = src.dtype.sizeof()
        src_sel: Sel
        if "count" in kwargs or len(args) == 1:
            src_sel = int(kwargs.get("count", args[0] if args else 0))
            idx = np.arange(src_sel)
        else:
            names = ["mask", "repeat_time", "src_rep_stride"]
            vals = dict(zip(names, args))
            vals.update(kwargs)
            idx = src_sel = _repeat_index(es, vals["mask"], int(vals["repeat_time"]), 1, int(vals["src_rep_stride"]))
        _local_operand(name, src)
        _local_operand(name, dst)
        n = int(idx.max()) + 1 if idx.size else 0
        src_array = src.array(name, n)
        out = dst.array(name, 2 if cal_index else 1)
        native = _native.run(name, dst, [src], 2 if cal_index else 1, [src_sel], aux=int(idx.size),
                             flags=int(cal_index), count=int(idx.size))
        record(name, "V", [src.span(n)], [dst.span(2 if cal_index else 1), shared_tmp_buffer.span(1)])
        if native is not None:
            native()
            return
        _no_bf16(name, dst, src)
        x = src_array[idx]
        with np.errstate(all="ignore"):
            out[0] = fn(_wide(x)).astype(out.dtype) if x.size else 0
            if cal_index and arg is not None:
                out[1:2] = np.array([int(arg(x))], np.int32).view(out.dtype) if out.dtype.itemsize == 4 else int(arg(x))
    op.__name__ = name
    op.__doc__ = (f"``{name}(dst, src, shared_tmp_buffer, count)`` or ``(..., mask, repeat_time, src_rep_stride)``: "
                  "into dst[0] (with cal_index, the index into dst[1] as raw bits).")
    return op


def _wide(x: np.ndarray) -> np.ndarray:
    """fp16 sums in fp32 (one rounding at the end, as torch); other types in their own."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


reduce_sum = _reduce("reduce_sum", np.sum, None)
reduce_max = _reduce("reduce_max", np.max, np.argmax)
reduce_min = _reduce("reduce_min", np.min, np.argmin)


def _whole(name: str, fn: Callable[[np.ndarray], Any]) -> Callable[..., None]:
    def op(dst: LocalTensor, src: LocalTensor, mask: Mask, repeat_time: int, dst_rep_stride: int,
           src_blk_stride: int, src_rep_stride: int, **kwargs: Any) -> None:
        es = src.dtype.sizeof()
        per = np.count_nonzero(_mask_bits(es, mask))
        idx = _repeat_index(es, mask, int(repeat_time), int(src_blk_stride), int(src_rep_stride))
        _local_operand(name, src)
        _local_operand(name, dst)
        n = int(idx.max()) + 1 if idx.size else 0
        src_array = src.array(name, n)
        d_idx = np.arange(int(repeat_time)) * int(dst_rep_stride)
        m = int(d_idx.max()) + 1 if d_idx.size else 0
        out = dst.array(name, m)
        native = _native.run(name.replace("whole_", ""), dst, [src], d_idx, [idx], aux=int(per), count=int(idx.size)) \
            if idx.size else None
        record(name, "V", [src.span(n)], [dst.span(m)])
        if native is not None:
            native()
            return
        _no_bf16(name, dst, src)
        x = src_array[idx].reshape(int(repeat_time), per)
        with np.errstate(all="ignore"):
            out[d_idx] = fn(x).astype(out.dtype)
    op.__name__ = name
    op.__doc__ = (f"``{name}(dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride)``: one "
                  "value per repeat (the masked elements of its 256 bytes), at dst[r * dst_rep_stride].")
    return op


whole_reduce_sum = _whole("whole_reduce_sum", lambda x: _wide(x).sum(-1))
whole_reduce_max = _whole("whole_reduce_max", lambda x: x.max(-1))
whole_reduce_min = _whole("whole_reduce_min", lambda x: x.min(-1))
