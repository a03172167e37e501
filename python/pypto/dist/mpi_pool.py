"""Rank processes that MPI's launcher starts: the ranks of a run that spans hosts (``engine.py``).

The orchestrator runs ``mpiexec -n N python -m pypto.dist.mpi_rank`` (``PYPTO_MPIEXEC`` replaces
``mpiexec``: a host file, ``srun``, ...); each rank connects back to the orchestrator's listener
(a Unix socket, or ``PYPTO_DIST_LISTEN=host:port`` for ranks on other machines) with a one-run
key, and from then on is served as the ranks of one host are (``launcher.RankPool.run``: the first
rank that fails ends the run for all). Arrays travel by value and only what a rank changed comes
back.

``hosts`` simulated on one machine: the ranks split into that many groups, each with a heap of its
own, and MPI is held to TCP on the loopback interface (no shared-memory transport), so the groups
share no memory and every byte between them goes through the engine.
"""

from __future__ import annotations

import glob
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

import multiprocessing.connection as mpc
import multiprocessing.spawn as mp_spawn

import pypto._core as _core

from .engine import apply_elements, hosts_from_env

# MPICH held to TCP over loopback, no shared memory between its processes (a simulated cluster).
SIMULATED_TRANSPORT = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp", "FI_TCP_IFACE": "lo",
                       "MPIR_CVAR_NOLOCAL": "1"}


def find_mpiexec() -> Optional[str]:
    """MPI's launcher: on PATH, or beside this Python (where the mpich wheel puts it; a pyenv shim
    may not exist yet right after the install)."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return shutil.which("mpiexec") or (beside if os.access(beside, os.X_OK) else None)


def mpiexec_command() -> List[str]:
    cmd = shlex.split(os.environ.get("PYPTO_MPIEXEC", "")) or [find_mpiexec() or "mpiexec"]
    if shutil.which(cmd[0]) is None:
        raise _core.UserError(f"ranks on several hosts run under MPI, and {cmd[0]!r} was not found\nhint: pip "
                              "install mpi4py mpich (scripts/install.sh does), or set PYPTO_MPIEXEC to your "
                              "MPI launcher")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise _core.UserError("ranks on several hosts need mpi4py\nhint: pip install mpi4py mpich") from None
    return cmd


class _RankProcess:
    """A rank that MPI's launcher started, as RankPool sees its processes (pid fd when it is on
    this machine; otherwise only its connection tells that it is gone)."""

    def __init__(self, pid: int, host: str, launcher: subprocess.Popen) -> None:
        self.pid, self.launcher = pid, launcher
        self.local = host == socket.gethostname()
        self._fd = os.pidfd_open(pid) if self.local else -1
        self.sentinel = self._fd if self._fd >= 0 else _Never()
        self.exitcode: Optional[int] = None

    def is_alive(self) -> bool:
        if self.local:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            return not mpc.wait([self._fd], timeout=0)
        return self.launcher.poll() is None

    def join(self, timeout: Optional[float] = None) -> None:
        if self.local:
            mpc.wait([self._fd], timeout=timeout)
        if self.exitcode is None and not self.is_alive():
            self.exitcode = self.launcher.poll()  # the launcher's: the rank's own is not ours to read

    def kill(self) -> None:
        if self.local:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if isinstance(self.sentinel, _Never):
            self.sentinel.close()


class _Never:
    """A sentinel that never fires (a rank on another machine)."""

    def __init__(self) -> None:
        self._r, self._w = os.pipe()

    def fileno(self) -> int:
        return self._r

    def close(self) -> None:
        for fd in (self._r, self._w):
            os.close(fd)


def start_ranks(nranks: int, hosts: int, env: Dict[str, str], timeout: float = 60.0) -> Any:
    """Starts `nranks` ranks over `hosts` hosts under MPI's launcher; returns (launcher, procs, conns)."""
    cmd = mpiexec_command()
    key = secrets.token_bytes(16)
    listen = os.environ.get("PYPTO_DIST_LISTEN", "")
    if listen:
        host, _, port = listen.rpartition(":")
        listener = mpc.Listener((host or "0.0.0.0", int(port or 0)), authkey=key)
        address = f"{socket.gethostname() if not host or host == '0.0.0.0' else host}:{listener.address[1]}"
    else:
        path = os.path.join(tempfile.mkdtemp(prefix="pypto-ranks-"), "orchestrator")
        listener = mpc.Listener(path, family="AF_UNIX", authkey=key)
        address = path
    child_env = dict(os.environ)
    child_env.update(env)
    if not os.environ.get("PYPTO_MPIEXEC"):  # our own launch, on this machine: a simulated cluster
        child_env.update({k: v for k, v in SIMULATED_TRANSPORT.items() if k not in os.environ})
        child_env.setdefault("PYPTO_DIST_PLACEMENT", "simulated")
    else:  # the user's launcher places the ranks: those sharing a node share a heap
        child_env.setdefault("PYPTO_DIST_PLACEMENT", "node")
    child_env.update({"PYPTO_DIST_ADDRESS": address, "PYPTO_DIST_AUTHKEY": key.hex(),
                      "PYPTO_DIST_HOSTS": str(hosts), "PYTHONUNBUFFERED": "1"})
    argv = cmd + ["-n", str(nranks), sys.executable, "-m", "pypto.dist.mpi_rank"]
    _sweep_mpi_segments(set(), 60.0)  # (those of earlier runs killed with their orchestrator)
    mpi_segments_before = set(glob.glob(MPI_SEGMENTS))
    launcher = subprocess.Popen(argv, env=child_env, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    conns: List[Any] = [None] * nranks
    procs: List[Any] = [None] * nranks
    accepted: List[Any] = []
    failed: List[BaseException] = []

    def accept() -> None:
        try:
            for _ in range(nranks):
                accepted.append(listener.accept())
        except BaseException as e:  # noqa: BLE001 - reported by the waiting thread
            failed.append(e)

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    deadline = time.monotonic() + timeout
    while t.is_alive() and time.monotonic() < deadline and launcher.poll() is None:
        t.join(0.05)
    if len(accepted) < nranks:
        code = launcher.poll()
        launcher.kill()
        listener.close()
        why = (f"{cmd[0]} exited with code {code}" if code is not None else f"not within {timeout:g} s")
        raise _core.UserError(f"{nranks} ranks under MPI ({' '.join(argv)}): only {len(accepted)} connected ({why}; "
                              "their output is above)" + (f": {failed[0]}" if failed else ""))
    listener.close()
    # What a spawned process gets (sys.path, the main module, the working dir), so a rank finds
    # the program's functions as multiprocessing's ranks do.
    prep = mp_spawn.get_preparation_data("pypto-rank")
    prep.pop("authkey", None)  # (multiprocessing's own key: not ours to send, and not picklable)
    launcher.mpi_segments_before = mpi_segments_before  # type: ignore[attr-defined]
    for c in accepted:
        kind, rank, pid, host = c.recv()
        conns[rank], procs[rank] = c, _RankProcess(pid, host, launcher)
        c.send(prep)
    return launcher, procs, conns


def _die_with_parent() -> None:
    from .launcher import _die_with_parent as die

    die()


def stop_launcher(launcher: subprocess.Popen, procs: Sequence[Any]) -> None:
    """Ends MPI's launcher (its ranks were asked to end, or killed)."""
    try:
        launcher.wait(timeout=5)
    except subprocess.TimeoutExpired:
        launcher.send_signal(signal.SIGTERM)
        try:
            launcher.wait(timeout=5)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
    for p in procs:
        if p is not None:
            p.close()
    _sweep_mpi_segments(getattr(launcher, "mpi_segments_before", set()))


# MPICH's own node-local segments: unlinked when its processes finalize, left behind when they are
# killed (a failed run): the ones this run's ranks made that no process maps any more go.
MPI_SEGMENTS = "/dev/shm/mpich_shm_*"


def _sweep_mpi_segments(before: set, min_age: float = 1.0) -> None:
    # (a segment younger than `min_age` seconds may be another job's, between its creation and its
    # mapping in MPI_Init)
    now = time.time()
    fresh = set()
    for path in set(glob.glob(MPI_SEGMENTS)) - before:
        try:
            if now - os.stat(path).st_mtime >= min_age:
                fresh.add(path)
        except OSError:
            pass
    if not fresh:
        return
    mapped = set()
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            with open(maps) as f:
                mapped.update(line.split()[-1] for line in f if "/dev/shm/mpich_shm_" in line)
        except OSError:
            pass
    for path in fresh - mapped:
        try:
            os.unlink(path)
        except OSError:
            pass


def to_values(jobs: Sequence[Any], arrays: Any) -> None:
    """Replaces each job's HostArray / SegmentArray arguments by ValueArrays (`arrays(a)`: the
    orchestrator's array a names), one per distinct array of a job."""
    from .launcher import HostArray, SegmentArray, ValueArray

    for job in jobs:
        made: Dict[Any, ValueArray] = {}

        def conv(a: Any) -> Any:
            if isinstance(a, (HostArray, SegmentArray)):
                k = (type(a).__name__,) + tuple(getattr(a, f) for f in a.__dataclass_fields__ if f != "written")
                if k not in made:
                    made[k] = ValueArray(arrays(a).copy(), len(made), a, getattr(a, "written", True))
                made[k].written = made[k].written or getattr(a, "written", True)
                return made[k]
            return a

        for c in job.calls:
            c.args = [conv(a) for a in c.args]
            c.kwargs = {k: conv(v) for k, v in c.kwargs.items()}
        job.values = list(made.values())


# What each rank's engine did in the last run: releases, bytes sent, signals sent to other hosts.
engine_stats: List[Dict[str, int]] = []


def write_back(jobs: Sequence[Any], answers: List[Any], arrays: Any) -> List[Any]:
    """Writes what each rank changed of its by-value arrays where they came from; returns each
    rank's swimlane events."""
    events = []
    engine_stats[:] = [(ans or {}).get("engine", {}) for ans in answers]
    for job, ans in zip(jobs, answers):
        by_key = {v.key: v for v in getattr(job, "values", [])}
        for key, (runs, vals) in (ans or {}).get("changed", {}).items():
            apply_elements(arrays(by_key[key].source), runs, vals)
        events.append((ans or {}).get("events", []))
    return events


__all__ = ["start_ranks", "stop_launcher", "to_values", "write_back", "hosts_from_env", "SIMULATED_TRANSPORT"]
