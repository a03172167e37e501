"""Ranks on several hosts: the engine that keeps each host's copy of the windows in step, over MPI.

A host's ranks share one symmetric heap (``heap.py``): every rank's copy of every window, so a
rank's program reads and writes a peer's copy as ordinary memory. Ranks of *other* hosts share no
memory: each host keeps its own heap, holding its ranks' copies and a mirror of every other
rank's. The engine makes the mirrors right where the program's signals say they must be
(release consistency, as the signals already order memory within a host):

* **Release** (before a notify that goes to a rank of another host, and when a rank's job ends):
  the bytes of this host's heap that changed since the last release (the heap compared with its
  *twin*, a second segment holding the heap as last sent or received) go to every other host,
  whose service thread writes exactly those bytes into its heap and twin and answers; the release
  returns once every host has answered. Only changed elements travel and only they are written,
  so two hosts writing different elements of one copy do not undo each other; an element both
  hosts changed (atomic adds into one window) gets the sender's difference added
  (``_core._merge_elements``: one compare-and-swap per element).
* **Signal**: the notify itself then goes to the target rank's service thread, which applies it to
  the cell in its host's heap and wakes the waiters (``_core._signal_cell``: the atomic and futex
  a local notify uses). The data it orders arrived before it, so a wait needs nothing from the
  engine: it sleeps on its cell as on one host.

The runtime hands each signal to the engine before the signal kernel runs
(``_core._set_signal_hook``, src/runtime/signal_hook.h); a notify to a rank of this host runs as
the kernel it is.

MPI (mpi4py; the MPICH wheel from PyPI) is the transport: ranks are MPI processes that
``mpiexec`` starts, messages are MPI sends on communicators of their own, and MPI's launcher
places the ranks on hosts. Waiting for a message polls with a sleep that grows to a millisecond
(a blocked MPI receive spins a core, which the rank's kernels need).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core

from .heap import SharedSegment, WindowLayout

_DATA, _SIGNAL, _STOP = 1, 2, 3  # service message tags
_ACK = 4
BLOCK = 64  # bytes compared per row of the diff


def host_of(rank: int, nranks: int, hosts: int) -> int:
    """The host of `rank` when `nranks` ranks are spread over `hosts` hosts in contiguous blocks."""
    return rank * hosts // nranks


def hosts_from_env(default: int = 1) -> int:
    v = os.environ.get("PYPTO_DIST_HOSTS", "")
    return int(v) if v.strip().isdigit() and int(v) > 0 else default


def _poll(request_done: Any, stop: Any = None) -> bool:
    """Waits for `request_done()` with a sleep growing from 20 us to 1 ms (MPI's blocking calls spin)."""
    pause = 2e-5
    while not request_done():
        if stop is not None and stop():
            return False
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)
    return True


class Engine:
    """One rank's side of the engine: its host's heap and twin, its service thread."""

    def __init__(self, comm: Any, hosts: int) -> None:
        from mpi4py import MPI  # the engine's import: a one-host run needs no MPI

        self.MPI = MPI
        self.comm = comm
        self.rank, self.nranks = comm.Get_rank(), comm.Get_size()
        if not 1 <= hosts <= self.nranks:
            raise _core.UserError(f"{hosts} hosts for {self.nranks} ranks: a host has at least one rank")
        self.hosts = hosts
        self.host = host_of(self.rank, self.nranks, hosts)
        self.host_ranks = [r for r in range(self.nranks) if host_of(r, self.nranks, hosts) == self.host]
        self.leaders = [min(r for r in range(self.nranks) if host_of(r, self.nranks, hosts) == h)
                        for h in range(hosts)]
        self.host_comm = comm.Split(self.host, self.rank)
        self.svc = comm.Dup()  # service messages (data, signals) to a rank's service thread
        self.acks = comm.Dup()  # a release's answers, to the rank that released
        self.heap: Optional[SharedSegment] = None
        self.twin: Optional[SharedSegment] = None
        self.layout: Optional[WindowLayout] = None
        self.base = 0
        self._lock_fd = -1
        self._lock = threading.Lock()
        self.stats = {"releases": 0, "bytes_sent": 0, "signals": 0}
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, name="pypto-dist-engine", daemon=True)
        self._thread.start()

    # --- the host's heap ----------------------------------------------------------------------

    def attach(self, layout: WindowLayout, zero: bool) -> SharedSegment:
        """The host's heap for `layout` (made by the host's first rank, mapped by the others; kept
        while it is large enough), zeroed when `zero`; returns once every host's is ready."""
        size = max(layout.total_bytes, 64)
        lead = self.rank == self.host_ranks[0]
        fresh = self.heap is None or self.heap.size < size
        if fresh:
            self._detach()
            names = None
            if lead:
                heap, twin = SharedSegment.create(size, "hostheap"), SharedSegment.create(size, "hosttwin")
                names = (heap.name, twin.name, heap.size)
            names = self.host_comm.bcast(names, root=0)
            if lead:
                self.heap, self.twin = heap, twin
            else:
                self.heap = SharedSegment(names[0], names[2], create=False)
                self.twin = SharedSegment(names[1], names[2], create=False)
            self._lock_fd = os.open("/dev/shm/" + names[0], os.O_RDWR)  # the host's lock (flock)
            self.host_comm.Barrier()  # every rank of the host has it mapped: the names can go
            if lead:
                self.heap.unlink()
                self.twin.unlink()
        elif zero and lead:
            for seg in (self.heap, self.twin):
                assert seg is not None
                seg.array(0, (seg.size,), np.uint8)[...] = 0
        assert self.heap is not None
        self.layout = layout
        self.base = self.heap.array(0, (1,), np.uint8).__array_interface__["data"][0]
        self.comm.Barrier()  # no host sends to another before that one is ready
        _core._set_signal_hook(self._on_signal)
        return self.heap

    def _detach(self) -> None:
        _core._set_signal_hook(None)
        for seg in (self.heap, self.twin):
            if seg is not None:
                seg.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
        self.heap = self.twin = None
        self._lock_fd = -1

    class _HostLock:
        def __init__(self, eng: "Engine") -> None:
            self.eng = eng

        def __enter__(self) -> None:
            self.eng._lock.acquire()
            fcntl.flock(self.eng._lock_fd, fcntl.LOCK_EX)

        def __exit__(self, *exc: Any) -> None:
            fcntl.flock(self.eng._lock_fd, fcntl.LOCK_UN)
            self.eng._lock.release()

    def _rows(self) -> Tuple[np.ndarray, np.ndarray]:
        assert self.heap is not None and self.twin is not None and self.layout is not None
        n = -(-max(self.layout.total_bytes, 1) // BLOCK)
        return (self.heap.array(0, (n, BLOCK), np.uint8), self.twin.array(0, (n, BLOCK), np.uint8))

    # --- release and signals ------------------------------------------------------------------

    def owner(self, cell: int) -> Optional[int]:
        """The rank whose copy of a window holds address `cell` (None: not in the heap)."""
        if self.layout is None or not self.base <= cell < self.base + self.layout.total_bytes:
            return None
        off = cell - self.base
        for w in self.layout.windows:
            if w.offset <= off < w.offset + w.nbytes * self.nranks:
                return (off - w.offset) // max(w.nbytes, 1)
        return None

    def _on_signal(self, kind: int, cell: int, value: int, op: int, cmp: int) -> Any:
        r = self.owner(cell)
        if r is None or host_of(r, self.nranks, self.hosts) == self.host:
            return False  # this host's memory: the kernel does it
        if kind == 1:
            return (f"rank {self.rank} waits on a signal cell of rank {r}, which runs on another host "
                    f"(host {host_of(r, self.nranks, self.hosts)}; this rank is on host {self.host}): a rank "
                    "waits on its own copy of a signal window, which its peers notify")
        self.release()
        self.svc.send((cell - self.base, int(value), int(op)), dest=r, tag=_SIGNAL)
        self.stats["signals"] += 1
        return True

    def release(self) -> None:
        """Sends what this host's heap changed to every other host; returns once all have it."""
        if self.heap is None or self.hosts == 1:
            return
        with Engine._HostLock(self):
            heap, twin = self._rows()
            changed = np.flatnonzero((heap != twin).any(axis=1))
            vals = heap[changed]  # (copies: what is sent is what the twin records)
            before = twin[changed]
            mask = vals != before
            twin[changed] = np.where(mask, vals, before)
        if changed.size == 0:
            return
        payload = (changed.astype(np.int64), np.packbits(mask, axis=1), vals, before)
        others = [self.leaders[h] for h in range(self.hosts) if h != self.host]
        for dest in others:
            self.svc.send(payload, dest=dest, tag=_DATA)
        for dest in others:
            req = self.acks.irecv(source=dest, tag=_ACK)
            _poll(lambda: req.Test())
        self.stats["releases"] += 1
        self.stats["bytes_sent"] += int(mask.sum()) * len(others)

    def _apply(self, payload: Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
        """Another host's changes: each changed element merged into the heap and the twin (as it
        is where this host left it alone; plus the sender's difference where both added)."""
        rows, packed, vals, before = payload
        mask = np.unpackbits(packed, axis=1, count=BLOCK).astype(bool)
        assert self.layout is not None and self.heap is not None and self.twin is not None
        twin_base = self.twin.array(0, (1,), np.uint8).__array_interface__["data"][0]
        with Engine._HostLock(self):
            for w in self.layout.windows:  # (rows never straddle windows: each starts 64-byte aligned)
                lo, hi = w.offset // BLOCK, -(-(w.offset + w.nbytes * self.nranks) // BLOCK)
                sel = np.flatnonzero((rows >= lo) & (rows < hi))
                if sel.size == 0:
                    continue
                k = w.dtype.itemsize
                per = BLOCK // k
                emask = mask[sel].reshape(sel.size, per, k).any(axis=2)
                r, c = np.nonzero(emask)
                idx = (rows[sel][r] * per + c).astype(np.int64)  # elements from the heap's start
                u = np.dtype(f"u{k}")
                fresh = np.ascontiguousarray(vals[sel].view(u)[r, c])
                old = np.ascontiguousarray(before[sel].view(u)[r, c])
                name = "bfloat16" if getattr(w, "bf16", False) else w.dtype.name
                _core._merge_elements(self.base, idx, fresh, old, name)
                _core._merge_elements(twin_base, idx, fresh, old, name)

    def _serve(self) -> None:
        MPI = self.MPI
        status = MPI.Status()
        while True:
            if not _poll(lambda: self.svc.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)):
                return
            msg = self.svc.recv(source=status.Get_source(), tag=status.Get_tag())
            tag, src = status.Get_tag(), status.Get_source()
            try:
                if tag == _STOP:
                    return
                if tag == _DATA:
                    self._apply(msg)
                    self.acks.send(True, dest=src, tag=_ACK)
                elif tag == _SIGNAL:
                    off, value, op = msg
                    _core._signal_cell(self.base + off, value, op)
            except Exception as e:  # noqa: BLE001 - a dead engine would hang every peer: end the rank
                os.write(2, f"pypto: rank {self.rank}'s engine failed: {e!r}\n".encode())
                os._exit(70)

    def close(self) -> None:
        """Stops the service thread (every rank's job has ended: nothing more comes)."""
        self.svc.send(None, dest=self.rank, tag=_STOP)
        self._thread.join(timeout=5)
        self._detach()


def diff_elements(before: np.ndarray, after: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The flat (C-order) indices of the elements of `after` whose bits differ from `before`, and
    their values (bits compared: a NaN written over a NaN of other bits counts)."""
    size = after.dtype.itemsize
    if size in (1, 2, 4, 8):
        u = np.dtype(f"u{size}")
        a, b = np.ascontiguousarray(after).view(u).reshape(-1), np.ascontiguousarray(before).view(u).reshape(-1)
        idx = np.flatnonzero(a != b)
    else:
        a8 = np.ascontiguousarray(after).view(np.uint8).reshape(-1, size)
        b8 = np.ascontiguousarray(before).view(np.uint8).reshape(-1, size)
        idx = np.flatnonzero((a8 != b8).any(axis=1))
    return idx, np.ascontiguousarray(after).reshape(-1)[idx]


def apply_elements(target: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    """Writes `vals` at the flat indices `idx` of `target` (any strides)."""
    if idx.size:
        target[np.unravel_index(idx, target.shape)] = vals


def ranks_per_host(nranks: int, hosts: int) -> List[int]:
    return [sum(1 for r in range(nranks) if host_of(r, nranks, hosts) == h) for h in range(hosts)]


def check_hosts(nranks: int, hosts: int, what: str) -> None:
    if not isinstance(hosts, int) or isinstance(hosts, bool) or not 1 <= hosts <= nranks:
        raise _core.UserError(f"{what}: hosts must be an int from 1 to the rank count ({nranks}), got {hosts!r}")


__all__: Sequence[str] = ["Engine", "host_of", "hosts_from_env", "diff_elements", "apply_elements",
                          "ranks_per_host", "check_hosts"]
