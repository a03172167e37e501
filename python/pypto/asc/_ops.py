"""The instructions of ``pypto.asc``: data movement (data_copy, data_copy_pad, duplicate),
vector arithmetic in count form (the first `count` elements) and in mask / repeat form (each
repeat covers 256 bytes in 8 blocks of 32, with block and repeat strides, a continuous or bit
mask), reductions, compare / select, cast. Each runs at once with numpy on the block's memory
and is recorded, in checked mode, on its pipe."""

from __future__ import annotations

import enum
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _core
from .._tracing import _format_loc, user_loc
from ._memory import GlobalTensor, Hardware, LocalTensor, current_block

# The native path's opcodes and types (src/runtime/element_replay.h: ElemOp, ElemType).
_NATIVE_OPS = {name: i for i, name in enumerate(["copy", "duplicate", "add", "sub", "mul", "div", "max", "min", "adds",
                                                 "muls", "maxs", "mins", "abs", "relu", "sqrt"])}
_NATIVE_TYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int32): 2}


def _tape(op: str, dst: Any, srcs: Sequence[Any], count: Any, scalar: float = 0.0) -> None:
    """Appends the instruction to the block's tape when the native path can run it."""
    tape = current_block(op).tape
    if tape is None or not tape.valid:
        return
    dtype = (dst.dtype.np if isinstance(dst, LocalTensor) else dst.addr.root.dtype) if dst is not None else None
    code = _NATIVE_OPS.get(op)
    operands = [tape.mem(t) for t in [dst, *srcs]]
    dtypes = {t.dtype.np if isinstance(t, LocalTensor) else t.addr.root.dtype for t in [dst, *srcs]}
    if (code is None or not isinstance(count, int) or any(m is None for m in operands) or len(dtypes) != 1
            or (op != "copy" and dtype not in _NATIVE_TYPES)
            or (op in ("div", "sqrt") and np.dtype(dtype).kind == "i")):  # numpy's integer / and sqrt are float
        tape.valid = False
        return
    mems = [m for m in operands if m is not None] + [(-1, 0)] * (3 - len(operands))
    n = count * np.dtype(dtype).itemsize if op == "copy" else count
    tape.rows.append((code, _NATIVE_TYPES.get(np.dtype(dtype), 0), *mems[0], *mems[1], *mems[2], n))
    tape.scalars.append(float(scalar))
    tape.pending = True
from ._sync import record

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
    """The index of this block (core) in the launch."""
    return current_block("get_block_idx").idx


def get_block_num() -> int:
    """The number of blocks of the launch."""
    return current_block("get_block_num").num


def get_sub_block_idx() -> int:
    return 0


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


def data_copy(dst: Any, src: Any, count_or_params: Any) -> None:
    """``data_copy(dst, src, count)`` between global and local memory (or local to local);
    `count` elements, a whole number of 32-byte blocks. Or ``data_copy(dst, src,
    DataCopyParams(...))`` in bursts of blocks."""
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
    if isinstance(src_idx, int) and isinstance(dst_idx, int) and op == "data_copy":
        _tape("copy", dst, [src], n_src)
    else:
        _tape(op, dst, [src], None)
    s_sel: Any = src_idx if isinstance(src_idx, np.ndarray) else slice(None)
    d_sel: Any = dst_idx if isinstance(dst_idx, np.ndarray) else slice(None)
    reads, writes = [], []
    if isinstance(src, GlobalTensor):
        root, first, span = _gm_span(src, op, n_src)
        values = root[first:first + n_src][s_sel]
        reads.append(span)
    else:
        _check_aligned(op, src)
        values = src.array(op, n_src)[s_sel]
        reads.append(src.span(n_src))
    if isinstance(dst, GlobalTensor):
        root, first, span = _gm_span(dst, op, n_dst)
        if not root.flags.writeable:
            raise _core.UserError(f"asc.{op}: {dst.addr.name if dst.addr else 'the output'} is a read-only array"
                                  + _loc())
        writes.append(span)
        record(op, pipe, reads, writes)
        root[first:first + n_dst][d_sel] = values.astype(root.dtype, copy=False)
    else:
        _check_aligned(op, dst)
        target = dst.array(op, n_dst)
        writes.append(dst.span(n_dst))
        record(op, pipe, reads, writes)
        target[d_sel] = values.astype(target.dtype, copy=False)


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
            dst.array("data_copy_pad", int(pad.max()) + 1)[pad] = pad_params.padding_value
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
            src_sel: List[Sel], fill: Any = None, scalar: Any = None) -> None:
    """Runs one vector instruction: reads srcs at their selections, writes dsts[0] at dst_sel."""
    count = dst_sel if isinstance(dst_sel, int) and all(isinstance(s_, int) and s_ == dst_sel for s_ in src_sel) \
        else None
    _tape(op, dsts[0], srcs, count, float(fill if fill is not None else scalar if scalar is not None else 0.0))
    reads, views = [], []
    for t, sel in zip(srcs, src_sel):
        _local_operand(op, t)
        n = _extent(sel)
        a = t.array(op, n)
        a = a[sel] if isinstance(sel, np.ndarray) else a
        # 16-bit floats compute in fp32 and round once when written (as torch computes them).
        views.append(a.astype(np.float32) if a.dtype == np.float16 else a)
        reads.append(t.span(n))
    dst = dsts[0]
    _local_operand(op, dst)
    n = _extent(dst_sel)
    target = dst.array(op, n)
    record(op, "V", reads, [dst.span(n)])
    where: Any = dst_sel if isinstance(dst_sel, np.ndarray) else slice(None)
    with np.errstate(all="ignore"):
        if fill is not None:
            target[where] = np.asarray(fill).astype(target.dtype)
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
        f = (lambda x: fn(x, np.asarray(s).astype(x.dtype))) if scalar else fn
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
        _vector("cast", [dst], [src], conv, count, [count])
    else:
        _vector("cast", [dst], [src], conv, _repeat_index(dst.dtype.sizeof(), mask, rep, p.dst_blk_stride,
                                                           p.dst_rep_stride),
                [_repeat_index(src.dtype.sizeof(), mask, rep, p.src_blk_stride, p.src_rep_stride)])


_CMP = {CMPMODE.LT: np.less, CMPMODE.GT: np.greater, CMPMODE.EQ: np.equal, CMPMODE.LE: np.less_equal,
        CMPMODE.GE: np.greater_equal, CMPMODE.NE: np.not_equal}


def compare(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, cmp_mode: CMPMODE, count: int) -> None:
    """``compare(dst, src0, src1, cmp_mode, count)``: one bit per element into `dst` (uint8,
    bit k of byte k // 8)."""
    n = int(count)
    a, b = src0.array("compare", n), src1.array("compare", n)
    _write_bits("compare", dst, _CMP[CMPMODE(cmp_mode)](a, b), [src0.span(n), src1.span(n)])


def _write_bits(op: str, dst: LocalTensor, flags: np.ndarray, reads: List[Tuple[Any, int, int]]) -> None:
    """`flags` packed one bit per element (bit k of byte k // 8) into `dst`."""
    _local_operand(op, dst)
    bits = np.packbits(flags, bitorder="little")
    elems = -(-bits.size // dst.dtype.sizeof())
    out = dst.array(op, elems).view(np.uint8)
    record(op, "V", reads, [dst.span(elems)])
    out[:bits.size] = bits


def compare_scalar(dst: LocalTensor, src0: LocalTensor, scalar: Any, cmp_mode: CMPMODE, count: int) -> None:
    """``compare_scalar(dst, src0, scalar, cmp_mode, count)``: bits of src0 against a scalar."""
    n = int(count)
    a = src0.array("compare_scalar", n)
    _write_bits("compare_scalar", dst, _CMP[CMPMODE(cmp_mode)](a, np.asarray(scalar).astype(a.dtype)), [src0.span(n)])


def select(dst: LocalTensor, sel_mask: LocalTensor, src0: LocalTensor, src1: Any, sel_mode: SelMode,
           count: int) -> None:
    """``select(dst, sel_mask, src0, src1, sel_mode, count)``: src0 where the mask bit is 1, else
    src1 (a tensor, or a scalar in VSEL_TENSOR_SCALAR_MODE)."""
    n = int(count)
    nbytes = -(-n // 8)
    mask_elems = -(-nbytes // sel_mask.dtype.sizeof())
    bits = np.unpackbits(sel_mask.array("select", mask_elems).view(np.uint8)[:nbytes],
                         bitorder="little")[:n].astype(bool)
    a = src0.array("select", n)
    reads = [sel_mask.span(mask_elems), src0.span(n)]
    if isinstance(src1, LocalTensor):
        b = src1.array("select", n)
        reads.append(src1.span(n))
    else:
        b = np.full(n, src1, a.dtype)
    out = dst.array("select", n)
    record("select", "V", reads, [dst.span(n)])
    out[:] = np.where(bits, a, b)


# --- reductions -----------------------------------------------------------------------------------------


def _reduce(name: str, fn: Callable[[np.ndarray], Any], arg: Optional[Callable[[np.ndarray], Any]]
            ) -> Callable[..., None]:
    def op(dst: LocalTensor, src: LocalTensor, shared_tmp_buffer: LocalTensor, *args: Any, **kwargs: Any) -> None:
        cal_index = bool(kwargs.pop("cal_index", False))
        es = src.dtype.sizeof()
        if "count" in kwargs or len(args) == 1:
            idx = np.arange(int(kwargs.get("count", args[0] if args else 0)))
        else:
            names = ["mask", "repeat_time", "src_rep_stride"]
            vals = dict(zip(names, args))
            vals.update(kwargs)
            idx = _repeat_index(es, vals["mask"], int(vals["repeat_time"]), 1, int(vals["src_rep_stride"]))
        n = int(idx.max()) + 1 if idx.size else 0
        x = src.array(name, n)[idx]
        out = dst.array(name, 2 if cal_index else 1)
        record(name, "V", [src.span(n)], [dst.span(2 if cal_index else 1), shared_tmp_buffer.span(1)])
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
        n = int(idx.max()) + 1 if idx.size else 0
        x = src.array(name, n)[idx].reshape(int(repeat_time), per)
        d_idx = np.arange(int(repeat_time)) * int(dst_rep_stride)
        m = int(d_idx.max()) + 1 if d_idx.size else 0
        out = dst.array(name, m)
        record(name, "V", [src.span(n)], [dst.span(m)])
        with np.errstate(all="ignore"):
            out[d_idx] = fn(x).astype(out.dtype)
    op.__name__ = name
    op.__doc__ = (f"``{name}(dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride, src_rep_stride)``: one "
                  "value per repeat (the masked elements of its 256 bytes), at dst[r * dst_rep_stride].")
    return op


whole_reduce_sum = _whole("whole_reduce_sum", lambda x: _wide(x).sum(-1))
whole_reduce_max = _whole("whole_reduce_max", lambda x: x.max(-1))
whole_reduce_min = _whole("whole_reduce_min", lambda x: x.min(-1))
