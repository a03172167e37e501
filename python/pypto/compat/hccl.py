"""HCCL on the CPU: torch.distributed's ``hccl`` backend as gloo, for CANN PyPTO's distributed
programs (their ranks call ``dist.init_process_group(backend="hccl", ...)`` and ``dist.new_group(
backend="hccl", ranks=...)``, then name the group to pypto by
``group._get_backend(torch.device("npu")).get_hccl_comm_name(rank)``).

The group's communicator is gloo's; its HCCL name is ``pypto_hccl_<torch's group name>``, the same
on every member, and ``group_of(name)`` finds the group again (pypto.distributed rendezvous through
it when a program first maps a shmem window)."""

from __future__ import annotations

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


def install() -> None:
    """Registers ``hccl`` with torch.distributed (idempotent); needs torch."""
    global _installed
    if _installed:
        return
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
