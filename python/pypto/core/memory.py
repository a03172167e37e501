"""pypto's own host memory, apart from the caller's: the outputs, created tensors and workspaces
a call allocates (src/runtime/host_memory.cpp), the blocks kept for reuse between calls, and the
frontend's dense copies of strided arguments.

    pypto.reset_peak_memory()
    out = fn(x)
    s = pypto.memory_stats()   # s.peak: the most pypto held in use during the call (out included)

The figures are block sizes as allocated (64 B multiples, 2 MiB multiples for large blocks);
the caller's arrays, torch's and numpy's memory are not in them.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Dict

import pypto._core as _core


@dataclass(frozen=True)
class MemoryStats:
    """pypto's host memory in bytes."""

    live: int       # in use now: outputs the caller still holds, a running call's tensors
    peak: int       # the most `live` reached since the last reset_peak_memory()
    pooled: int     # freed blocks kept for the next call of the same shapes (release_memory() frees them)
    held: int       # live + pooled: what pypto keeps of the process's memory
    peak_held: int  # the most `held` reached since the last reset
    allocs: int     # blocks taken from the system (since the process started)
    reuses: int     # blocks served from the pool

    def as_dict(self) -> Dict[str, int]:
        return asdict(self)


def memory_stats() -> MemoryStats:
    """pypto's host memory now, with the peaks since the last reset_peak_memory()."""
    return MemoryStats(**_core.host_memory_stats())


def reset_peak_memory() -> MemoryStats:
    """Starts a new peak at what is live now; returns the stats before the reset."""
    return MemoryStats(**_core.reset_host_peak())


class _Counted:
    """Counts an array pypto allocated outside its host memory (a dense copy of a strided
    argument) as live until release()."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)
        _core._count_host_bytes(self.nbytes)

    def release(self) -> None:
        if self.nbytes:
            _core._count_host_bytes(-self.nbytes)
            self.nbytes = 0


def _report_at_exit(path: str) -> None:
    """Writes pypto's peaks over the whole process to `path` (JSON) when it exits: how a runner of
    test processes (scripts/run_cann_examples.py) reads pypto's share of a test's memory."""
    import atexit
    import json

    def write() -> None:
        try:
            with open(path, "w") as f:
                json.dump(memory_stats().as_dict(), f)
        except OSError:
            pass

    atexit.register(write)


if os.environ.get("PYPTO_MEMORY_REPORT"):
    _report_at_exit(os.environ["PYPTO_MEMORY_REPORT"])
