"""HCCL on the CPU: torch.distributed's ``hccl`` backend as gloo, for CANN PyPTO's distributed
programs (their ranks call ``dist.init_process_group(backend="hccl", ...)`` and ``dist.new_group(
backend="hccl", ranks=...)``, then name the group to pypto by
``group._get_backend(torch.device("npu")).get_hccl_comm_name(rank)``).

The group's communicator is gloo's; its HCCL name is ``pypto_hccl_<torch's group name>``, the same
on every member, and ``group_of(name)`` finds the group again (pypto.distributed rendezvous through
it when a program first maps a shmem window)."""

from __future__ import annotations

import os
import socket
from typing import Any, Dict, Optional

_groups: Dict[str, Any] = {}  # HCCL name -> torch ProcessGroup
_installed = False


class HcclBackend:
    """What ``group._get_backend(npu)`` gives for an hccl group: the gloo backend, plus the group's
    HCCL communicator name."""

    def __init__(self, group: Any, backend: Any) -> None:
        self._group, self._backend = group, backend

    def get_hccl_comm_name(self, rank: int = 0) -> str:
        name = "pypto_hccl_" + str(self._group.group_name)
        _groups[name] = self._group
        return name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def group_of(name: str) -> Optional[Any]:
    """The torch ProcessGroup an HCCL name from ``get_hccl_comm_name`` names."""
    return _groups.get(name)


def mpi_environment() -> bool:
    """Ranks started by MPI's launcher (``mpiexec -n 4 python program.py``, not torchrun): sets
    what ``init_process_group``'s env:// rendezvous reads (RANK, WORLD_SIZE, LOCAL_RANK,
    MASTER_ADDR, MASTER_PORT) from MPI, as DeepSpeed's MPI discovery does: the rank and size from
    MPI_COMM_WORLD, the local rank from the ranks sharing the node, and rank 0's host and a free
    port of it broadcast with mpi4py. Does nothing when RANK is set (torchrun) or the process was
    not started by an MPI launcher; True when it set them."""
    if "RANK" in os.environ or "PYPTO_DIST_ADDRESS" in os.environ:  # (torchrun; or a rank of pypto's own engine)
        return False
    if not any(k in os.environ for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")):
        return False
    from mpi4py import MPI  # noqa: PLC0415 - only for ranks an MPI launcher started

    comm = MPI.COMM_WORLD
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    local_rank = node.Get_rank()
    node.Free()
    hosts = comm.allgather(socket.gethostname())
    master = None
    if comm.Get_rank() == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        master = ("127.0.0.1" if len(set(hosts)) == 1 else hosts[0], port)
    addr, port = comm.bcast(master, root=0)
    os.environ.update({"RANK": str(comm.Get_rank()), "WORLD_SIZE": str(comm.Get_size()),
                       "LOCAL_RANK": str(local_rank), "MASTER_ADDR": addr, "MASTER_PORT": str(port)})
    return True


def install() -> None:
    """Registers ``hccl`` with torch.distributed (idempotent); needs torch. Under an MPI launcher
    it also sets the env:// rendezvous from MPI (``mpi_environment``)."""
    global _installed
    if _installed:
        return
    mpi_environment()
    import torch.distributed as dist  # noqa: PLC0415 - torch is optional; npu_compat.install loads it

    if not dist.is_available():
        return

    def make_gloo(store: Any, rank: int, size: int, timeout: Any) -> Any:
        return dist.ProcessGroupGloo(store, rank, size, timeout)

    if "hccl" not in dist.Backend.backend_list:
        dist.Backend.register_backend("hccl", make_gloo, devices=["cpu", "npu"])
    get_backend = dist.ProcessGroup._get_backend

    def _get_backend(self: Any, device: Any) -> Any:
        backend = get_backend(self, device)
        try:
            is_hccl = dist.get_backend(self) == "hccl"
        except (RuntimeError, ValueError):
            is_hccl = False
        return HcclBackend(self, backend) if is_hccl else backend

    dist.ProcessGroup._get_backend = _get_backend
    _installed = True
