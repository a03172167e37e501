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

import enum
from typing import Any, Dict, List, Optional, Tuple

from ... import _core
from ...core._tracing import SourceLoc, _format_loc, user_loc
from ._memory import HW_OF, DataType, Hardware, LocalTensor, TPosition, current_block

PIPES = ["S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"]
_P = {p: i for i, p in enumerate(PIPES)}


class PipeID(enum.IntEnum):
    """Ascend C's pipes (``pipe_barrier`` takes one)."""

    PIPE_S = 0
    PIPE_V = 1
    PIPE_M = 2
    PIPE_MTE1 = 3
    PIPE_MTE2 = 4
    PIPE_MTE3 = 5
    PIPE_ALL = 6
    PIPE_FIX = 10


class HardEvent(enum.IntEnum):
    """``SRC_DST``: set by pipe SRC after its earlier instructions, waited for by pipe DST."""

    MTE2_MTE1 = 0
    MTE1_MTE2 = 1
    MTE1_M = 2
    M_MTE1 = 3
    MTE2_V = 4
    V_MTE2 = 5
    MTE3_V = 6
    V_MTE3 = 7
    M_V = 8
    V_M = 9
    V_V = 10
    MTE3_MTE1 = 11
    MTE1_MTE3 = 12
    MTE1_V = 13
    MTE2_M = 14
    M_MTE2 = 15
    V_MTE1 = 16
    M_FIX = 17
    FIX_M = 18
    MTE3_MTE2 = 19
    MTE2_MTE3 = 20
    S_V = 21
    V_S = 22
    S_MTE2 = 23
    MTE2_S = 24
    S_MTE3 = 25
    MTE3_S = 26
    MTE2_FIX = 27
    FIX_MTE2 = 28
    FIX_S = 29
    M_S = 30
    FIX_MTE3 = 31
    MTE1_FIX = 32
    FIX_MTE1 = 33
    FIX_FIX = 34

    @property
    def pipes(self) -> Tuple[str, str]:
        src, dst = self.name.split("_")
        return src, dst


def _event_name(src: str, dst: str) -> str:
    name = f"{src}_{dst}"
    return f"HardEvent.{name}" if name in HardEvent.__members__ else f"a {src} -> {dst} event"


class Access:
    __slots__ = ("pipe", "clock", "key", "lo", "hi", "write", "op", "loc")

    def __init__(self, pipe: int, clock: int, key: Any, lo: int, hi: int, write: bool, op: str,
                 loc: SourceLoc) -> None:
        self.pipe, self.clock, self.key, self.lo, self.hi = pipe, clock, key, lo, hi
        self.write, self.op, self.loc = write, op, loc


class Race:
    """Two conflicting accesses of different pipes that nothing orders."""

    def __init__(self, first: Access, second: Access, where: str) -> None:
        self.first, self.second, self.where = first, second, where
        self.blocks: List[int] = []

    @property
    def event(self) -> str:
        return _event_name(PIPES[self.first.pipe], PIPES[self.second.pipe])

    def __str__(self) -> str:
        f, s = self.first, self.second
        lo, hi = max(f.lo, s.lo), min(f.hi, s.hi)

        def one(a: Access) -> str:
            return f"{a.op} on {PIPES[a.pipe]} ({'write' if a.write else 'read'}) at {a.loc[0]}:{a.loc[1]}"
        others = len(self.blocks) - 1
        more = f" (and in {others} other block(s))" if others > 0 else ""
        return (f"data race on {self.where} bytes [{lo}, {hi}){more}: {one(f)}, then {one(s)}, with nothing "
                f"ordering them\n    hint: {self.event} (set_flag after the first, wait_flag before the second), a "
                "queue's enque/deque, or pipe_barrier(PipeID.PIPE_ALL)")


class CheckReport:
    """What the checked mode found in one launch: `races` and other `issues` (strings)."""

    def __init__(self) -> None:
        self.races: List[Race] = []
        self.issues: List[str] = []
        self.seen: Dict[Any, Race] = {}  # one report per pair of source lines; the blocks it happened in

    def add_race(self, race: Race, block: int) -> None:
        f, s = race.first, race.second
        sig = (f.op, f.loc[:2], s.op, s.loc[:2])
        if sig in self.seen:
            if block not in self.seen[sig].blocks:
                self.seen[sig].blocks.append(block)
            return
        race.blocks = [block]
        self.seen[sig] = race
        self.races.append(race)

    @property
    def clean(self) -> bool:
        return not self.races and not self.issues

    def __bool__(self) -> bool:
        return not self.clean

    def __str__(self) -> str:
        if self.clean:
            return "asc.check: no data race, no out-of-place local tensor"
        lines = [f"asc.check: {len(self.races)} data race(s), {len(self.issues)} other issue(s)"]
        lines += [f"  {r}" for r in self.races] + [f"  {i}" for i in self.issues]
        return "\n".join(lines)


class Checker:
    """Vector clocks of the pipes of one block, and the accesses not yet ordered before every
    pipe (older ones cannot race any more and are dropped)."""

    def __init__(self, block: int, report: CheckReport) -> None:
        self.block = block
        self.report = report
        self.vc = [[0] * len(PIPES) for _ in PIPES]
        self.flags: Dict[Tuple[int, int], List[List[int]]] = {}
        self.log: Dict[Any, List[Access]] = {}
        self.count = 0

    def tick(self, pipe: int) -> int:
        self.vc[pipe][pipe] += 1
        return self.vc[pipe][pipe]

    def access(self, pipe: int, key: Any, lo: int, nbytes: int, write: bool, op: str, loc: SourceLoc) -> None:
        if nbytes <= 0:
            return
        hi = lo + nbytes
        clock = self.vc[pipe]
        new = Access(pipe, clock[pipe], key, lo, hi, write, op, loc)
        for a in self.log.get(key, ()):
            if a.pipe == pipe or not (a.write or write) or a.hi <= lo or hi <= a.lo:
                continue
            if clock[a.pipe] >= a.clock:
                continue  # ordered: this pipe has seen that instruction complete
            self.report.add_race(Race(a, new, self._where(key)), self.block)
        self.log.setdefault(key, []).append(new)
        self.count += 1
        if self.count % 256 == 0:
            self._prune()

    def _where(self, key: Any) -> str:
        kind, what = key
        return f"block {self.block}'s {what.name}" if kind == "local" else "global memory"

    def _prune(self) -> None:
        floor = [min(self.vc[q][p] for q in range(len(PIPES))) for p in range(len(PIPES))]
        for key, accs in self.log.items():
            self.log[key] = [a for a in accs if a.clock > floor[a.pipe]]

    def set_flag(self, src: int, dst: int, event_id: int) -> None:
        self.flags.setdefault((src, dst, event_id), []).append(list(self.vc[src]))  # type: ignore[arg-type]

    def wait_flag(self, src: int, dst: int, event_id: int, name: str, loc: SourceLoc) -> None:
        pending = self.flags.get((src, dst, event_id))  # type: ignore[arg-type]
        if not pending:
            self.issue(f"wait_flag({name}, {event_id}) with no set_flag({name}, {event_id}) before it: on the chip the "
                       f"{PIPES[dst]} pipe waits for ever", loc)
            return
        seen = pending.pop(0)
        self.vc[dst] = [max(a, b) for a, b in zip(self.vc[dst], seen)]

    def join(self, dst: int, clock: List[int]) -> None:
        self.vc[dst] = [max(a, b) for a, b in zip(self.vc[dst], clock)]

    def barrier_all(self) -> None:
        top = [max(self.vc[q][p] for q in range(len(PIPES))) for p in range(len(PIPES))]
        self.vc = [list(top) for _ in PIPES]

    def issue(self, text: str, loc: SourceLoc) -> None:
        self.report.issues.append(f"{text} (block {self.block}, {loc[0]}:{loc[1]})")

    def finish(self) -> None:
        for (src, dst, event_id), pending in self.flags.items():  # type: ignore[misc]
            if pending:
                self.report.issues.append(f"set_flag({_event_name(PIPES[src], PIPES[dst])}, {event_id}) never waited "
                                          f"for (block {self.block})")


# --- recording instructions ------------------------------------------------------------------------------


def record(op: str, pipe: str, reads: List[Tuple[Any, int, int]], writes: List[Tuple[Any, int, int]]) -> None:
    """One instruction on `pipe` reading and writing these (key, first byte, bytes) spans."""
    block = current_block(op)
    if block.tape is not None:  # an instruction the native path cannot run ends the recording
        if not block.tape.pending:
            block.tape.valid = False
        block.tape.pending = False
    checker = block.checker
    if checker is None:
        return
    p = _P[pipe]
    checker.tick(p)
    loc = user_loc()
    for key, lo, n in reads:
        checker.access(p, key, lo, n, False, op, loc)
    for key, lo, n in writes:
        checker.access(p, key, lo, n, True, op, loc)
    if p == _P["S"] and not writes:
        # The scalar unit issues every instruction in program order, so a scalar read is done
        # before any later instruction of any pipe starts. (A scalar write may still be in flight:
        # S_V, S_MTE3, ... order it.)
        for q in range(len(PIPES)):
            checker.join(q, checker.vc[p])


def wait_pipe(op: str, src: str, dsts: Optional[List[str]] = None) -> None:
    """In checked mode: the pipes `dsts` (every pipe when None) wait for every instruction issued
    on `src` so far, as an API that synchronizes itself does (a ``set_flag`` / ``wait_flag``
    pair, or the scalar unit waiting and issuing nothing before)."""
    checker = current_block(op).checker
    if checker is None:
        return
    clock = list(checker.vc[_P[src]])
    for q in (dsts if dsts is not None else PIPES):
        checker.join(_P[q], clock)


def scalar_access(op: str, key: Any, lo: int, nbytes: int, write: bool) -> None:
    record(op, "S", [] if write else [(key, lo, nbytes)], [(key, lo, nbytes)] if write else [])


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
    from ._memory import float32
    return float32
