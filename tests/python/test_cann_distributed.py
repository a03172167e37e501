"""CANN PyPTO's shmem ops (pypto.distributed) on the ranks of one host: ranks are processes this
test starts, joined in torch.distributed groups over ``hccl`` (gloo here), as CANN's distributed
system tests do; results against numpy."""

from __future__ import annotations

import multiprocessing as mp
import socket
import traceback

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import pypto  # noqa: E402

ROWS, COLS = 8, 64


@pypto.jit
def allreduce_kernel(x: pypto.Tensor([ROWS, COLS], pypto.DT_FP32), out: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
                     group: str, world_size: int):
    """out = the sum over the group of x: ADD-puts into every PE's window, a signal per put, a
    wait for all of them, a read of this PE's copy (CANN's allreduce pattern)."""
    pypto.set_vec_tile_shapes(ROWS, COLS)
    shmem = pypto.distributed.create_shmem_tensor(group, world_size, pypto.DT_FP32, [ROWS, COLS])
    me = pypto.distributed.my_symbolic_pe(group)
    for pe in range(world_size):
        put = pypto.distributed.shmem_put(x, [0, 0], shmem, pe, put_op=pypto.AtomicType.ADD, pred=[x])
        pypto.distributed.shmem_signal(shmem, pe, 1, [ROWS, COLS], [0, 0], target_pe=pe,
                                       sig_op=pypto.AtomicType.ADD, pred=[put])
    done = pypto.distributed.shmem_wait_until(shmem, me, world_size, [ROWS, COLS], [0, 0], cmp=pypto.OpType.EQ,
                                              clear_signal=True, pred=[x])
    out[:] = pypto.distributed.shmem_get(shmem, me, [ROWS, COLS], [0, 0], pred=[done])


@pypto.jit
def allgather_kernel(x: pypto.Tensor([ROWS, COLS], pypto.DT_BF16), out: pypto.Tensor([pypto.DYNAMIC, COLS],
                                                                                      pypto.DT_BF16),
                     group: str, world_size: int):
    """out rows [r * ROWS, (r + 1) * ROWS) = rank r's x: SET-puts into each PE's slot of this rank,
    then each slot is waited for and read (CANN's allgather pattern)."""
    pypto.set_vec_tile_shapes(ROWS, COLS)
    shmem = pypto.distributed.create_shmem_tensor(group, world_size, pypto.DT_BF16, [ROWS * world_size, COLS])
    sig = pypto.distributed.create_shmem_signal(group, world_size)
    me = pypto.distributed.my_symbolic_pe(group)
    bar = pypto.distributed.shmem_barrier_all(sig)
    for pe in range(world_size):
        put = pypto.distributed.shmem_put(x, [me * ROWS, 0], shmem, pe, pred=[bar])
        pypto.distributed.shmem_signal(shmem, pe, 1, [ROWS, COLS], [me * ROWS, 0], target_pe=pe,
                                       sig_op=pypto.AtomicType.ADD, pred=[put])
    for src in range(world_size):
        w = pypto.distributed.shmem_wait_until(shmem, me, 1, [ROWS, COLS], [src * ROWS, 0], clear_signal=True)
        out[src * ROWS:(src + 1) * ROWS, :] = pypto.experimental.shmem_load(shmem, me, [ROWS, COLS],
                                                                            [src * ROWS, 0], pred=[w])


def _worker(rank, world, port, groups, seed, errors):
    try:
        import torch.distributed as dist
        from pypto.compat import npu_compat

        npu_compat.install()
        dist.init_process_group(backend="hccl", rank=rank, world_size=world, init_method=f"tcp://127.0.0.1:{port}")
        names = []
        for ranks in groups:  # every rank makes every group, as CANN's helper does
            g = dist.new_group(backend="hccl", ranks=ranks)
            if rank in ranks:
                names.append(g._get_backend(torch.device("npu")).get_hccl_comm_name(rank))
        rng = np.random.default_rng(seed)
        xs = [rng.standard_normal((ROWS, COLS)).astype(np.float32) for _ in range(world)]
        for calls in range(2):  # a second call reuses the windows: they start from zero again
            for name, ranks in zip(names, [r for r in groups if rank in r]):
                out = np.zeros((ROWS, COLS), np.float32)
                allreduce_kernel(xs[rank] * (calls + 1), out, name, len(ranks))
                want = sum(xs[r] for r in ranks) * (calls + 1)
                np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        name, ranks = names[0], groups[0]
        x = torch.from_numpy(xs[rank]).to(torch.bfloat16)
        out = torch.zeros((ROWS * len(ranks), COLS), dtype=torch.bfloat16)
        allgather_kernel(x, out, name, len(ranks))
        want = torch.cat([torch.from_numpy(xs[r]).to(torch.bfloat16) for r in ranks])
        assert torch.equal(out, want)
    except BaseException:  # noqa: BLE001 - reported to the test
        errors.put((rank, traceback.format_exc()))
        raise


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("world,groups", [(2, [[0, 1]]), (4, [[0, 1, 2, 3], [0, 2], [1, 3]])])
def test_shmem_allreduce_and_allgather(world, groups):
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, groups, 5, errors)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    for p in procs:
        if p.is_alive():
            p.kill()
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert not failures, "\n".join(f"rank {r}:\n{tb}" for r, tb in failures)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]


@pypto.jit
def _mismatched_kernel(x: pypto.Tensor([ROWS, COLS], pypto.DT_FP32), out: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
                       group: str, rows: int):
    pypto.set_vec_tile_shapes(ROWS, COLS)
    shmem = pypto.distributed.create_shmem_tensor(group, 2, pypto.DT_FP32, [rows, COLS])
    me = pypto.distributed.my_symbolic_pe(group)
    out[:] = pypto.distributed.shmem_get(shmem, me, [ROWS, COLS], [0, 0]) + x


def _mismatch_worker(rank, port, errors):
    try:
        import torch.distributed as dist
        from pypto.compat import npu_compat

        npu_compat.install()
        dist.init_process_group(backend="hccl", rank=rank, world_size=2, init_method=f"tcp://127.0.0.1:{port}")
        g = dist.new_group(backend="hccl", ranks=[0, 1])
        name = g._get_backend(torch.device("npu")).get_hccl_comm_name(rank)
        x = np.zeros((ROWS, COLS), np.float32)
        _mismatched_kernel(x, np.zeros_like(x), name, ROWS * (rank + 1))  # rank 1 makes a larger window
    except BaseException as e:  # noqa: BLE001
        errors.put((rank, f"{type(e).__name__}: {e}"))


def test_members_that_disagree_on_a_shmem_tensor_get_a_user_error():
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_mismatch_worker, args=(r, port, errors)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        if p.is_alive():
            p.kill()
    got = []
    while not errors.empty():
        got.append(errors.get())
    assert len(got) == 2, got
    for rank, msg in got:
        assert "UserError" in msg and "disagree on its shmem allocation" in msg, msg
        assert "rank 0: create_shmem_tensor(2, DataType.FP32, [8, 64])" in msg
        assert "rank 1: create_shmem_tensor(2, DataType.FP32, [16, 64])" in msg


TORCHRUN_SCRIPT = '''
import os
import numpy as np
import torch
import torch.distributed as dist
from pypto.compat import npu_compat
npu_compat.install()  # (or `import torch_npu` with pypto's stand-in on the path)
import pypto
from test_cann_distributed import allreduce_kernel, ROWS, COLS

dist.init_process_group(backend="hccl")  # torchrun's environment: RANK, WORLD_SIZE, MASTER_ADDR/PORT
rank, world = dist.get_rank(), dist.get_world_size()
g = dist.new_group(backend="hccl", ranks=list(range(world)))
name = g._get_backend(torch.device("npu")).get_hccl_comm_name(rank)
x = np.full((ROWS, COLS), rank + 1, np.float32)
out = np.zeros_like(x)
allreduce_kernel(x, out, name, world)
assert np.all(out == sum(r + 1 for r in range(world))), out
print(f"rank {rank}: OK", flush=True)
'''


def test_a_torchrun_launch(tmp_path):
    """Ranks started by torchrun (env:// rendezvous), as a CANN program is launched on a cluster."""
    import os
    import subprocess
    import sys
    script = tmp_path / "allreduce_torchrun.py"
    script.write_text(TORCHRUN_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__)),
                                                        os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                        f"--master_port={_free_port()}", str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0: OK" in r.stdout and "rank 1: OK" in r.stdout, r.stdout


def test_an_mpirun_launch(tmp_path):
    """Ranks started by MPI's launcher (mpiexec -n 2 python program.py): the hccl stand-in sets the
    env:// rendezvous from MPI (compat/hccl.mpi_environment), so the same program runs."""
    import os
    import subprocess
    import sys
    pytest.importorskip("mpi4py")
    from pypto.dist.mpi_pool import find_mpiexec
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec (pip install mpich)")
    script = tmp_path / "allreduce_mpirun.py"
    script.write_text(TORCHRUN_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__)),
                                                        os.environ.get("PYTHONPATH", "")]))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    r = subprocess.run([mpiexec, "-n", "2", sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0: OK" in r.stdout and "rank 1: OK" in r.stdout, r.stdout
