"""The checked mode's model of a core's pipes (S, V, M, MTE1-3, FIX) as concurrent: each
instruction is recorded on its pipe with the memory it reads and writes (record), and a
conflicting pair that no event, barrier or queue orders is a Race in the CheckReport. The events
and queues that order them are in _sync.py."""


from __future__ import annotations

import enum
from typing import Any, Dict, List, Optional, Tuple

from ...core._tracing import SourceLoc, user_loc
from ._block import current_block

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
