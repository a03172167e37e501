"""Ranks on several hosts: the engine that keeps each host's copy of the windows in step, over MPI.

A host's ranks share one symmetric heap (``heap.py``): every rank's copy of every window, so a
rank's program reads and writes a peer's copy as ordinary memory. Ranks of *other* hosts share no
memory: each host keeps its own heap, holding its ranks' copies and a mirror of every other
rank's. The engine makes the mirrors right where the program's signals say they must be
(release consistency, as the signals already order memory within a host):

* **Release** (before a notify that goes to a rank of another host, and when a rank's job ends):
  the bytes of this host's heap that changed since the last release (the heap compared with its
  *twin*, a second segment holding the heap as last sent or received, in 64-byte rows) go to every other host,
  whose service thread writes exactly those bytes into its heap and twin and answers; the release
  returns once every host has answered. Only changed elements travel and only they are written,
  so two hosts writing different elements of one copy do not undo each other; an element both
  hosts changed (atomic adds into one window) gets the sender's difference added
  (``_core._merge_span``: one compare-and-swap per changed element).
* **Signal**: the notify itself then goes to the target rank's service thread, which applies it to
  the cell in its host's heap and wakes the waiters (``_core._signal_cell``: the atomic and futex
  a local notify uses). The data it orders arrived before it, so a wait needs nothing from the
  engine: it sleeps on its cell as on one host.

The runtime hands each signal to the engine before the signal kernel runs
(``_core._set_signal_hook``, src/runtime/signal_hook.h); a notify to a rank of this host runs as
the kernel it is.

MPI (mpi4py; the MPICH wheel from PyPI) is the transport: ranks are MPI processes that
``mpiexec`` starts, messages are MPI sends on communicators of their own, and MPI's launcher
places the ranks on hosts. Waiting for a message polls with a sleep that grows to 200 us
(a blocked MPI receive spins a core, which the rank's kernels need).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core

from .heap import SharedSegment, WindowLayout

_DATA, _SIGNAL, _STOP, _FRESH, _BEFORE = 1, 2, 3, 5, 6  # service message tags
_ACK = 4
BLOCK = 64  # bytes compared per row of the diff


def host_of(rank: int, nranks: int, hosts: int) -> int:
    """The host of `rank` when `nranks` ranks are spread over `hosts` hosts in contiguous blocks."""
    return rank * hosts // nranks


def hosts_from_env(default: int = 1) -> int:
    v = os.environ.get("PYPTO_DIST_HOSTS", "")
    return int(v) if v.strip().isdigit() and int(v) > 0 else default


def _poll(request_done: Any, stop: Any = None) -> bool:
    """Waits for `request_done()`: a few bare retries, then a sleep growing from 10 us to 200 us
    (MPI's blocking calls spin a core, which the rank's kernels need)."""
    pause = 1e-5
    tries = 0
    while not request_done():
        if stop is not None and stop():
            return False
        tries += 1
        if tries > 20:
            time.sleep(pause)
            pause = min(pause * 2, 2e-4)
    return True


class Engine:
    """One rank's side of the engine: its host's heap and twin, its service thread."""

    def __init__(self, comm: Any, hosts: int, placement: str = "simulated") -> None:
        """`placement`: "simulated" (`hosts` contiguous blocks of ranks on this machine, each
        its own heap) or "node" (the ranks MPI finds sharing a node share a heap:
        MPI_COMM_TYPE_SHARED; how ranks land on real hosts is the launcher's placement)."""
        from mpi4py import MPI  # the engine's import: a one-host run needs no MPI

        self.MPI = MPI
        self.comm = comm
        self.rank, self.nranks = comm.Get_rank(), comm.Get_size()
        if placement == "node":
            node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
            leader = node.allreduce(self.rank, op=MPI.MIN)
            node.Free()
            leaders = comm.allgather(leader)
            order = sorted(set(leaders))
            self.host_of_rank = [order.index(x) for x in leaders]
        elif placement == "simulated":
            if not 1 <= hosts <= self.nranks:
                raise _core.UserError(f"{hosts} hosts for {self.nranks} ranks: a host has at least one rank")
            self.host_of_rank = [host_of(r, self.nranks, hosts) for r in range(self.nranks)]
        else:
            raise _core.UserError(f"PYPTO_DIST_PLACEMENT={placement!r}: 'simulated' or 'node'")
        self.hosts = max(self.host_of_rank) + 1
        self.host = self.host_of_rank[self.rank]
        self.host_ranks = [r for r in range(self.nranks) if self.host_of_rank[r] == self.host]
        self.leaders = [self.host_of_rank.index(h) for h in range(self.hosts)]
        self.host_comm = comm.Split(self.host, self.rank)
        self.svc = comm.Dup()  # service messages (data, signals) to a rank's service thread
        self.acks = comm.Dup()  # a release's answers, to the rank that released
        self.heap: Optional[SharedSegment] = None
        self.twin: Optional[SharedSegment] = None
        self.layout: Optional[WindowLayout] = None
        self.base = 0
        self._lock_fd = -1
        self._lock = threading.Lock()
        # what the engine did (summed per run by the launcher); times in seconds: a release's scan
        # and copies, its sends and the wait for the answers, the merges of what came in
        self.stats: Dict[str, Any] = {"releases": 0, "bytes_sent": 0, "signals": 0, "diff_s": 0.0, "send_s": 0.0,
                                      "merge_s": 0.0}
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

    def _addresses(self) -> Tuple[int, int]:
        assert self.heap is not None and self.twin is not None
        return self.base, self.twin.array(0, (1,), np.uint8).__array_interface__["data"][0]

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
        if r is None or self.host_of_rank[r] == self.host:
            return False  # this host's memory: the kernel does it
        if kind == 1:
            return (f"rank {self.rank} waits on a signal cell of rank {r}, which runs on another host "
                    f"(host {self.host_of_rank[r]}; this rank is on host {self.host}): a rank "
                    "waits on its own copy of a signal window, which its peers notify")
        self.release()
        self.svc.send((cell - self.base, int(value), int(op)), dest=r, tag=_SIGNAL)
        self.stats["signals"] += 1
        return True

    def release(self) -> None:
        """Sends what this host's heap changed to every other host; returns once all have it."""
        if self.heap is None or self.hosts == 1:
            return
        assert self.layout is not None and self.twin is not None
        total = self.layout.total_bytes
        heap_b, twin_b = self._addresses()
        heap = self.heap.array(0, (total,), np.uint8)
        twin = self.twin.array(0, (total,), np.uint8)
        t0 = time.perf_counter()
        with Engine._HostLock(self):
            runs = np.asarray(_core._changed_rows(heap_b, twin_b, total), np.int64).reshape(-1, 2) * BLOCK
            if runs.size == 0:
                return
            runs[:, 1] = np.minimum(runs[:, 1], total)
            fresh = np.concatenate([heap[a:b] for a, b in runs])  # (copies: what is sent is what the twin records)
            before = np.concatenate([twin[a:b] for a, b in runs])
            at = 0
            for a, b in runs:
                twin[a:b] = fresh[at:at + b - a]
                at += b - a
        others = [self.leaders[h] for h in range(self.hosts) if h != self.host]
        MPI = self.MPI
        t1 = time.perf_counter()
        for dest in others:
            self.svc.send(runs, dest=dest, tag=_DATA)
            self.svc.Send([fresh, MPI.BYTE], dest=dest, tag=_FRESH)
            self.svc.Send([before, MPI.BYTE], dest=dest, tag=_BEFORE)
        for dest in others:
            req = self.acks.irecv(source=dest, tag=_ACK)
            _poll(lambda: req.Test())
        self.stats["releases"] += 1
        self.stats["bytes_sent"] += int(fresh.nbytes) * len(others)
        self.stats["diff_s"] += t1 - t0
        self.stats["send_s"] += time.perf_counter() - t1

    def _apply(self, runs: np.ndarray, fresh: np.ndarray, before: np.ndarray) -> None:
        """Another host's changed rows merged into this host's heap and twin, window by window
        (each window's elements by its dtype: ``_core._merge_span``)."""
        assert self.layout is not None
        heap_b, twin_b = self._addresses()
        t0 = time.perf_counter()
        with Engine._HostLock(self):
            at = 0
            for a, b in runs:
                for w in self.layout.windows:
                    lo, hi = max(a, w.offset), min(b, w.offset + w.nbytes * self.nranks)
                    if lo < hi:
                        name = "bfloat16" if w.bf16 else w.dtype.name
                        s = slice(at + lo - a, at + hi - a)
                        _core._merge_span(heap_b + lo, twin_b + lo, fresh[s], before[s], name)
                at += b - a
        self.stats["merge_s"] += time.perf_counter() - t0

    def _serve(self) -> None:
        MPI = self.MPI
        status = MPI.Status()
        while True:
            if not _poll(lambda: self.svc.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)):
                return
            tag, src = status.Get_tag(), status.Get_source()
            msg = self.svc.recv(source=src, tag=tag)
            try:
                if tag == _STOP:
                    return
                if tag == _DATA:
                    n = int((msg[:, 1] - msg[:, 0]).sum())
                    fresh, before = np.empty(n, np.uint8), np.empty(n, np.uint8)
                    self.svc.Recv([fresh, MPI.BYTE], source=src, tag=_FRESH)
                    self.svc.Recv([before, MPI.BYTE], source=src, tag=_BEFORE)
                    self._apply(msg, fresh, before)
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
    """The runs of elements of `after` (flat, C order) whose bits differ from `before`, as an
    array [[start, end], ...], and their values, concatenated (bits compared: a NaN written over
    a NaN of other bits counts)."""
    size = after.dtype.itemsize
    a8 = np.ascontiguousarray(after).reshape(-1).view(np.uint8).reshape(-1, size)
    b8 = np.ascontiguousarray(before).reshape(-1).view(np.uint8).reshape(-1, size)
    changed = (a8 != b8).any(axis=1) if size > 1 else (a8 != b8).reshape(-1)
    edges = np.flatnonzero(np.diff(np.concatenate(([False], changed, [False])).astype(np.int8)))
    runs = edges.reshape(-1, 2)
    flat = np.ascontiguousarray(after).reshape(-1)
    vals = np.concatenate([flat[a:b] for a, b in runs]) if runs.size else flat[:0]
    return runs, vals


def apply_elements(target: np.ndarray, runs: np.ndarray, vals: np.ndarray) -> None:
    """Writes `vals` into the element runs `runs` ([[start, end], ...], flat C order) of `target`
    (any strides)."""
    if runs.size == 0:
        return
    flat = target.reshape(-1) if target.flags.c_contiguous else None
    at = 0
    for a, b in runs:
        if flat is not None:
            flat[a:b] = vals[at:at + b - a]
        else:
            target[np.unravel_index(np.arange(a, b), target.shape)] = vals[at:at + b - a]
        at += b - a


def check_hosts(nranks: int, hosts: int, what: str) -> None:
    if not isinstance(hosts, int) or isinstance(hosts, bool) or not 1 <= hosts <= nranks:
        raise _core.UserError(f"{what}: hosts must be an int from 1 to the rank count ({nranks}), got {hosts!r}")


__all__: Sequence[str] = ["Engine", "host_of", "hosts_from_env", "diff_elements", "apply_elements",
                          "check_hosts"]
