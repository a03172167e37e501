"""The element level's ground: its scalar types (asc.float32, ...), the logical positions and
physical memories of a core (TPosition, Hardware), and the running block (Block,
current_block) with its local memories. The tensors over them are in _memory.py."""


from __future__ import annotations

import enum
import threading
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

import pypto._core as _core
from ...core._tracing import SourceLoc, _format_loc, user_loc

_state = threading.local()


class DataType:
    """A scalar type of the element level (``asc.float32``, ``asc.half``, ...)."""

    def __init__(self, name: str, np_dtype: Any) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)

    def sizeof(self) -> int:
        """Bytes per element."""
        return int(self.np.itemsize)

    def __repr__(self) -> str:
        return f"asc.{self.name}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


int8 = DataType("int8", np.int8)
int16 = DataType("int16", np.int16)
int32 = DataType("int32", np.int32)
int64 = DataType("int64", np.int64)
uint8 = DataType("uint8", np.uint8)
uint16 = DataType("uint16", np.uint16)
uint32 = DataType("uint32", np.uint32)
uint64 = DataType("uint64", np.uint64)
float16 = DataType("float16", np.float16)
float32 = DataType("float32", np.float32)
float64 = DataType("float64", np.float64)
# bfloat16 is stored as its bit patterns (numpy has no bfloat16); every instruction on it runs
# natively, computing in fp32 and rounding once to nearest even.
bfloat16 = DataType("bfloat16", np.uint16)
half = float16
float_ = float32
double = float64
int_ = int32
bool_ = int8
_BY_NP = {d.np: d for d in (int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64)}


def dtype_of(np_dtype: Any) -> DataType:
    dt = _BY_NP.get(np.dtype(np_dtype))
    if dt is None:
        raise _core.UserError(f"pypto.asc: arrays of {np.dtype(np_dtype)} are not supported (int8..int64, "
                              "uint8..uint64, float16, float32, float64)" + _format_loc(user_loc()))
    return dt


class TPosition(enum.IntEnum):
    """Logical positions of local memory (Ascend C's TPosition)."""

    GM = 0
    A1 = 1
    A2 = 2
    B1 = 3
    B2 = 4
    C1 = 5
    C2 = 6
    CO1 = 7
    CO2 = 8
    VECIN = 9
    VECOUT = 10
    VECCALC = 11


class Hardware(enum.IntEnum):
    """Physical memories."""

    GM = 0
    UB = 1
    L1 = 2
    L0A = 3
    L0B = 4
    L0C = 5


# The physical memory of each position (Ascend 910B: CO2 is in UB).
HW_OF = {TPosition.VECIN: Hardware.UB, TPosition.VECOUT: Hardware.UB, TPosition.VECCALC: Hardware.UB,
         TPosition.CO2: Hardware.UB, TPosition.A1: Hardware.L1, TPosition.B1: Hardware.L1, TPosition.C1: Hardware.L1,
         TPosition.A2: Hardware.L0A, TPosition.B2: Hardware.L0B, TPosition.CO1: Hardware.L0C,
         TPosition.C2: Hardware.L0C}
_CAPACITY_KEY = {Hardware.UB: "ub_bytes", Hardware.L1: "l1_bytes", Hardware.L0A: "l0a_bytes",
                 Hardware.L0B: "l0b_bytes", Hardware.L0C: "l0c_bytes"}


class Block:
    """One block (core) of a launch: its index, its local memories and, in checked mode, the
    checker of its pipes."""

    def __init__(self, idx: int, num: int, machine: str, checker: Any, cube: bool = False, sub: int = 0,
                 ratio: int = 1, mix: bool = False) -> None:
        # idx / num: get_block_idx / get_block_num (a MIX launch's vector blocks count 0 .. ratio *
        # num - 1); sub: get_sub_block_idx; ratio: get_task_ratio; mix: its cube block serves the
        # group's matmuls from register_matmul on, and runs no code after it.
        self.idx, self.num = idx, num
        self.cube = cube
        self.sub, self.ratio, self.mix = sub, ratio, mix
        info = _core.machine_info(machine)
        self.machine = machine
        self.capacity = {hw: int(info[key]) for hw, key in _CAPACITY_KEY.items()}
        self.mem: Dict[Hardware, np.ndarray] = {}
        self.checker = checker
        self.static_tensors: List[Tuple[Hardware, int, int, SourceLoc]] = []  # constructor-made LocalTensors
        self.tape: Any = None  # the instruction stream being recorded (_native.Tape)
        self.gm_roots: List[np.ndarray] = []  # the launch's arrays: native memories 0..n-1, then UB
        self.gm_index: Dict[int, int] = {}
        self.cancelled: Optional[threading.Event] = None  # set when the launch is interrupted

    def memories(self) -> List[np.ndarray]:
        """The memories a native instruction addresses: the launch's arrays, then this UB."""
        return [*self.gm_roots, self.memory(Hardware.UB)]

    def memory(self, hw: Hardware) -> np.ndarray:
        m = self.mem.get(hw)
        if m is None:
            # Garbage, as on the chip: a kernel that reads before it writes sees it.
            m = self.mem[hw] = np.full(self.capacity[hw], 0xA5, np.uint8)
        return m


class LaunchCancelled(BaseException):
    """Ends a block whose launch was interrupted (Ctrl-C in the caller): raised at the block's next
    instruction; a BaseException so that a kernel's own ``except Exception`` does not swallow it."""


def current_block(op: str) -> Block:
    b = getattr(_state, "block", None)
    if b is None:
        raise _core.UserError(f"asc.{op} can only be used in an @asc.jit kernel while it runs (launch it as "
                              "kernel[core_num](args...))" + _format_loc(user_loc()))
    if b.cancelled is not None and b.cancelled.is_set():
        raise LaunchCancelled()
    return b
