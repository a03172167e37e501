"""Pipes, events and the checked mode of ``pypto.asc``.

On the chip each pipe (S scalar, V vector, M cube, MTE1/MTE2/MTE3 data movement, FIX) runs its
own queue of instructions in order, concurrently with the others; only ``set_flag`` /
``wait_flag`` pairs, ``pipe_barrier(PIPE_ALL)`` and the queues' ``enque`` / ``deque`` (and
``free_tensor`` / ``alloc_tensor``) order instructions of different pipes. A kernel here runs
its instructions in program order (the answer a correctly synchronized kernel gives); the
checker models the concurrency with a vector clock per pipe and reports every pair of
conflicting accesses (overlapping bytes, one a write, different pipes) that nothing orders.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pypto._core as _core
from ...core._tracing import _format_loc, user_loc
from ._block import HW_OF, DataType, Hardware, TPosition, current_block, float32
from ._checker import _P, HardEvent, PipeID
from ._memory import LocalTensor


def set_flag(event: HardEvent, event_id: int = 0) -> None:
    """Pipe SRC of `event` sets the flag once its earlier instructions are done."""
    checker = current_block("set_flag").checker
    ev = HardEvent(event)
    if checker is not None:
        src, dst = ev.pipes
        checker.set_flag(_P[src], _P[dst], int(event_id))


def wait_flag(event: HardEvent, event_id: int = 0) -> None:
    """Pipe DST of `event` waits for the flag before its later instructions."""
    checker = current_block("wait_flag").checker
    ev = HardEvent(event)
    if checker is not None:
        src, dst = ev.pipes
        checker.wait_flag(_P[src], _P[dst], int(event_id), f"HardEvent.{ev.name}", user_loc())


def pipe_barrier(pipe: PipeID) -> None:
    """Waits for every instruction of `pipe` issued before (PIPE_ALL: of every pipe). A pipe runs
    in order already, so only PIPE_ALL orders pipes against each other here."""
    checker = current_block("pipe_barrier").checker
    if checker is not None and PipeID(pipe) is PipeID.PIPE_ALL:
        checker.barrier_all()


# --- TPipe / TQue / TBuf -----------------------------------------------------------------------------------

# The pipes a queue's enque / deque order (producer, consumer), by position, as Ascend C inserts them.
_QUEUE_PIPES = {TPosition.VECIN: ("MTE2", "V"), TPosition.VECOUT: ("V", "MTE3"), TPosition.A1: ("MTE2", "MTE1"),
                TPosition.B1: ("MTE2", "MTE1"), TPosition.A2: ("MTE1", "M"), TPosition.B2: ("MTE1", "M"),
                TPosition.CO1: ("M", "FIX"), TPosition.CO2: ("FIX", "MTE3"), TPosition.VECCALC: ("V", "V")}


class TPipe:
    """Allocates the buffers of queues and TBufs in local memory (``init_buffer``)."""

    def __init__(self) -> None:
        self.block = current_block("TPipe")
        self.next: Dict[Hardware, int] = {}

    def init_buffer(self, que: Any = None, num: Optional[int] = None, len: Optional[int] = None,  # noqa: A002
                    length: Optional[int] = None, *, buf: Any = None) -> None:
        """``init_buffer(que, num, len)`` for a TQue (`num` buffers of `len` bytes, rounded up to
        32), ``init_buffer(tbuf, len)`` for a TBuf, with PyAsc's keywords (``que=``, ``num=``,
        ``len=``, ``buf=``; ``length=`` is accepted for `len`)."""
        if len is not None and length is not None and int(len) != int(length):
            raise _core.UserError(f"TPipe.init_buffer: len={len} and length={length} disagree (give one)"
                                  + _format_loc(user_loc()))
        size_arg = len if len is not None else length
        if buf is not None:
            if que is not None:
                raise _core.UserError("TPipe.init_buffer: give que= or buf=, not both" + _format_loc(user_loc()))
            que = buf
        if isinstance(que, TBuf):
            if num is not None and size_arg is not None:
                raise _core.UserError("TPipe.init_buffer(tbuf, len): a TBuf takes one size in bytes"
                                      + _format_loc(user_loc()))
            num, size_arg = 1, (num if num is not None else size_arg)
        if not isinstance(que, (TQue, TBuf)) or num is None or size_arg is None:
            raise _core.UserError("TPipe.init_buffer(que, num, len) for a TQue or (tbuf, len) for a TBuf (len in bytes)"
                                  + _format_loc(user_loc()))
        length = int(size_arg)
        if int(num) <= 0 or length <= 0:
            raise _core.UserError(f"TPipe.init_buffer: {num} buffer(s) of {length} bytes; both must be positive"
                                  + _format_loc(user_loc()))
        hw = HW_OF[que.pos]
        size = (int(length) + 31) // 32 * 32
        start = self.next.get(hw, 0)
        end = start + size * int(num)
        cap = self.block.capacity[hw]
        if end > cap:
            raise _core.UserError(f"TPipe.init_buffer: {num} buffer(s) of {length} bytes need {hw.name} bytes "
                                  f"[{start}, {end}), more than its {cap} on {self.block.machine}"
                                  + _format_loc(user_loc()))
        self.next[hw] = end
        que.bind([start + k * size for k in range(int(num))], size)


class TBuf:
    """A buffer of scratch local memory (VECCALC): ``tbuf.get(dtype)``; no synchronization."""

    def __init__(self, pos: TPosition = TPosition.VECCALC) -> None:
        self.pos = TPosition(pos)
        self.addrs: List[int] = []
        self.size = 0

    def bind(self, addrs: List[int], size: int) -> None:
        self.addrs, self.size = addrs, size

    def get(self, dtype: DataType, length: Optional[int] = None) -> LocalTensor:
        if not self.addrs:
            raise _core.UserError("TBuf.get: the buffer has no memory (TPipe.init_buffer first)"
                                  + _format_loc(user_loc()))
        n = self.size // dtype.sizeof() if length is None else int(length)
        return LocalTensor.at(dtype, self.pos, self.addrs[0], n)

    def get_with_offset(self, size: int, offset: int, dtype: DataType) -> LocalTensor:
        return LocalTensor.at(dtype, self.pos, self.addrs[0] + int(offset), int(size))


class TQue:
    """A queue of `depth` buffers at a position: ``alloc_tensor`` / ``enque`` on the producer
    side, ``deque`` / ``free_tensor`` on the consumer side. They synchronize by themselves, as in
    Ascend C: enque -> deque orders the producer pipe before the consumer (VECIN: MTE2 -> V,
    VECOUT: V -> MTE3, ...), free_tensor -> alloc_tensor the consumer before the next producer."""

    def __init__(self, pos: TPosition, depth: int = 1) -> None:
        self.pos = TPosition(pos)
        if self.pos not in _QUEUE_PIPES:
            raise _core.UserError(f"asc.TQue: no queue at position {self.pos.name}" + _format_loc(user_loc()))
        self.depth = int(depth)
        self.producer, self.consumer = (_P[p] for p in _QUEUE_PIPES[self.pos])
        self.addrs: List[int] = []
        self.size = 0
        self.free: List[int] = []
        self.released: Dict[int, Optional[List[int]]] = {}  # buffer -> consumer clock at free_tensor
        self.queued: List[Tuple[LocalTensor, Optional[List[int]]]] = []
        self.in_use: Dict[int, LocalTensor] = {}

    def bind(self, addrs: List[int], size: int) -> None:
        self.addrs, self.size = addrs, size
        self.free = list(addrs)

    def _checker(self, op: str) -> Any:
        return current_block(op).checker

    def alloc_tensor(self, dtype: Optional[DataType] = None, length: Optional[int] = None) -> LocalTensor:
        if not self.addrs:
            raise _core.UserError("TQue.alloc_tensor: the queue has no buffers (TPipe.init_buffer first)"
                                  + _format_loc(user_loc()))
        if not self.free:
            raise _core.UserError(f"TQue.alloc_tensor: all {len(self.addrs)} buffer(s) of the {self.pos.name} queue "
                                  "are in use (free_tensor releases one): on the chip this waits for ever"
                                  + _format_loc(user_loc()))
        addr = self.free.pop(0)
        dt = dtype if isinstance(dtype, DataType) else _float32()
        t = LocalTensor.at(dt, self.pos, addr, self.size // dt.sizeof() if length is None else int(length))
        checker = self._checker("TQue.alloc_tensor")
        released = self.released.pop(addr, None)
        if checker is not None and released is not None:
            checker.join(self.producer, released)
        self.in_use[addr] = t
        return t

    def enque(self, t: LocalTensor) -> None:
        if len(self.queued) >= self.depth:
            raise _core.UserError(f"TQue.enque: the {self.pos.name} queue of depth {self.depth} is full"
                                  + _format_loc(user_loc()))
        checker = self._checker("TQue.enque")
        self.queued.append((t, list(checker.vc[self.producer]) if checker is not None else None))

    def deque(self, dtype: Optional[DataType] = None) -> LocalTensor:
        if not self.queued:
            raise _core.UserError(f"TQue.deque: the {self.pos.name} queue is empty (no enque before it): on the chip "
                                  "this waits for ever" + _format_loc(user_loc()))
        t, clock = self.queued.pop(0)
        checker = self._checker("TQue.deque")
        if checker is not None and clock is not None:
            checker.join(self.consumer, clock)
        if isinstance(dtype, DataType) and dtype != t.dtype:
            t = t.reinterpret_cast(dtype)
        return t

    def free_tensor(self, t: LocalTensor) -> None:
        if t.addr not in self.in_use:
            raise _core.UserError("TQue.free_tensor: this tensor is not an allocated buffer of the queue"
                                  + _format_loc(user_loc()))
        del self.in_use[t.addr]
        checker = self._checker("TQue.free_tensor")
        self.released[t.addr] = list(checker.vc[self.consumer]) if checker is not None else None
        self.free.append(t.addr)

    def has_tensor_in_que(self) -> bool:
        return bool(self.queued)

    def get_tensor_count_in_que(self) -> int:
        return len(self.queued)

    def has_idle_buffer(self) -> bool:
        return bool(self.free)

    def vacant_in_que(self) -> bool:
        return len(self.queued) < self.depth


def _float32() -> DataType:
    return float32
