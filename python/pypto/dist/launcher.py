"""The rank processes of a host: one OS process per rank, started once (``spawn``: a fresh
interpreter, never a fork of a process that runs threads) and kept for the next run of the same
rank count. A run hands each rank a job (its list of calls, the segments to map); the orchestrator
then waits on every rank's pipe and process at once, so the first rank that raises, dies or
outlives the timeout ends the run for all: the others are killed, the pool is dropped, and the
error names the rank and what it said. Ranks die with their orchestrator (PR_SET_PDEATHSIG, and a
closed pipe), so none is left behind.

The functions a job calls travel by name (module, qualified name), as multiprocessing sends
functions: a program's functions are module-level definitions."""

from __future__ import annotations

import atexit
import ctypes
import glob
import importlib
import json
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core

from ..core import config
from . import context
from .heap import SharedSegment, WindowLayout


class DistributedError(RuntimeError):
    """A rank failed (raised, died or timed out); the message names it."""


@dataclass
class HostArray:
    """A caller's array as a rank sees it: a view of the host arena (byte offset and strides)."""

    offset: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    dtype: str
    written: bool = True  # the rank may write it (a pl.Out / InOut argument)


@dataclass
class SegmentArray:
    """An array in a segment of its own (a worker-resident tensor): mapped by name, kept mapped."""

    name: str
    size: int
    offset: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    dtype: str


@dataclass
class ValueArray:
    """An array sent by value (a rank of another host maps none of the orchestrator's memory): the
    rank answers with the elements it changed (``engine.diff_elements``), which the orchestrator
    writes back where the array came from (`source`: its HostArray or SegmentArray)."""

    data: np.ndarray
    key: int = 0  # the same array in several calls of a job: one copy on the rank
    source: Any = None  # (the orchestrator's: not sent)
    written: bool = True  # False: an input, nothing to send back

    def __getstate__(self) -> Dict[str, Any]:
        return {"data": self.data, "key": self.key, "source": None, "written": self.written}


@dataclass
class WindowArg:
    """A window buffer of the symmetric heap (the index in the job's layout)."""

    index: int


@dataclass
class Call:
    module: str
    qualname: str
    args: List[Any]
    kwargs: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Job:
    calls: List[Call]
    arena: Optional[Tuple[str, int]] = None
    heap: Optional[Tuple[str, int]] = None
    layout: Optional[WindowLayout] = None
    trace_t0: Optional[float] = None  # set: record each call's swimlane (time.perf_counter() origin, shared)
    forget: List[str] = field(default_factory=list)  # segments the orchestrator dropped: unmap them
    segments: List[Tuple[str, int]] = field(default_factory=list)  # more segments to map before "mapped"
    zero_heap: bool = True  # the windows start zeroed (a persistent worker's keep what they hold)


# How a rank records one call's swimlane: a context manager for a file path, registered by the jit
# front door (it owns the tracing); None: calls are not traced.
swimlane_to: Optional[Callable[[str], Any]] = None


def resolve(module: str, qualname: str) -> Any:
    if module == "__main__" and "__mp_main__" in sys.modules:
        mod = sys.modules["__mp_main__"]
    else:
        mod = importlib.import_module(module)
    obj: Any = mod
    for part in qualname.split("."):
        if part == "<locals>":
            raise _core.UserError(f"{qualname}: a function a rank runs must be defined at module level (ranks "
                                  "are separate processes and find it by its module and name)")
        obj = getattr(obj, part)
    return obj


def function_ref(fn: Any) -> Tuple[str, str]:
    inner = getattr(fn, "fn", fn)
    module, qualname = getattr(inner, "__module__", None), getattr(inner, "__qualname__", "")
    if not module or "<locals>" in qualname or "<lambda>" in qualname:
        raise _core.UserError(f"{qualname or fn!r}: a function a rank runs must be defined at module level "
                              "(ranks are separate processes and find it by its module and name)")
    return module, qualname


# --- the rank process ----------------------------------------------------------------------------


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _rank_main(rank: int, nranks: int, conn: Any, env: Dict[str, str]) -> None:
    _die_with_parent()
    os.environ.update(env)
    serve(rank, nranks, conn, nranks)


def serve(rank: int, nranks: int, conn: Any, ranks_here: int, engine: Any = None) -> None:
    """A rank's loop: runs each job the orchestrator sends until it sends None or goes away.
    `ranks_here`: the ranks of this host (they share its cores); `engine`: the cross-host engine
    (``engine.Engine``) when the ranks span hosts."""
    context.set_current(context.RankContext(rank, nranks))
    # The host's cores shared among its ranks (a rank's runtime takes every core by default).
    config.set_runtime_options(workers=max(1, len(os.sched_getaffinity(0)) // ranks_here))
    conn.send(("ready", None))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            conn.send(("done", _run_job(job, conn, engine)))
        except BaseException as e:  # noqa: BLE001 - every failure goes to the orchestrator
            conn.send(("error", f"{type(e).__name__}: {e}", traceback.format_exc()))


_mapped: Dict[str, SharedSegment] = {}  # a rank's mappings, by segment name (kept for later runs)


def _map(seg: Optional[Tuple[str, int]]) -> Optional[SharedSegment]:
    """The segment, mapped once per rank process: an orchestrator hands the same segment to later
    runs (it unlinks the name once every rank has mapped it)."""
    if seg is None:
        return None
    name, size = seg
    m = _mapped.get(name)
    if m is None or m.size != size:
        m = _mapped[name] = SharedSegment(name, size, create=False)
    return m


def forget(names: Sequence[str]) -> None:
    """Drops a rank's mappings of these segments (the orchestrator made new ones)."""
    for n in names:
        m = _mapped.pop(n, None)
        if m is not None:
            m.close()


def _run_job(job: Job, conn: Any, engine: Any = None) -> Any:
    """Runs a job's calls; answers its swimlane events (with an engine: and what it changed of the
    arrays it was sent by value)."""
    forget(job.forget)
    if engine is None:
        arena, heap = _map(job.arena), _map(job.heap)
        for seg in job.segments:
            _map(seg)
    else:  # ranks of several hosts: each host's heap is the engine's; arrays come by value
        counted = dict(engine.stats)
        arena = None
        heap = engine.attach(job.layout, job.zero_heap) if job.layout is not None and job.layout.windows else None
    conn.send(("mapped", None))
    ctx = context.require("a rank job")
    windows: Dict[int, np.ndarray] = {}
    sent: Dict[int, Tuple[Optional[np.ndarray], np.ndarray]] = {}  # key -> (as sent when written, the rank's)

    def arg(a: Any) -> Any:
        if isinstance(a, ValueArray):
            if a.key not in sent:
                sent[a.key] = (a.data.copy() if a.written else None, a.data)
            return sent[a.key][1]
        if isinstance(a, HostArray):
            assert arena is not None
            return arena.array(a.offset, a.shape, np.dtype(a.dtype), a.strides)
        if isinstance(a, SegmentArray):
            seg = _map((a.name, a.size))
            assert seg is not None
            return seg.array(a.offset, a.shape, np.dtype(a.dtype), a.strides)
        if isinstance(a, WindowArg):
            assert heap is not None and job.layout is not None
            if a.index not in windows:
                windows[a.index] = _window_array(job.layout.all_ranks(heap, a.index), ctx.rank)
            return windows[a.index]
        return a

    events: List[Dict[str, Any]] = []
    for i, c in enumerate(job.calls):
        fn = resolve(c.module, c.qualname)
        args, kwargs = [arg(a) for a in c.args], {k: arg(v) for k, v in c.kwargs.items()}
        if job.trace_t0 is None or swimlane_to is None:
            fn(*args, **kwargs)
            continue
        with tempfile.TemporaryDirectory(prefix="pypto-rank-") as tmp:
            path = os.path.join(tmp, "swimlane.json")
            start = time.perf_counter()
            with swimlane_to(path):
                fn(*args, **kwargs)
            if os.path.exists(path):
                with open(path) as f:
                    events += _as_rank_events(json.load(f), ctx.rank, i, c.qualname, (start - job.trace_t0) * 1e6)
    if engine is None:
        return events
    from .engine import diff_elements
    engine.release()  # what this rank wrote into windows reaches every host before it says done
    changed = {}
    for key, (before, after) in sent.items():
        if before is None:
            continue
        runs, vals = diff_elements(before, after)
        if runs.size:
            changed[key] = (runs, vals)
    sent_now = {k: v - counted.get(k, 0) for k, v in engine.stats.items()}
    return {"events": events, "changed": changed, "engine": sent_now}


def _as_rank_events(trace: Dict[str, Any], rank: int, call: int, name: str, offset_us: float) -> List[Dict[str, Any]]:
    """One call's swimlane as events of rank `rank`'s track (a process per rank), on the run's clock."""
    out = []
    for e in trace.get("traceEvents", []):
        e = dict(e)
        e["pid"] = rank
        if e.get("ph") == "M" and e.get("name") == "process_name":
            e["args"] = {"name": f"rank {rank}"}
        elif e.get("ph") == "M" and e.get("name") == "process_sort_index":
            continue
        if "ts" in e:
            e["ts"] = float(e["ts"]) + offset_us
        if "id" in e:
            e["id"] = f"{rank}.{call}.{e['id']}"
        if e.get("ph") == "X" and e.get("tid") == 0:
            e["name"] = f"{name}: {e.get('name', '')}"
        out.append(e)
    out.append({"ph": "M", "pid": rank, "name": "process_sort_index", "args": {"sort_index": rank}})
    return out


class WindowArray(np.ndarray):
    """A window of every rank, [nranks, *shape], as a rank's program receives it: its own copy is
    ``[rank]`` (``window_rank``); the others are the peers' (pld.DistributedTensor)."""

    window_rank: int = 0


def _window_array(a: np.ndarray, rank: int) -> WindowArray:
    w = a.view(WindowArray)
    w.window_rank = rank
    return w


# --- the orchestrator side -----------------------------------------------------------------------


class RankPool:
    """`nranks` rank processes; `run` gives each its job and waits for all of them."""

    def __init__(self, nranks: int, env: Dict[str, str], hosts: int = 1) -> None:
        _sweep_stale_segments()
        ctx = mp.get_context("spawn")
        self.nranks, self.hosts = nranks, hosts
        self.procs: List[Any] = []
        self.conns: List[Any] = []
        self.launcher: Any = None  # MPI's launcher, when the ranks span hosts (mpi_pool.py)
        if hosts > 1:
            from .mpi_pool import start_ranks

            self.launcher, self.procs, self.conns = start_ranks(nranks, hosts, env)
        for r in range(nranks if hosts == 1 else 0):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_rank_main, args=(r, nranks, child, env), name=f"pypto-rank{r}", daemon=True)
            p.start()
            child.close()
            self.procs.append(p)
            self.conns.append(parent)
        self.alive = True
        self.ready: set = set()  # ranks whose process has started (sent "ready")

    def run(self, jobs: Sequence[Job], timeout: float,
            on_mapped: Optional[Callable[[], None]] = None) -> List[Any]:
        """Each rank's answer (its swimlane events when the job traces), in rank order."""
        if not self.alive:
            raise DistributedError("this rank pool was stopped after a failure")
        for r, job in enumerate(jobs):
            try:
                self.conns[r].send(job)
            except (BrokenPipeError, OSError):
                self.stop()
                raise DistributedError(f"rank {r} of {self.nranks} is gone (exit code {self.procs[r].exitcode}) "
                                       "before the run started") from None
        pending = set(range(self.nranks))
        answers: List[Any] = [None] * self.nranks
        mapped = 0
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            # Every rank's process, finished or not: one that dies during the run ends it (its peers
            # may still wait for it).
            waitables = [self.conns[r] for r in pending] + [p.sentinel for p in self.procs]
            ready = mpc.wait(waitables, timeout=max(0.0, left)) if left > 0 else []
            if not ready:
                ranks = sorted(pending)
                self.stop()
                raise DistributedError(
                    f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} of {self.nranks} did not "
                    f"finish within {timeout:g} s; every rank was stopped\nhint: raise the limit with "
                    "DistributedConfig(timeout=...)")
            for r, proc in enumerate(self.procs):
                if r not in pending and proc.sentinel in ready:
                    proc.join(timeout=1)
                    self.stop()
                    raise DistributedError(f"rank {r} of {self.nranks} died ({_exit_text(proc.exitcode)}) after "
                                           f"its part, while rank(s) {sorted(pending)} still ran; every rank was "
                                           "stopped")
            for r in sorted(pending):
                conn, proc = self.conns[r], self.procs[r]
                kind = ""
                if conn in ready or conn.poll():
                    try:
                        kind, msg, *rest = conn.recv()
                    except (EOFError, OSError):
                        kind, msg, rest = "died", None, []
                    if kind == "ready":
                        self.ready.add(r)
                        continue
                    if kind == "mapped":
                        mapped += 1
                        if mapped == self.nranks and on_mapped is not None:
                            on_mapped()
                        continue
                    if kind == "done":
                        answers[r] = msg
                        pending.discard(r)
                        continue
                    if kind == "error":
                        self.stop()
                        detail = rest[0] if rest else ""
                        raise DistributedError(f"rank {r} of {self.nranks} failed: {msg}\n--- rank {r} traceback "
                                               f"---\n{detail}--- every other rank was stopped ---")
                if kind == "died" or proc.sentinel in ready or not proc.is_alive():
                    if kind != "died" and conn.poll():
                        continue  # its last message first
                    proc.join(timeout=1)  # (its pipe closes a moment before its exit status is there)
                    self.stop()
                    if r not in self.ready:
                        raise DistributedError(
                            f"rank {r} of {self.nranks} failed to start ({_exit_text(proc.exitcode)}; its output is "
                            "above)\nhint: a rank is a fresh interpreter that imports the main module: a script that "
                            "runs a distributed program needs `if __name__ == \"__main__\":` around its top-level code")
                    raise DistributedError(f"rank {r} of {self.nranks} died ({_exit_text(proc.exitcode)}) during "
                                           "the run; every other rank was stopped")
        return answers

    def stop(self) -> None:  # noqa: D401
        """Ends every rank process (a failed run leaves ranks mid-program: they are killed)."""
        if not self.alive:
            return
        self.alive = False
        for c in self.conns:
            try:
                c.send(None)
            except (BrokenPipeError, OSError):
                pass
        for p in self.procs:  # (ranks under MPI finalize together: they get a moment more)
            p.join(timeout=0.05 if self.launcher is None else 5)
        for p in self.procs:
            if p.is_alive():
                p.kill()
        for p in self.procs:
            p.join(timeout=5)
        for c in self.conns:
            c.close()
        if self.launcher is not None:
            from .mpi_pool import stop_launcher

            stop_launcher(self.launcher, self.procs)
        if _pools.get(getattr(self, "key", None)) is self:
            del _pools[self.key]  # type: ignore[attr-defined]


def _exit_text(code: Optional[int]) -> str:
    return f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"


_pools: Dict[Tuple[Any, ...], RankPool] = {}


def pool(nranks: int, env: Dict[str, str], hosts: int = 1) -> RankPool:
    key = (nranks, hosts, tuple(sorted(env.items())))
    p = _pools.get(key)
    if p is None or not p.alive or not all(pr.is_alive() for pr in p.procs):
        if p is not None:
            p.stop()
        p = _pools[key] = RankPool(nranks, env, hosts)
        p.key = key  # type: ignore[attr-defined]
    return p


def shutdown_pools() -> None:
    for p in list(_pools.values()):
        p.stop()
    _pools.clear()


atexit.register(shutdown_pools)


_dropped: List[str] = []  # segments an orchestrator no longer uses: the next jobs tell the ranks to unmap them


def dropped(name: str) -> None:
    """The orchestrator no longer uses this segment (the ranks may still map it)."""
    _dropped.append(name)


def pool_for(nranks: int, timeout: float, hosts: int = 1) -> RankPool:
    """The pool of `nranks` ranks over `hosts` hosts whose waits give up after `timeout` (started
    if needed)."""
    env = {"PYPTO_DIST_TIMEOUT": repr(float(timeout))}
    if hosts > 1:  # (how the ranks are launched and placed: another setting, another pool)
        env.update({k: os.environ[k] for k in ("PYPTO_MPIEXEC", "PYPTO_DIST_PLACEMENT", "PYPTO_DIST_LISTEN")
                    if k in os.environ})
    return pool(nranks, env, hosts)


class _NoPipe:
    """What a rank that is a thread says to its orchestrator: nothing (it is the same process)."""

    def send(self, msg: Any) -> None:
        pass


IN_PROCESS = "in-process"  # the "pool" of ranks that are threads of this process


def run_in_threads(jobs: Sequence[Job], timeout: float) -> List[Any]:
    """Runs one job per rank, each rank a thread of this process (one-process runs): the same jobs,
    the same segments mapped once more by name, each call running on its thread alone (one worker:
    the process's worker pool would otherwise serve one rank at a time, and a rank waiting for
    another's signal would hold it). The first rank that raises ends the run once every other has
    stopped: every call running in the process is stopped as Ctrl-C stops it."""
    n = len(jobs)
    answers: List[Any] = [None] * n
    errors: List[Tuple[int, BaseException, str]] = []
    saved = config.get_runtime_options()["workers"]
    config.set_runtime_options(workers=1)

    def rank_main(r: int) -> None:
        try:
            with context.thread_rank(context.RankContext(r, n)):
                answers[r] = _run_job(jobs[r], _NoPipe())
        except BaseException as e:  # noqa: BLE001 - reported below, naming the rank
            errors.append((r, e, traceback.format_exc()))
            _core._stop_calls(True)  # the other ranks' calls stop now (their waits would wait for this one)

    threads = [threading.Thread(target=rank_main, args=(r,), name=f"pypto-rank{r}", daemon=True) for r in range(n)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 2 * timeout + 30
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
    finally:
        config.set_runtime_options(workers=saved)
        _core._stop_calls(False)
    if errors:
        r, e, tb = errors[0]  # the first to fail (the others may have timed out waiting for it)
        raise DistributedError(f"rank {r} of {n} failed: {type(e).__name__}: {e}\n--- rank {r} traceback ---\n{tb}"
                               "--- (ranks are threads of this process) ---")
    alive = [r for r, t in enumerate(threads) if t.is_alive()]
    if alive:
        raise DistributedError(f"rank{'s' if len(alive) > 1 else ''} {', '.join(map(str, alive))} of {n} did not "
                               f"finish within {2 * timeout + 30:g} s (ranks are threads of this process: they "
                               "cannot be stopped, only abandoned)")
    return answers


def run_ranks(jobs: Sequence[Job], timeout: float, segments: Sequence[SharedSegment] = (),
              hosts: int = 1) -> List[Any]:
    """Runs one job per rank on the pool of that many ranks (`timeout`: what one wait on a signal
    may take); the segments are unlinked once every rank has mapped them (or when the run ends,
    whichever comes first). The ranks keep their mappings for later runs of the same pool.
    Returns each rank's swimlane events. Ranks over several `hosts` get arrays by value (their
    changes are written back here) and keep their windows in their own hosts' heaps."""
    if hosts == 0:  # ranks as threads of this process
        try:
            return run_in_threads(jobs, timeout)
        finally:
            for seg in segments:
                seg.unlink()
    p = pool_for(len(jobs), timeout, hosts)
    gone = list(_dropped)
    for j in jobs:
        j.forget = gone
    by_name = {s.name: s for s in segments}

    def array(a: Any) -> np.ndarray:  # what a HostArray / SegmentArray names, here
        seg = by_name.get(a.name) if isinstance(a, SegmentArray) else by_name.get(arena_name)
        if seg is None:
            seg = _map((a.name, a.size)) if isinstance(a, SegmentArray) else None
        assert seg is not None
        return seg.array(a.offset, a.shape, np.dtype(a.dtype), a.strides)

    arena_name = jobs[0].arena[0] if jobs and jobs[0].arena else ""
    if hosts > 1:
        from .mpi_pool import to_values

        to_values(jobs, array)

    def unlink() -> None:
        for s in segments:
            s.unlink()

    try:
        # A wait gives up after `timeout` with its own message (the cell, what it holds); the run
        # as a whole (compiles included) gets twice that and half a minute more.
        answers = p.run(jobs, 2 * timeout + 30, on_mapped=unlink if hosts == 1 else None)
        del _dropped[:len(gone)]
        if hosts > 1:
            from .mpi_pool import write_back

            return write_back(jobs, answers, array)
        return answers
    finally:
        unlink()


def _sweep_stale_segments() -> None:
    """Removes segments of orchestrators that no longer run (killed before their ranks mapped)."""
    for path in glob.glob("/dev/shm/pypto-*-*"):
        try:
            pid = int(os.path.basename(path).split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                os.unlink(path)
            except OSError:
                pass
        except PermissionError:
            pass
