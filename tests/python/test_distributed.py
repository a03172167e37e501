"""Distributed programs on the ranks of one host (pypto.language.distributed, pypto.dist): each
rank a process, windows in a shared heap. Results against numpy; faults end the run with an error
naming the rank, within the timeout, and leave no process or segment behind.

The pl functions are module-level: a rank process finds them by module and name."""

from __future__ import annotations

import glob
import os
import signal
import threading
import time

import numpy as np
import pytest

import pypto
import pypto.language as pl
import pypto.language.distributed as pld
from pypto.dist import DistributedError, launcher
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

SIZE = 96  # not a multiple of the ranks: ring chunks have a tail


def _config(n: int, timeout: float = 60.0) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), timeout=timeout))


# --- collectives in a rank's function ------------------------------------------------------------

@pl.jit.incore
def _allreduce_kernel(x: pl.Tensor[[1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
                      data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[8, 1], pl.INT32],
                      op: int, ring: bool):
    t = pl.load(x, [0, 0], [1, SIZE])
    data = pl.store(t, [0, 0], data)
    data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp(op), mode="ring" if ring else "mesh")
    back = pl.load(data, [0, 0], [1, SIZE])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit
def _allreduce_rank(x: pl.Tensor[[1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
                    data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[8, 1], pl.INT32],
                    op: int, ring: bool):
    return _allreduce_kernel(x, y, data, sig, op, ring)


@pl.jit.host
def _allreduce_host(x: pl.Tensor, y: pl.Out[pl.Tensor], op: int, ring: bool, rounds: int):
    data_buf = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([8, 1], dtype=pl.INT32)
    for _ in range(rounds):  # the same windows serve every round (the barrier leaves its signal as it was)
        for r in pl.range(pld.world_size()):
            data = pld.window(data_buf, [1, SIZE], dtype=pl.FP32)
            sig = pld.window(sig_buf, [8, 1], dtype=pl.INT32)
            _allreduce_rank(x[r], y[r], data, sig, op, ring, device=r)


@pytest.mark.parametrize("n,op,ring", [(2, pld.ReduceOp.Sum, False), (2, pld.ReduceOp.Sum, True),
                                       (3, pld.ReduceOp.Max, True), (2, pld.ReduceOp.Min, False),
                                       (3, pld.ReduceOp.Prod, False)])
def test_allreduce_in_rank_function(n, op, ring):
    rng = np.random.default_rng(n * 10 + int(op))
    x = rng.standard_normal((n, 1, SIZE)).astype(np.float32)
    x[0, 0, :3] = [np.nan, np.inf, -0.0]  # edge values reduce as numpy's do
    y = np.zeros_like(x)
    _allreduce_host(x, y, int(op), ring, 2, config=_config(n))
    f = {pld.ReduceOp.Sum: np.add, pld.ReduceOp.Max: np.maximum, pld.ReduceOp.Min: np.minimum,
         pld.ReduceOp.Prod: np.multiply}[op]
    want = x[0]
    for r in range(1, n):
        want = f(want, x[r])
    for r in range(n):
        np.testing.assert_allclose(y[r], want, rtol=1e-6, atol=0, equal_nan=True)


# --- the HOST form of the collectives ------------------------------------------------------------

@pl.jit.incore
def _publish_kernel(x: pl.Tensor[[2, SIZE], pl.FP32], data: pld.DistributedTensor[[2, SIZE], pl.FP32]):
    t = pl.load(x, [0, 0], [2, SIZE])
    data = pl.store(t, [0, 0], data)
    return data


@pl.jit
def _publish(x: pl.Tensor[[2, SIZE], pl.FP32], data: pld.DistributedTensor[[2, SIZE], pl.FP32]):
    return _publish_kernel(x, data)


@pl.jit.incore
def _consume_kernel(y: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]], data: pld.DistributedTensor[[2, SIZE], pl.FP32]):
    t = pl.load(data, [0, 0], [2, SIZE])
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def _consume(y: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]], data: pld.DistributedTensor[[2, SIZE], pl.FP32]):
    return _consume_kernel(y, data)


@pl.jit.host
def _host_collectives(x: pl.Tensor, y: pl.Out[pl.Tensor], which: str):
    n = pld.world_size()
    data_buf = pld.alloc_window_buffer([2, SIZE], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        _publish(x[r], pld.window(data_buf, [2, SIZE], dtype=pl.FP32), device=r)
    data = pld.window(data_buf, [2, SIZE], dtype=pl.FP32)
    sig = pld.window(sig_buf, [n, 1], dtype=pl.INT32)
    if which == "allreduce":
        data = pld.tensor.allreduce(data)  # its own signal
    elif which == "broadcast":
        data = pld.tensor.broadcast(data, sig, root=n - 1)
    elif which == "reduce_scatter":
        data = pld.tensor.reduce_scatter(data, sig)
    for r in pl.range(n):
        _consume(y[r], data, device=r)


@pytest.mark.parametrize("which", ["allreduce", "broadcast", "reduce_scatter"])
def test_host_form_collectives(which):
    n = 2
    x = np.random.default_rng(7).standard_normal((n, 2, SIZE)).astype(np.float32)
    y = np.zeros_like(x)
    _host_collectives(x, y, which, config=_config(n))
    if which == "allreduce":
        want = [x.sum(0)] * n
    elif which == "broadcast":
        want = [x[n - 1]] * n
    else:
        want = [x[r] for r in range(n)]
        for r in range(n):
            want[r] = want[r].copy()
            want[r][r] = x[:, r].sum(0)
    for r in range(n):
        np.testing.assert_allclose(y[r], want[r], rtol=1e-6)


# --- allgather and all_to_all --------------------------------------------------------------------

@pl.jit.incore
def _gather_kernel(x: pl.Tensor[[1, SIZE], pl.FP32], x2: pl.Tensor[[2, SIZE], pl.FP32],
                   y: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]], z: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]],
                   gathered: pld.DistributedTensor[[2, SIZE], pl.FP32],
                   exchanged: pld.DistributedTensor[[2, SIZE], pl.FP32],
                   sig: pld.DistributedTensor[[2, 1], pl.INT32]):
    gathered = pld.tensor.allgather(x, gathered, sig)
    exchanged = pld.tensor.all_to_all(x2, exchanged, sig)
    y = pl.store(pl.load(gathered, [0, 0], [2, SIZE]), [0, 0], y)
    z = pl.store(pl.load(exchanged, [0, 0], [2, SIZE]), [0, 0], z)
    return y


@pl.jit
def _gather_rank(x: pl.Tensor[[1, SIZE], pl.FP32], x2: pl.Tensor[[2, SIZE], pl.FP32],
                 y: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]], z: pl.Out[pl.Tensor[[2, SIZE], pl.FP32]],
                 gathered: pld.DistributedTensor[[2, SIZE], pl.FP32],
                 exchanged: pld.DistributedTensor[[2, SIZE], pl.FP32],
                 sig: pld.DistributedTensor[[2, 1], pl.INT32]):
    return _gather_kernel(x, x2, y, z, gathered, exchanged, sig)


@pl.jit.host
def _gather_host(x: pl.Tensor, x2: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
    g = pld.alloc_window_buffer([2, SIZE], dtype=pl.FP32)
    e = pld.alloc_window_buffer([2, SIZE], dtype=pl.FP32)
    s = pld.alloc_window_buffer([2, 1], dtype=pl.INT32)
    for r in pl.range(2):
        _gather_rank(x[r], x2[r], y[r], z[r], pld.window(g, [2, SIZE], dtype=pl.FP32),
                     pld.window(e, [2, SIZE], dtype=pl.FP32), pld.window(s, [2, 1], dtype=pl.INT32), device=r)


def test_allgather_and_all_to_all():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 1, SIZE)).astype(np.float32)
    x2 = rng.standard_normal((2, 2, SIZE)).astype(np.float32)
    y = np.zeros((2, 2, SIZE), np.float32)
    z = np.zeros((2, 2, SIZE), np.float32)
    _gather_host(x, x2, y, z, config=_config(2))
    for r in range(2):
        np.testing.assert_array_equal(y[r], x[:, 0])            # row s: rank s's data
        np.testing.assert_array_equal(z[r], x2[:, r])           # row s: what rank s sent to r


# --- signals and the remote tiles, with torch tensors -------------------------------------------

@pl.jit.incore
def _shift_kernel(x: pl.Tensor[[1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
                  data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[4, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(data)
    me, n = pld.rank(ctx), pld.nranks(ctx)
    data = pl.store(pl.load(x, [0, 0], [1, SIZE]), [0, 0], data)
    pld.system.notify(sig, peer=(me + n - 1) % n, offsets=[me, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    pld.system.wait(sig, offsets=[(me + 1) % n, 0], expected=1, cmp=pld.WaitCmp.Ge)
    recv = pld.tile.remote_load(data, peer=(me + 1) % n, offsets=[0, 0], shape=[1, SIZE])
    y = pl.store(recv, [0, 0], y)
    return y


@pl.jit
def _shift_rank(x: pl.Tensor[[1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
                data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[4, 1], pl.INT32]):
    return _shift_kernel(x, y, data, sig)


@pl.jit.host
def _shift_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    d = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
    s = pld.alloc_window_buffer([4, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        _shift_rank(x[r], y[r], pld.window(d, [1, SIZE], dtype=pl.FP32), pld.window(s, [4, 1], dtype=pl.INT32),
                    device=r)


@pytest.mark.parametrize("n", [2, 4])
def test_notify_wait_remote_load_torch(n):
    torch = pytest.importorskip("torch")
    x = torch.randn(n, 1, SIZE)
    y = torch.zeros(n, 1, SIZE)
    _shift_host(x, y, config=_config(n))
    for r in range(n):
        assert torch.equal(y[r], x[(r + 1) % n])


# --- faults ---------------------------------------------------------------------------------------

@pl.jit.incore
def _faulty_kernel(y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]], sig: pld.DistributedTensor[[4, 1], pl.INT32],
                   how: str):
    ctx = pld.get_comm_ctx(sig)
    if pld.rank(ctx) == 1:
        if how == "raise":
            raise ValueError("rank one gives up")
        if how == "die":
            os.kill(os.getpid(), signal.SIGKILL)
    pld.system.wait(sig, offsets=[1, 0], expected=1, cmp=pld.WaitCmp.Ge)  # no rank notifies it
    y = pl.store(pl.load(y, [0, 0], [1, SIZE]), [0, 0], y)
    return y


@pl.jit
def _faulty_rank(y: pl.InOut[pl.Tensor[[1, SIZE], pl.FP32]], sig: pld.DistributedTensor[[4, 1], pl.INT32],
                 how: str):
    return _faulty_kernel(y, sig, how)


@pl.jit.host
def _faulty_host(y: pl.Out[pl.Tensor], how: str):
    s = pld.alloc_window_buffer([4, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        _faulty_rank(y[r], pld.window(s, [4, 1], dtype=pl.INT32), how, device=r)


def _no_leftovers(before_children):
    assert not glob.glob(f"/dev/shm/pypto-{os.getpid()}-*"), "a shared-memory segment outlived the run"
    for p in launcher._pools.values():
        assert p.alive
    time.sleep(0.2)
    import multiprocessing as mp
    live = [c for c in mp.active_children() if c.name.startswith("pypto-rank") and c not in before_children]
    assert not live, f"rank processes left: {live}"


@pytest.mark.parametrize("how,needle", [("raise", "rank 1 of 2 failed: ValueError: rank one gives up"),
                                        ("die", "rank 1 of 2 died (killed by signal 9)"),
                                        ("hang", "timed out after 3 s waiting for the signal cell")])
def test_rank_failure_names_the_rank_and_stops_the_others(how, needle):
    import multiprocessing as mp
    before = [c for c in mp.active_children()]
    y = np.zeros((2, 1, SIZE), np.float32)
    t0 = time.monotonic()
    with pytest.raises(DistributedError) as e:
        _faulty_host(y, how, config=_config(2, timeout=3))
    assert needle in str(e.value)
    assert time.monotonic() - t0 < 30
    _no_leftovers(before)


def test_killed_rank_mid_run():
    """A rank killed from outside while the others wait: the run fails at once, naming it."""
    import multiprocessing as mp
    y = np.zeros((2, 1, SIZE), np.float32)
    _shift_host(np.zeros((2, 1, SIZE), np.float32), y, config=_config(2))  # the pool is up and warm
    pool = launcher._pools[next(k for k in launcher._pools if k[0] == 2)]
    victim = pool.procs[1].pid

    def kill_soon():
        time.sleep(1.5)
        os.kill(victim, signal.SIGKILL)

    threading.Thread(target=kill_soon, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(DistributedError, match="rank 1 of 2 died"):
        _faulty_host(y, "hang", config=_config(2, timeout=60))
    assert time.monotonic() - t0 < 20
    _no_leftovers([c for c in mp.active_children() if c.pid != victim])


# --- errors ---------------------------------------------------------------------------------------

@pl.jit.host
def _bad_device(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    _allreduce_rank(x[0], y[0], None, None, 0, False, device=5)


def test_device_out_of_range_is_a_user_error():
    x = np.zeros((2, 1, SIZE), np.float32)
    with pytest.raises(pypto.UserError, match=r"device=5\): the rank must be an int in \[0, 2\)"):
        _bad_device(x, x.copy(), config=_config(2))


def test_window_ops_outside_a_host_are_user_errors():
    with pytest.raises(pypto.UserError, match="call it in a @pl.jit.host orchestrator"):
        pld.alloc_window_buffer([4], dtype=pl.FP32)
    with pytest.raises(pypto.UserError, match="device= dispatches to a rank"):
        _allreduce_rank(np.zeros((1, SIZE), np.float32), np.zeros((1, SIZE), np.float32), None, None, 0, False,
                        device=0)


def test_one_swimlane_for_every_rank():
    import json
    n = 2
    compiled = _shift_host.compile(config=_config(n))
    compiled(np.ones((n, 1, SIZE), np.float32), np.zeros((n, 1, SIZE), np.float32),
             config=RunConfig(enable_chip_swimlane=1))
    with open(os.path.join(compiled.output_dir, "swimlane.json")) as f:
        events = json.load(f)["traceEvents"]
    assert {e["pid"] for e in events} == set(range(n))
    names = {(e["pid"], e["name"]) for e in events if e.get("ph") == "X"}
    for r in range(n):  # each rank's signal kernels on its own track
        assert any(p == r and "notify" in name for p, name in names)
        assert any(p == r and "wait" in name for p, name in names)
    starts = [e["ts"] for e in events if e.get("ph") == "X"]
    assert min(starts) >= 0 and max(starts) < 60e6  # one clock: the run's


_shift_pod = pl.function(level=pl.Level.POD, role=pl.Role.Orchestrator)(_shift_host.fn)


def test_an_orchestrator_function_above_the_host_runs_its_ranks():
    """@pl.function(level=HOST or above, role=Orchestrator) is what @pl.jit.host specialises into."""
    x = np.random.default_rng(1).standard_normal((2, 1, SIZE)).astype(np.float32)
    y = np.zeros_like(x)
    _shift_pod(x, y, config=_config(2))
    np.testing.assert_array_equal(y, x[[1, 0]])
    assert pl.Level.POD is pl.Level.CLUSTER_0 and pl.Level.NODE is pl.Level.HOST


@pl.jit
def _bare_window_rank(x: pl.Tensor, y: pl.Out[pl.Tensor], data: pld.DistributedTensor,
                      sig: pld.DistributedTensor):
    """Bare annotations: every shape and dtype from the arguments."""
    data[:] = x
    data = pld.tensor.allreduce(data, sig)
    y[:] = data
    return y


@pl.jit.host
def _bare_window_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    n = pld.world_size()
    d = pld.alloc_window_buffer(list(x.shape[1:]), dtype=pl.FP32)
    s = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        _bare_window_rank(x[r], y[r], pld.window(d, list(x.shape[1:]), dtype=pl.FP32),
                          pld.window(s, [n, 1], dtype=pl.INT32), device=r)


def test_bare_distributed_tensor_annotation_takes_the_arguments_shape():
    x = np.random.default_rng(2).standard_normal((2, 5, 33)).astype(np.float32)
    y = np.zeros_like(x)
    _bare_window_host(x, y, config=_config(2))
    np.testing.assert_allclose(y, np.broadcast_to(x.sum(0), x.shape), rtol=1e-6)


def test_two_host_programs_called_in_turn_keep_their_segments():
    """Each host program keeps its arena and heap from call to call; the ranks map both."""
    rng = np.random.default_rng(4)
    for _ in range(2):
        x = rng.standard_normal((2, 1, SIZE)).astype(np.float32)
        y = np.zeros_like(x)
        _shift_host(x, y, config=_config(2))
        np.testing.assert_array_equal(y, x[[1, 0]])
        x2 = rng.standard_normal((2, 3, 17)).astype(np.float32)
        y2 = np.zeros_like(x2)
        _bare_window_host(x2, y2, config=_config(2))
        np.testing.assert_allclose(y2, np.broadcast_to(x2.sum(0), x2.shape), rtol=1e-6)


# --- regions, atomic adds and the variable all-to-all -------------------------------------------

@pl.jit
def _atomic_rank(x: pl.Tensor, acc: pld.DistributedTensor, sig: pld.DistributedTensor, y: pl.Out[pl.Tensor]):
    """Every rank adds its x into rank 0's window at once (atomic adds), and its first row into
    row `rank` of rank 1's window (a region); then everyone reads rank 0's sum."""
    ctx = pld.get_comm_ctx(acc)
    pld.tensor.barrier(sig)
    pld.tensor.put(acc, 0, x, atomic=pld.AtomicType.Add)
    pld.tensor.put(acc, 1, x, dst_offsets=[pld.rank(ctx) + 2, 0], src_offsets=[0, 0], shape=[1, 8])
    pld.tensor.barrier(sig)
    pld.tensor.get(y, 0, acc)


@pl.jit.host
def _atomic_host(x: pl.Tensor, y: pl.Out[pl.Tensor], y1: pl.Out[pl.Tensor]):
    n = pld.world_size()
    acc = pld.alloc_window_buffer([6, 8], dtype=pl.FP32)
    sig = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        _atomic_rank(x[r], pld.window(acc, [6, 8], dtype=pl.FP32), pld.window(sig, [n, 1], dtype=pl.INT32),
                     y[r], device=r)
    a = pld.window(acc, [6, 8], dtype=pl.FP32)
    for r in pl.range(n):
        _read_copy(y1[r], a, device=r)


@pl.jit
def _read_copy(y: pl.Out[pl.Tensor], acc: pld.DistributedTensor):
    pld.tensor.get(y, 1, acc)


def test_atomic_puts_and_regions():
    n = 2
    x = np.random.default_rng(6).integers(-8, 8, (n, 6, 8)).astype(np.float32)
    y = np.zeros_like(x)
    y1 = np.zeros_like(x)
    _atomic_host(x, y, y1, config=_config(n))
    for r in range(n):
        np.testing.assert_array_equal(y[r], x.sum(0))  # exact: small integers
        for src in range(n):
            np.testing.assert_array_equal(y1[r][src + 2], x[src][0])


@pl.jit
def _a2av_rank(x: pl.Tensor, counts: pl.Tensor, out: pl.Out[pl.Tensor], got: pl.Out[pl.Tensor],
               target: pld.DistributedTensor, recv: pld.DistributedTensor, sig: pld.DistributedTensor):
    target = pld.tensor.all_to_all_v(x, target, sig, counts, recv)
    pld.tensor.get(out, pld.rank(pld.get_comm_ctx(target)), target)
    pld.tensor.get(got, pld.rank(pld.get_comm_ctx(recv)), recv)


@pl.jit.host
def _a2av_host(x: pl.Tensor, counts: pl.Tensor, out: pl.Out[pl.Tensor], got: pl.Out[pl.Tensor]):
    n = pld.world_size()
    t = pld.alloc_window_buffer([n * 3, 8], dtype=pl.FP32)
    rc = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    s = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(n):
        _a2av_rank(x[r], counts[r], out[r], got[r], pld.window(t, [n * 3, 8], dtype=pl.FP32),
                   pld.window(rc, [n, 1], dtype=pl.INT32), pld.window(s, [n, 1], dtype=pl.INT32), device=r)


@pytest.mark.parametrize("n", [2, 3])
def test_all_to_all_v(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n * 3, 8)).astype(np.float32)
    counts = rng.integers(0, 6, (n, n, 1)).astype(np.int32)  # some above the 3 rows per block
    out = np.zeros_like(x)
    got = np.zeros((n, n, 1), np.int32)
    _a2av_host(x, counts, out, got, config=_config(n))
    for r in range(n):
        for src in range(n):
            np.testing.assert_array_equal(out[r][src * 3:(src + 1) * 3], x[src][r * 3:(r + 1) * 3])
            assert got[r][src, 0] == min(counts[src][r, 0], 3)


@pl.jit
def _count_rank(y: pl.Out[pl.Tensor], acc: pld.DistributedTensor):
    """Adds one to this rank's window and returns what it holds."""
    ctx = pld.get_comm_ctx(acc)
    me = pld.rank(ctx)
    pld.tensor.put(acc, me, pypto.full([1, 4], 1, pypto.DT_INT32), atomic=pld.AtomicType.Add)
    pld.tensor.get(y, me, acc)


@pl.jit.host
def _count_host(y: pl.Out[pl.Tensor]):
    acc = pld.alloc_window_buffer([1, 4], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        _count_rank(y[r], pld.window(acc, [1, 4], dtype=pl.INT32), device=r)


def test_distributed_worker_keeps_persistent_windows():
    from pypto.runtime import DistributedWorker
    compiled = _count_host.compile(config=_config(2))
    y = np.zeros((2, 1, 4), np.int32)
    with compiled.prepare(persistent=True, reset_persistent_windows=False) as rt:
        for k in range(1, 4):
            rt(y)
            assert (y == k).all(), (k, y)  # the window kept its count
        assert rt.submit(compiled, y).result(timeout=120) is None and (y == 4).all()
    with DistributedWorker(compiled) as rt:  # not persistent: every dispatch starts from zero
        rt(y)
        rt(y)
        assert (y == 1).all()
    with pytest.raises(ValueError, match=r"no HOST SubWorker function is named \['inspect_result'\]"):
        compiled.prepare(callbacks={"inspect_result": print})


@pl.jit.incore
def _short_forms_kernel(x: pl.Tensor[[1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
                        data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[4, 1], pl.INT32]):
    ctx = pld.system.get_comm_ctx(data)
    me, n = pld.system.rank(ctx), pld.system.nranks(ctx)
    pld.remote_store(pl.load(x, [0, 0], [1, SIZE]), data, (me + 1) % n, [0, 0])  # into the next rank's copy
    pld.system.notify(sig, peer=(me + 1) % n, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    pld.system.defer_wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
    y = pl.store(pld.remote_load(data, me, [0, 0], [1, SIZE]), [0, 0], y)
    return y


@pl.jit
def _short_forms_rank(x: pl.Tensor[[1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
                      data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[4, 1], pl.INT32]):
    return _short_forms_kernel(x, y, data, sig)


@pl.jit.host
def _short_forms_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    d = pld.tensor.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
    s = pld.tensor.alloc_window_buffer([4, 1], dtype=pl.INT32)
    for r in pl.range(pld.system.world_size()):
        _short_forms_rank(x[r], y[r], pld.tensor.window(d, [1, SIZE], dtype=pl.FP32),
                          pld.tensor.window(s, [4, 1], dtype=pl.INT32), device=r)


def test_upstream_short_forms_and_defer_wait():
    x = np.random.default_rng(9).standard_normal((3, 1, SIZE)).astype(np.float32)
    y = np.zeros_like(x)
    _short_forms_host(x, y, config=_config(3))
    for r in range(3):
        np.testing.assert_array_equal(y[r], x[(r - 1) % 3])
