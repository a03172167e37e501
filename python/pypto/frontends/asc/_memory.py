"""Data types, positions and the memories of ``pypto.asc``: global memory (the kernel's array
arguments) and each block's local memories (UB, L1, L0A, L0B, L0C), with GlobalAddress,
GlobalTensor and LocalTensor over them. Every access is bounds-checked; in checked mode it is
also recorded with its pipe (see _sync.Checker)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

import pypto._core as _core
from ...core._tracing import _format_loc, user_loc
from ._block import (_BY_NP, HW_OF, Block, DataType, Hardware, TPosition, _state, bfloat16, bool_,  # noqa: F401
                     current_block, double, dtype_of, float16, float32, float64, float_, half, int8, int16, int32,
                     int64, int_, uint8, uint16, uint32, uint64)
from ._checker import scalar_access
from ._native import load_scalar, plain, store_scalar


class GlobalAddress:
    """A kernel parameter in global memory (``x: asc.GlobalAddress``): an array argument, with
    ``.dtype`` and ``addr + offset`` (in elements)."""

    def __init__(self, root: np.ndarray, offset: int, name: str, dtype: Optional[DataType] = None) -> None:
        self.root = root  # the argument, flattened (a view: writes reach the caller)
        self.offset = offset
        self.name = name
        self.dtype = dtype if dtype is not None else dtype_of(root.dtype)

    def __add__(self, k: Any) -> "GlobalAddress":
        return GlobalAddress(self.root, self.offset + int(k), self.name, self.dtype)

    __radd__ = __add__

    def __repr__(self) -> str:
        return f"GlobalAddress({self.name} + {self.offset}, {self.dtype})"


class GlobalTensor:
    """Global data of the kernel: ``t = asc.GlobalTensor(); t.set_global_buffer(addr, length)``;
    ``t[i:]`` is the tensor from element i on."""

    memory_kind = "global"  # (_native tells the tensors apart by it)

    def __init__(self, dtype: Optional[DataType] = None) -> None:
        self.addr: Optional[GlobalAddress] = None
        self.length: Optional[int] = None
        self._dtype = dtype

    def set_global_buffer(self, addr: GlobalAddress, length: Optional[int] = None) -> None:
        if not isinstance(addr, GlobalAddress):
            raise _core.UserError(f"GlobalTensor.set_global_buffer: takes a GlobalAddress (a kernel parameter, or one "
                                  f"plus an offset), got {type(addr).__name__}" + _format_loc(user_loc()))
        self.addr = addr
        self.length = None if length is None else int(length)
        room = addr.root.size - addr.offset
        if addr.offset < 0 or (self.length is not None and self.length > room) or room < 0:
            raise _core.UserError(f"GlobalTensor.set_global_buffer: {addr.name} + {addr.offset} with length "
                                  f"{self.length} is outside the argument ({addr.root.size} elements)"
                                  + _format_loc(user_loc()))

    @property
    def dtype(self) -> DataType:
        if self.addr is not None:
            return self.addr.dtype
        if self._dtype is None:
            raise _core.UserError("GlobalTensor: no buffer set (call set_global_buffer first)"
                                  + _format_loc(user_loc()))
        return self._dtype

    def _need(self, op: str) -> GlobalAddress:
        if self.addr is None:
            raise _core.UserError(f"asc.{op}: the GlobalTensor has no buffer (call set_global_buffer first)"
                                  + _format_loc(user_loc()))
        return self.addr

    def __getitem__(self, key: Any) -> "GlobalTensor":
        start = _slice_start(key, "GlobalTensor")
        addr = self._need("GlobalTensor[]")
        out = GlobalTensor()
        out.addr = addr + start
        out.length = None if self.length is None else self.length - start
        return out

    def get_size(self) -> int:
        addr = self._need("get_size")
        return self.length if self.length is not None else addr.root.size - addr.offset

    def window(self, op: str, count: int) -> Tuple[np.ndarray, int, int]:
        """(the root array, first element, count) of `count` elements from here; a UserError when
        it leaves the buffer given to set_global_buffer or the argument."""
        addr = self._need(op)
        limit = self.length if self.length is not None else addr.root.size - addr.offset
        if count < 0 or count > limit or addr.offset < 0:
            what = "the buffer given to set_global_buffer" if self.length is not None else "the argument"
            raise _core.UserError(f"asc.{op}: {count} elements of {addr.name} from element {addr.offset} leave {what} "
                                  f"({limit} elements from there)" + _format_loc(user_loc()))
        return addr.root, addr.offset, count

    def get_value(self, i: int) -> Any:
        root, first, _ = self.window("GlobalTensor.get_value", int(i) + 1)
        value = load_scalar(self, int(i), root[first + int(i)].item())
        scalar_access("GlobalTensor.get_value", ("gm", id(root)), (first + int(i)) * root.itemsize, root.itemsize,
                      False)
        return value

    def set_value(self, i: int, v: Any) -> None:
        root, first, _ = self.window("GlobalTensor.set_value", int(i) + 1)
        store_scalar(self, int(i), v)
        scalar_access("GlobalTensor.set_value", ("gm", id(root)), (first + int(i)) * root.itemsize, root.itemsize,
                      True)
        _store(root, first + int(i), plain(v), self.dtype)


def _load(a: np.ndarray, i: int, dtype: DataType) -> Any:
    if dtype is bfloat16:
        return float(np.array([int(a[i]) << 16], np.uint32).view(np.float32)[0])
    return a[i].item()


def _store(a: np.ndarray, i: int, v: Any, dtype: DataType) -> None:
    if dtype is bfloat16:
        a[i] = to_bf16_bits(np.array([v], np.float32))[0]
    else:
        a[i] = v


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """fp32 values to bfloat16 bit patterns, rounded to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)


def _slice_start(key: Any, what: str) -> int:
    if isinstance(key, slice):
        if key.step not in (None, 1) or key.stop is not None:
            raise _core.UserError(f"{what}[...]: only [start:] is supported (a tensor from element start on)"
                                  + _format_loc(user_loc()))
        return int(key.start or 0)
    return int(key)


class LocalTensor:
    """Local memory of the block: ``asc.LocalTensor(dtype, asc.TPosition.VECIN, addr, tile_size)``
    (address in bytes in the position's memory, size in elements), or what a queue or buffer
    gives. ``t[i:]`` is the tensor from element i on."""

    memory_kind = "local"

    def __init__(self, dtype: Optional[DataType] = None, pos: TPosition = TPosition.VECIN, addr: int = 0,
                 tile_size: int = 0, *, _derived: bool = False) -> None:
        self.dtype = dtype if dtype is not None else float32
        self.pos = TPosition(pos)
        hw = HW_OF.get(self.pos)
        if hw is None:
            raise _core.UserError(f"asc.LocalTensor: {self.pos.name} is not a local position" + _format_loc(user_loc()))
        self.hw: Hardware = hw
        self.addr = int(addr)
        self.size = int(tile_size)
        if _derived:
            return
        block = current_block("LocalTensor")
        cap = block.capacity[self.hw]
        loc = user_loc()
        if self.addr % 32:
            raise _core.UserError(f"asc.LocalTensor: address {self.addr} is not 32-byte aligned (local tensors start "
                                  "on a 32-byte block)" + _format_loc(loc))
        end = self.addr + self.size * self.dtype.sizeof()
        if self.addr < 0 or end > cap:
            raise _core.UserError(f"asc.LocalTensor: bytes [{self.addr}, {end}) of {self.hw.name} are outside it "
                                  f"({cap} bytes on {block.machine})" + _format_loc(loc))
        if block.checker is not None:
            for hw, lo, hi, other in block.static_tensors:
                if hw is self.hw and lo < end and self.addr < hi:
                    block.checker.issue(f"asc.LocalTensor: bytes [{self.addr}, {end}) of {hw.name} overlap the "
                                        f"LocalTensor made at {other[0]}:{other[1]} (bytes [{lo}, {hi}))", loc)
        block.static_tensors.append((self.hw, self.addr, end, loc))

    @classmethod
    def at(cls, dtype: DataType, pos: TPosition, addr: int, size: int) -> "LocalTensor":
        return cls(dtype, pos, addr, size, _derived=True)

    def __getitem__(self, key: Any) -> "LocalTensor":
        start = _slice_start(key, "LocalTensor")
        if start < 0 or start > self.size:
            raise _core.UserError(f"LocalTensor[{start}:]: outside the tensor of {self.size} elements"
                                  + _format_loc(user_loc()))
        return LocalTensor.at(self.dtype, self.pos, self.addr + start * self.dtype.sizeof(), self.size - start)

    def get_length(self) -> int:
        """Bytes."""
        return self.size * self.dtype.sizeof()

    def get_size(self) -> int:
        """Elements."""
        return self.size

    def set_size(self, n: int) -> None:
        self.size = int(n)

    def get_position(self) -> TPosition:
        return self.pos

    def get_phy_addr(self, offset: int = 0) -> int:
        return self.addr + int(offset) * self.dtype.sizeof()

    def reinterpret_cast(self, dtype: DataType) -> "LocalTensor":
        return LocalTensor.at(dtype, self.pos, self.addr, self.get_length() // dtype.sizeof())

    def array(self, op: str, count: int) -> np.ndarray:
        """The first `count` elements as a numpy view of the block's memory; a UserError beyond the
        tensor (a write past it would corrupt its neighbour on the chip)."""
        if count > self.size:
            raise _core.UserError(f"asc.{op}: {count} elements of a {self.pos.name} LocalTensor of {self.size}"
                                  + _format_loc(user_loc()))
        mem = current_block(op).memory(self.hw)
        return mem[self.addr:self.addr + count * self.dtype.sizeof()].view(self.dtype.np)

    def span(self, count: int) -> Tuple[Any, int, int]:
        """(memory key, first byte, bytes) of `count` elements, for the checker."""
        return ("local", self.hw), self.addr, count * self.dtype.sizeof()

    def get_value(self, i: int) -> Any:
        a = self.array("LocalTensor.get_value", int(i) + 1)
        key, lo, _ = self.span(int(i) + 1)
        value = load_scalar(self, int(i), _load(a, int(i), self.dtype))
        scalar_access("LocalTensor.get_value", key, lo + int(i) * self.dtype.sizeof(), self.dtype.sizeof(), False)
        return value

    def set_value(self, i: int, v: Any) -> None:
        a = self.array("LocalTensor.set_value", int(i) + 1)
        key, lo, _ = self.span(int(i) + 1)
        store_scalar(self, int(i), v)
        scalar_access("LocalTensor.set_value", key, lo + int(i) * self.dtype.sizeof(), self.dtype.sizeof(), True)
        _store(a, int(i), plain(v), self.dtype)

    def __repr__(self) -> str:
        return f"LocalTensor({self.dtype}, {self.pos.name}, addr={self.addr}, size={self.size})"
