"""The native side of ``pypto.asc`` (src/runtime/element_replay.h). Each instruction the C++
can express becomes one row: the interpreter runs it there at once (one semantics for the first
launch and the replays) and, while a launch records, appends it to the block's Tape. Later
launches with the same signature replay the blocks' tapes without Python.

Scalars read from memory (``get_value``) are :class:`Scalar` values while a launch records:
arithmetic on them (``-m``, ``1.0 / s``, ...) is recorded too, so a replay uses the values its
own data give. Any other use (a comparison, ``int(s)``, ``math.exp(s)``, numpy) hands out the
plain number and ends the recording: that kernel stays interpreted, never replays a stale
value."""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

import pypto._core as _core
from ._block import Hardware, current_block

OPS = {name: i for i, name in enumerate([
    "copy", "duplicate", "add", "sub", "mul", "div", "max", "min", "bitwise_and", "bitwise_or", "add_relu", "adds",
    "muls", "maxs", "mins", "leaky_relu", "abs", "relu", "sqrt", "rsqrt", "reciprocal", "exp", "ln", "bitwise_not",
    "cast", "reduce_sum", "reduce_max", "reduce_min", "compare", "select", "scalar_load", "scalar_store",
    "scalar_arith"])}
TYPES = {name: i for i, name in enumerate(["float32", "float16", "bfloat16", "int32", "int8", "uint8", "int16",
                                           "uint16", "uint32", "int64", "uint64", "float64"])}
_FLOATS = {"float32", "float16", "bfloat16"}
_INTS = {"int8", "uint8", "int16", "uint16", "int32", "uint32"}
_FLOAT_ONLY = {"div", "sqrt", "rsqrt", "reciprocal", "exp", "ln", "leaky_relu"}
_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_not"}
_ANY_TYPE = {"copy", "duplicate", "cast", "compare", "select", "scalar_load", "scalar_store"}

Sel = Union[int, np.ndarray]  # the first `count` elements, or element positions (repeat form)
Operand = Tuple[int, int, Optional[np.ndarray]]  # (memory, byte offset, positions or None)



def _is_local(t: Any) -> bool:
    """A LocalTensor (_memory.py builds on this module: tensors tape their scalar accesses here)."""
    return getattr(t, "memory_kind", None) == "local"


def _is_global(t: Any) -> bool:
    return getattr(t, "memory_kind", None) == "global"

class Tape:
    """A block's recorded instruction stream: rows of the 16 int64 fields of ElemInstr, their
    scalars and the index lists they name. It stays valid while every instruction is one the
    native path runs; anything else (record() sees an instruction that was not taped) ends it."""

    def __init__(self) -> None:
        self.rows: List[Tuple[int, ...]] = []
        self.scalars: List[float] = []
        self.lists: List[np.ndarray] = []
        self.list_ids: Dict[bytes, int] = {}
        self.valid = True
        self.pending = False  # the instruction being recorded was taped (record() checks it)
        self.regs = 0

    def index_list(self, idx: np.ndarray) -> int:
        key = idx.tobytes()
        found = self.list_ids.get(key)
        if found is None:
            found = self.list_ids[key] = len(self.lists)
            self.lists.append(idx)
        return found

    def new_reg(self) -> int:
        self.regs += 1
        return self.regs - 1

    def packed(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return _pack(self.rows, self.scalars, self.lists)


def _pack(rows: Sequence[Tuple[int, ...]], scalars: Sequence[float], lists: Sequence[np.ndarray]
          ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    offsets = np.zeros(len(lists) + 1, np.int64)
    if lists:
        offsets[1:] = np.cumsum([a.size for a in lists])
    concat = np.concatenate(lists).astype(np.int64) if lists else np.zeros(0, np.int64)
    return (np.array(rows, np.int64).reshape(-1, 16), np.array(scalars, np.float64), concat, offsets)


def _type_name(t: Any) -> str:
    if _is_local(t):
        return t.dtype.name
    return t.dtype.name if _is_global(t) else ""


def operand(t: Any, sel: Sel) -> Optional[Operand]:
    """(memory, byte offset, positions) of an instruction operand, or None (L1 / L0 memory, an
    array the launch does not know)."""
    block = current_block("asc")
    idx = sel if isinstance(sel, np.ndarray) else None
    if _is_global(t):
        if t.addr is None or id(t.addr.root) not in block.gm_index:
            return None
        return block.gm_index[id(t.addr.root)], t.addr.offset * t.addr.root.itemsize, idx
    if _is_local(t) and t.hw is Hardware.UB:
        return len(block.gm_index), t.addr, idx
    return None


def _scalar(value: Any) -> Tuple[float, int, bool]:
    """(value, register or -1, usable) of a scalar operand."""
    if isinstance(value, Scalar):
        tape = current_block("asc").tape
        return float(value.value), (value.reg if value.tape is tape else -1), value.tape is tape
    if isinstance(value, (bool, int, float, np.integer, np.floating)):
        return float(value), -1, True
    return 0.0, -1, False


def run(op: str, dst: Any, srcs: Sequence[Any], dst_sel: Sel, src_sels: Sequence[Sel], *, scalar: Any = 0.0,
        aux: int = 0, flags: int = 0, count: Optional[int] = None, other: Any = None
        ) -> Optional[Callable[[], None]]:
    """Tapes the instruction when a launch records and returns the call that runs it natively,
    or None: the C++ cannot express it (the caller computes it with numpy; the recording ends)."""
    block = current_block(op)
    tape = block.tape
    dtype = _type_name(dst)
    typed = list(srcs[1:]) if op == "select" else list(srcs)  # a select's mask is bits
    src_type = _type_name(typed[0]) if typed else dtype
    ops = [operand(t, s) for t, s in zip([dst, *srcs], [dst_sel, *src_sels])]
    value, reg, usable = _scalar(scalar)
    n = count if count is not None else (len(src_sels[0]) if srcs and isinstance(src_sels[0], np.ndarray)
                                         else int(src_sels[0]) if srcs else
                                         len(dst_sel) if isinstance(dst_sel, np.ndarray) else int(dst_sel))
    ok = (usable and all(o is not None for o in ops) and dtype in TYPES and src_type in TYPES
          and all(_type_name(s) == src_type for s in typed))
    if op == "select":
        ok = ok and dtype == src_type
        if (_is_local(other) or _is_global(other)):  # the tensor picked where the bit is 0
            o_b = operand(other, n)
            ok = ok and o_b is not None and _type_name(other) == dtype
            if o_b is not None:
                flags, aux = o_b[0] + 1, o_b[1]
    if ok and op not in _ANY_TYPE:
        ok = dtype == src_type and (dtype in _FLOATS if op in _FLOAT_ONLY else dtype in _INTS if op in _INT_ONLY
                                    else dtype in _FLOATS | _INTS)
    if op == "copy":
        ok = ok and dtype == src_type
    if not ok:
        if tape is not None:
            tape.valid = False
        return None
    padded: List[Operand] = [o for o in ops if o is not None] + [(-1, 0, None)] * (3 - len(ops))
    lists: List[np.ndarray] = []

    def fields(list_id: Callable[[np.ndarray], int], sreg: int) -> Tuple[int, ...]:
        idx = [list_id(o[2]) if o[2] is not None else -1 for o in padded]
        return (OPS[op], TYPES[dtype], TYPES[src_type], padded[0][0], padded[0][1], padded[1][0], padded[1][1],
                padded[2][0], padded[2][1], n, *idx, sreg, aux, flags)

    if tape is not None and tape.valid:
        tape.rows.append(fields(tape.index_list, reg))
        tape.scalars.append(value)
        tape.pending = True

    def local_id(a: np.ndarray) -> int:
        lists.append(a)
        return len(lists) - 1

    def execute() -> None:
        row = fields(local_id, -1)
        _core.asc_exec(_pack([row], [value], lists), block.memories())
    return execute


def settle() -> None:
    """After taping a part of the instruction just recorded (no record() of its own follows)."""
    tape = current_block("asc").tape
    if tape is not None:
        tape.pending = False


# --- scalars -------------------------------------------------------------------------------------------


def load_scalar(t: Any, i: int, value: Any) -> Any:
    """``get_value``: the value, a Scalar while the launch records (the load is taped)."""
    tape = current_block("get_value").tape
    if tape is None or not tape.valid:
        return value
    o = operand(t, int(i))
    if o is None or _type_name(t) not in TYPES:
        tape.valid = False
        return value
    es = t.dtype.sizeof()
    reg = tape.new_reg()
    tape.rows.append((OPS["scalar_load"], TYPES[_type_name(t)], 0, -1, 0, o[0], o[1] + int(i) * es, -1, 0, 1, -1, -1,
                      -1, -1, reg, 0))
    tape.scalars.append(0.0)
    tape.pending = True
    return Scalar(value, tape, reg)


def store_scalar(t: Any, i: int, value: Any) -> None:
    """``set_value``: tapes the store (the caller writes the value)."""
    tape = current_block("set_value").tape
    if tape is None or not tape.valid:
        return
    o = operand(t, int(i))
    v, reg, usable = _scalar(value)
    if o is None or not usable or _type_name(t) not in TYPES:
        tape.valid = False
        return
    tape.rows.append((OPS["scalar_store"], TYPES[_type_name(t)], 0, o[0], o[1] + int(i) * t.dtype.sizeof(), -1, 0, -1,
                      0, 1, -1, -1, -1, reg, 0, 0))
    tape.scalars.append(v)
    tape.pending = True


def plain(v: Any) -> Any:
    """The number behind a scalar operand, without ending the recording (the instruction that
    takes it tapes the register)."""
    return v.value if isinstance(v, Scalar) else v


_ARITH = {"add": (0, operator.add), "sub": (1, operator.sub), "mul": (2, operator.mul), "div": (3, operator.truediv)}


class Scalar:
    """A value the kernel read from memory while its launch records (see the module doc)."""

    __slots__ = ("value", "tape", "reg")

    def __init__(self, value: Any, tape: Tape, reg: int) -> None:
        self.value, self.tape, self.reg = value, tape, reg

    def _plain(self) -> Any:
        self.tape.valid = False  # the value steers Python: a replay could not follow
        return self.value

    def _arith(self, other: Any, kind: str, swap: bool) -> Any:
        code, fn = _ARITH[kind]
        if isinstance(other, Scalar):
            if other.tape is not self.tape:
                return fn(other._plain(), self._plain()) if swap else fn(self._plain(), other._plain())
            o_value, o_reg = other.value, other.reg
        elif isinstance(other, (bool, int, float, np.integer, np.floating)):
            o_value, o_reg = other, -1
        else:
            return NotImplemented
        a, b = (o_value, self.value) if swap else (self.value, o_value)
        result = fn(a, b)  # raises as Python does (a division by zero)
        if not self.tape.valid:
            return result
        ra, rb = (o_reg, self.reg) if swap else (self.reg, o_reg)
        const = float(o_value) if o_reg < 0 else 0.0
        reg = self.tape.new_reg()
        self.tape.rows.append((OPS["scalar_arith"], 0, 0, -1, 0, -1, ra, -1, rb, 0, -1, -1, -1, -1, reg, code))
        self.tape.scalars.append(const)
        return Scalar(result, self.tape, reg)

    def __add__(self, o: Any) -> Any:
        return self._arith(o, "add", False)

    def __radd__(self, o: Any) -> Any:
        return self._arith(o, "add", True)

    def __sub__(self, o: Any) -> Any:
        return self._arith(o, "sub", False)

    def __rsub__(self, o: Any) -> Any:
        return self._arith(o, "sub", True)

    def __mul__(self, o: Any) -> Any:
        return self._arith(o, "mul", False)

    def __rmul__(self, o: Any) -> Any:
        return self._arith(o, "mul", True)

    def __truediv__(self, o: Any) -> Any:
        return self._arith(o, "div", False)

    def __rtruediv__(self, o: Any) -> Any:
        return self._arith(o, "div", True)

    def __neg__(self) -> Any:
        if not self.tape.valid:
            return -self.value
        reg = self.tape.new_reg()
        self.tape.rows.append((OPS["scalar_arith"], 0, 0, -1, 0, -1, self.reg, -1, -1, 0, -1, -1, -1, -1, reg, 4))
        self.tape.scalars.append(0.0)
        return Scalar(-self.value, self.tape, reg)

    def __pos__(self) -> Any:
        return self

    # Everything else hands out the plain value and ends the recording.
    def __float__(self) -> float:
        return float(self._plain())

    def __int__(self) -> int:
        return int(self._plain())

    def __index__(self) -> int:
        return operator.index(self._plain())

    def __bool__(self) -> bool:
        return bool(self._plain())

    def __abs__(self) -> Any:
        return abs(self._plain())

    def __round__(self, n: Optional[int] = None) -> Any:
        return round(self._plain(), n)

    def __trunc__(self) -> Any:
        return int(self._plain())

    def __floordiv__(self, o: Any) -> Any:
        return self._plain() // plain_of(o)

    def __rfloordiv__(self, o: Any) -> Any:
        return plain_of(o) // self._plain()

    def __mod__(self, o: Any) -> Any:
        return self._plain() % plain_of(o)

    def __rmod__(self, o: Any) -> Any:
        return plain_of(o) % self._plain()

    def __pow__(self, o: Any) -> Any:
        return self._plain() ** plain_of(o)

    def __rpow__(self, o: Any) -> Any:
        return plain_of(o) ** self._plain()

    def __eq__(self, o: object) -> bool:
        return bool(self._plain() == plain_of(o))

    def __ne__(self, o: object) -> bool:
        return bool(self._plain() != plain_of(o))

    def __lt__(self, o: Any) -> bool:
        return bool(self._plain() < plain_of(o))

    def __le__(self, o: Any) -> bool:
        return bool(self._plain() <= plain_of(o))

    def __gt__(self, o: Any) -> bool:
        return bool(self._plain() > plain_of(o))

    def __ge__(self, o: Any) -> bool:
        return bool(self._plain() >= plain_of(o))

    def __hash__(self) -> int:
        return hash(self._plain())

    def __format__(self, spec: str) -> str:
        return format(self._plain(), spec)

    def __str__(self) -> str:
        return str(self._plain())

    def __repr__(self) -> str:
        return repr(self._plain())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self._plain(), dtype=dtype)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return getattr(ufunc, method)(*[plain_of(i) for i in inputs], **kwargs)


def plain_of(v: Any) -> Any:
    """The plain value of anything, ending a recording a Scalar belongs to."""
    return v._plain() if isinstance(v, Scalar) else v
