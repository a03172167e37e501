"""``asc.lib`` of PyAsc: the host-side runtime (streams) and host tiling helpers."""

from . import host, runtime

__all__ = ["host", "runtime"]
