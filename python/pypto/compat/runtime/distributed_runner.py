"""``pypto.runtime.distributed_runner`` of hw-native-sys pypto: the names its host programs' code
uses. ``_tensor_from_continuous(arg)`` is a HOST SubWorker argument as a torch tensor sharing its
memory (writes into it reach the caller's array)."""

from __future__ import annotations

from typing import Any

from ...frontends.language._host import DistributedConfig, DistributedWorker, HostArg

__all__ = ["DistributedWorker", "DistributedConfig", "_tensor_from_continuous"]


def _tensor_from_continuous(arg: Any) -> Any:
    import torch

    if not isinstance(arg, HostArg):
        raise TypeError(f"_tensor_from_continuous takes a HOST SubWorker's tensor argument, got {type(arg).__name__}")
    if isinstance(arg.dtype, torch.dtype):
        if arg.dtype == torch.bfloat16:  # held as its uint16 bits
            return torch.from_numpy(arg.buffer).view(torch.bfloat16)
        return torch.from_numpy(arg.buffer).view(arg.dtype)
    return torch.from_numpy(arg.buffer)
