"""The symmetric heap of a host: one shared-memory segment every rank maps, holding every rank's
copy of each window buffer, so a rank's program addresses all copies of a window as one tensor
with a leading rank dim (the compiler orders the accesses like any others; the signals order them
across ranks).

The segment is a file of /dev/shm made by the orchestrator process. It is unlinked as soon as
every rank has mapped it, so no segment outlives the run even when a rank or the orchestrator is
killed (the memory goes when the last mapping does)."""

from __future__ import annotations

import mmap
import os
import secrets
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

import numpy as np

import pypto._core as _core

PAGE = 4096


class SharedSegment:
    """A named shared-memory segment mapped into this process."""

    def __init__(self, name: str, size: int, create: bool) -> None:
        self.name, self.size = name, size
        path = "/dev/shm/" + name
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as e:
            raise _core.UserError(f"shared memory segment {path}: {e.strerror}"
                                  + ("" if create else " (its creator ended or unlinked it early)")) from None
        try:
            if create:
                os.ftruncate(fd, size)
            self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            if create:
                os.unlink(path)
            raise _core.UserError(f"shared memory segment {path} of {size} bytes: {e.strerror} (is /dev/shm "
                                  "large enough? `df -h /dev/shm`)") from None
        finally:
            os.close(fd)

    @staticmethod
    def create(size: int, tag: str = "heap") -> "SharedSegment":
        return SharedSegment(f"pypto-{os.getpid()}-{tag}-{secrets.token_hex(4)}", max(size, PAGE), True)

    def unlink(self) -> None:
        try:
            os.unlink("/dev/shm/" + self.name)
        except FileNotFoundError:
            pass

    def array(self, offset: int, shape: Sequence[int], dtype: np.dtype,
              strides: Sequence[int] = ()) -> np.ndarray:
        """A numpy view of the segment (strides in bytes; dense when empty)."""
        return np.ndarray(tuple(shape), dtype=dtype, buffer=self.map, offset=offset,
                          strides=tuple(strides) if strides else None)

    def close(self) -> None:
        try:
            self.map.close()
        except BufferError:  # a numpy view is still alive: the mapping goes with it
            pass


@dataclass
class Window:
    shape: Tuple[int, ...]
    dtype: np.dtype
    offset: int  # of rank 0's copy; rank r's follows at offset + r * nbytes
    bf16: bool = False  # (its numpy dtype is uint16: bf16's bits)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class WindowLayout:
    """The window buffers of a program, in allocation order. Each window is one dense block of
    every rank's copy, [nranks, *shape], 64-byte aligned: the array a rank's program receives is
    then an ordinary dense tensor (its own copy a view of it; no 4 KiB floor per window, which the
    NPU's window registration needs and shared memory does not)."""

    nranks: int
    windows: List[Window] = field(default_factory=list)
    total_bytes: int = 0

    def allocate(self, shape: Sequence[int], dtype: np.dtype, bf16: bool = False) -> int:
        w = Window(tuple(int(d) for d in shape), np.dtype(dtype), self.total_bytes, bf16)
        self.windows.append(w)
        self.total_bytes += -(-w.nbytes * self.nranks // 64) * 64
        return len(self.windows) - 1

    def all_ranks(self, seg: SharedSegment, index: int) -> np.ndarray:
        """Window `index` of every rank as one array [nranks, *shape] over the segment."""
        w = self.windows[index]
        return seg.array(w.offset, (self.nranks,) + w.shape, w.dtype)
