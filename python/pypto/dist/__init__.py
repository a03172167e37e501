"""Ranks beyond one process (seed 002's host level and above): the shared windows of the ranks of
a host (``heap``), the rank processes and their failures (``launcher``), and which rank this
process is (``context``). The front doors build on it: ``pypto.language.distributed`` (pld,
hw-native-sys's names) and ``pypto.distributed`` (CANN PyPTO's shmem ops); see
docs/distributed.md and docs/ARCHITECTURE.md ("Distributed")."""

from .context import RankContext, current, require
from .heap import SharedSegment, WindowLayout
from .launcher import DistributedError, RankPool, run_ranks, shutdown_pools

__all__ = ["RankContext", "current", "require", "SharedSegment", "WindowLayout", "DistributedError", "RankPool",
           "run_ranks", "shutdown_pools"]
