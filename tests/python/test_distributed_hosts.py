"""Ranks over several hosts, simulated on this machine (python/pypto/dist/engine.py): the ranks
split into host groups, each group with a heap of its own, MPI held to TCP on loopback, so the
groups share no memory and talk only through the engine. Every program here also runs on one host
(tests/python/test_distributed.py): over 2 or more hosts it must give the same results, bit for
bit where the arithmetic is the same.

The programs are test_distributed's (module-level: a rank finds them by module and name)."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import pypto
import pypto.language.distributed as pld
from pypto.dist import DistributedError, launcher
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

pytest.importorskip("mpi4py")
from pypto.dist.mpi_pool import find_mpiexec  # noqa: E402

if find_mpiexec() is None:
    pytest.skip("no mpiexec (pip install mpich)", allow_module_level=True)

from test_distributed import (SIZE, _a2av_host, _allreduce_host, _atomic_host, _count_host,  # noqa: E402
                              _faulty_host, _gather_host, _host_collectives, _shift_host)


def _config(n: int, hosts: int, timeout: float = 60.0) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), timeout=timeout, hosts=hosts))


def _engine_totals() -> dict:
    """What the engine did in the last multi-host run, summed over its ranks."""
    from pypto.dist import mpi_pool
    out = {"bytes_sent": 0, "signals": 0, "releases": 0}
    for e in mpi_pool.engine_stats:
        for k in out:
            out[k] += e.get(k, 0)
    return out


def _rank_processes() -> list:
    out = subprocess.run(["pgrep", "-f", "pypto.dist.mpi_rank"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@pytest.mark.parametrize("n,hosts,ring", [(2, 2, False), (2, 2, True), (4, 2, False), (4, 2, True), (3, 3, True)])
def test_allreduce_across_hosts_matches_one_host(n, hosts, ring):
    rng = np.random.default_rng(n * 7 + hosts)
    x = rng.standard_normal((n, 1, SIZE)).astype(np.float32)
    x[0, 0, :3] = [np.nan, np.inf, -0.0]
    one, many = np.zeros_like(x), np.zeros_like(x)
    _allreduce_host(x, one, int(pld.ReduceOp.Sum), ring, 2, config=_config(n, 1))
    _allreduce_host(x, many, int(pld.ReduceOp.Sum), ring, 2, config=_config(n, hosts))
    sent = _engine_totals()  # (the engine carried it: data and signals crossed between the hosts)
    assert sent["bytes_sent"] >= SIZE * 4 and sent["signals"] > 0, sent
    np.testing.assert_array_equal(many, one)  # the same sums in the same order: the same bits
    want = x.sum(0)
    for r in range(n):
        np.testing.assert_allclose(many[r], want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("which", ["allreduce", "broadcast", "reduce_scatter"])
def test_host_form_collectives_across_hosts(which):
    x = np.random.default_rng(11).standard_normal((2, 2, SIZE)).astype(np.float32)
    one, many = np.zeros_like(x), np.zeros_like(x)
    _host_collectives(x, one, which, config=_config(2, 1))
    _host_collectives(x, many, which, config=_config(2, 2))
    assert _engine_totals()["signals"] > 0
    np.testing.assert_array_equal(many, one)


def test_allgather_and_all_to_all_across_hosts():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 1, SIZE)).astype(np.float32)
    x2 = rng.standard_normal((2, 2, SIZE)).astype(np.float32)
    y, z = np.zeros((2, 2, SIZE), np.float32), np.zeros((2, 2, SIZE), np.float32)
    _gather_host(x, x2, y, z, config=_config(2, 2))
    for r in range(2):
        np.testing.assert_array_equal(y[r], x[:, 0])
        np.testing.assert_array_equal(z[r], x2[:, r])


@pytest.mark.parametrize("n,hosts", [(4, 2), (3, 2)])
def test_notify_wait_remote_load_across_hosts(n, hosts):
    """Each rank reads the next rank's copy after its signal: pairs inside a host and across."""
    x = np.random.default_rng(n).standard_normal((n, 1, SIZE)).astype(np.float32)
    y = np.zeros_like(x)
    _shift_host(x, y, config=_config(n, hosts))
    for r in range(n):
        np.testing.assert_array_equal(y[r], x[(r + 1) % n])


def test_atomic_adds_from_two_hosts_into_one_window():
    """Both hosts add into rank 0's copy at once: the engine merges the two sums (an element both
    changed gets the other's difference), and regions written by each land whole."""
    n = 2
    x = np.random.default_rng(6).integers(-8, 8, (n, 6, 8)).astype(np.float32)
    y, y1 = np.zeros_like(x), np.zeros_like(x)
    _atomic_host(x, y, y1, config=_config(n, 2))
    for r in range(n):
        np.testing.assert_array_equal(y[r], x.sum(0))
        for src in range(n):
            np.testing.assert_array_equal(y1[r][src + 2], x[src][0])


def test_all_to_all_v_across_three_hosts():
    n = 3
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n * 3, 8)).astype(np.float32)
    counts = rng.integers(0, 6, (n, n, 1)).astype(np.int32)
    out, got = np.zeros_like(x), np.zeros((n, n, 1), np.int32)
    _a2av_host(x, counts, out, got, config=_config(n, 3))
    for r in range(n):
        for src in range(n):
            np.testing.assert_array_equal(out[r][src * 3:(src + 1) * 3], x[src][r * 3:(r + 1) * 3])
            assert got[r][src, 0] == min(counts[src][r, 0], 3)


def test_persistent_windows_across_hosts():
    compiled = _count_host.compile(config=_config(2, 2))
    y = np.zeros((2, 1, 4), np.int32)
    with compiled.prepare(persistent=True, reset_persistent_windows=False) as rt:
        for k in range(1, 4):
            rt(y)
            assert (y == k).all(), (k, y)


def test_torch_tensors_come_back_from_other_hosts():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 1, SIZE)
    y = torch.zeros(4, 1, SIZE)
    _shift_host(x, y, config=_config(4, 2))
    for r in range(4):
        assert torch.equal(y[r], x[(r + 1) % 4])


def test_hosts_must_fit_the_ranks():
    with pytest.raises(pypto.UserError, match=r"hosts must be an int from 1 to the rank count \(2\), got 3"):
        DistributedConfig(device_ids=[0, 1], hosts=3)
    with pytest.raises(pypto.UserError, match="got 0"):
        DistributedConfig(device_ids=[0, 1], hosts=0)


# --- faults ---------------------------------------------------------------------------------------

def _segments() -> set:
    """This process's shared-memory segments (other tests of the process may hold some)."""
    return set(glob.glob(f"/dev/shm/pypto-{os.getpid()}-*"))


@pytest.mark.parametrize("how,needle", [("raise", "rank 1 of 2 failed: ValueError: rank one gives up"),
                                        ("hang", "timed out after 3 s waiting for the signal cell")])
def test_rank_failure_across_hosts_names_the_rank(how, needle):
    held = _segments()
    y = np.zeros((2, 1, SIZE), np.float32)
    t0 = time.monotonic()
    with pytest.raises(DistributedError) as e:
        _faulty_host(y, how, config=_config(2, 2, timeout=3))
    assert needle in str(e.value)
    assert time.monotonic() - t0 < 40
    assert not _segments() - held, "a shared-memory segment outlived the run"


def test_killed_rank_on_another_host_mid_run():
    from pypto.dist.mpi_pool import MPI_SEGMENTS
    mpi_before = set(glob.glob(MPI_SEGMENTS))
    held = _segments()
    y = np.zeros((2, 1, SIZE), np.float32)
    _shift_host(np.zeros((2, 1, SIZE), np.float32), y, config=_config(2, 2))  # the ranks are up and warm
    pool = next(p for k, p in launcher._pools.items() if k[0] == 2 and k[1] == 2)
    victim = pool.procs[1].pid
    ranks = [p.pid for p in pool.procs]

    def kill_soon():
        time.sleep(1.5)
        os.kill(victim, signal.SIGKILL)

    threading.Thread(target=kill_soon, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(DistributedError, match=r"rank \d of 2 died"):
        _faulty_host(y, "hang", config=_config(2, 2, timeout=60))
    assert time.monotonic() - t0 < 30
    deadline = time.monotonic() + 10
    while any(p in _rank_processes() for p in ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in ranks if p in _rank_processes()], "a rank outlived the failed run"
    assert pool.launcher.poll() is not None, "mpiexec outlived the failed run"
    assert not _segments() - held, "a shared-memory segment outlived the killed run"
    assert not set(glob.glob(MPI_SEGMENTS)) - mpi_before, "MPI's segments outlived the killed ranks"
    # The next run starts new ranks.
    x = np.random.default_rng(0).standard_normal((2, 1, SIZE)).astype(np.float32)
    _shift_host(x, y, config=_config(2, 2))
    np.testing.assert_array_equal(y[0], x[1])



def test_the_example_over_two_hosts():
    """What docs/distributed.md tells a user to run."""
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    example = os.path.join(here, "..", "..", "examples", "distributed_allreduce.py")
    r = subprocess.run([sys.executable, example, "--quick", "--hosts", "2"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(OK)" in r.stdout


def test_one_swimlane_for_the_ranks_of_every_host():
    import json
    compiled = _shift_host.compile(config=_config(2, 2))
    compiled(np.ones((2, 1, SIZE), np.float32), np.zeros((2, 1, SIZE), np.float32),
             config=RunConfig(enable_chip_swimlane=1))
    with open(os.path.join(compiled.output_dir, "swimlane.json")) as f:
        events = json.load(f)["traceEvents"]
    assert {e["pid"] for e in events} == {0, 1}
    for r in range(2):
        assert any(e.get("ph") == "X" and e["pid"] == r and "notify" in e["name"] for e in events)


@pytest.mark.parametrize("placement", ["simulated", "node"])
def test_a_launcher_of_the_users_choice(monkeypatch, placement):
    """PYPTO_MPIEXEC names the launcher (here plain mpiexec, MPI's own transport). With it the
    ranks MPI finds on one node share a heap (placement "node": here all of them, one host); the
    simulated placement keeps two heaps and goes through the engine."""
    monkeypatch.setenv("PYPTO_MPIEXEC", find_mpiexec())
    monkeypatch.setenv("PYPTO_DIST_PLACEMENT", placement)
    x = np.random.default_rng(2).standard_normal((2, 1, SIZE)).astype(np.float32)
    y = np.zeros_like(x)
    _shift_host(x, y, config=_config(2, 2))
    assert (_engine_totals()["signals"] > 0) == (placement == "simulated")
    for r in range(2):
        np.testing.assert_array_equal(y[r], x[(r + 1) % 2])


# --- one process: every rank a thread of the orchestrator's process ---------------------------------

def _in_process(n: int, timeout: float = 60.0) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), timeout=timeout, in_process=True))


@pytest.mark.parametrize("n,ring", [(2, True), (3, False), (4, True)])
def test_one_process_matches_processes(n, ring):
    import multiprocessing as mp
    before = set(mp.active_children())
    rng = np.random.default_rng(n + 40)
    x = rng.standard_normal((n, 1, SIZE)).astype(np.float32)
    one, procs = np.zeros_like(x), np.zeros_like(x)
    _allreduce_host(x, one, int(pld.ReduceOp.Sum), ring, 2, config=_in_process(n))
    assert set(mp.active_children()) == before, "a one-process run started rank processes"
    _allreduce_host(x, procs, int(pld.ReduceOp.Sum), ring, 2, config=_config(n, 1))
    np.testing.assert_array_equal(one, procs)
    y = np.zeros_like(x)
    _shift_host(x, y, config=_in_process(n))
    for r in range(n):
        np.testing.assert_array_equal(y[r], x[(r + 1) % n])


def test_one_process_atomic_adds_collectives_and_a_persistent_worker():
    x = np.random.default_rng(6).integers(-8, 8, (2, 6, 8)).astype(np.float32)
    y, y1 = np.zeros_like(x), np.zeros_like(x)
    _atomic_host(x, y, y1, config=_in_process(2))
    for r in range(2):
        np.testing.assert_array_equal(y[r], x.sum(0))
    x2 = np.random.default_rng(11).standard_normal((2, 2, SIZE)).astype(np.float32)
    one, procs = np.zeros_like(x2), np.zeros_like(x2)
    _host_collectives(x2, one, "reduce_scatter", config=_in_process(2))
    _host_collectives(x2, procs, "reduce_scatter", config=_config(2, 1))
    np.testing.assert_array_equal(one, procs)
    compiled = _count_host.compile(config=_in_process(2))
    c = np.zeros((2, 1, 4), np.int32)
    with compiled.prepare(persistent=True, reset_persistent_windows=False) as rt:
        for k in range(1, 4):
            rt(c)
            assert (c == k).all(), (k, c)


def test_one_process_failure_names_the_rank():
    y = np.zeros((2, 1, SIZE), np.float32)
    t0 = time.monotonic()
    with pytest.raises(DistributedError, match="rank 1 of 2 failed: ValueError: rank one gives up"):
        _faulty_host(y, "raise", config=_in_process(2, timeout=2))
    assert time.monotonic() - t0 < 30  # the other rank's wait gives up after 2 s
    with pytest.raises(pypto.UserError, match="in_process=True runs every rank in this process"):
        DistributedConfig(device_ids=[0, 1], hosts=2, in_process=True)
