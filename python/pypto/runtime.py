"""``pypto.runtime``: the names of CANN PyPTO's runtime module that programs use. Every call here
runs to completion before it returns (the outputs are written), so a device synchronization has
nothing to wait for."""

from .config import RunMode

__all__ = ["RunMode"]


def _device_synchronize() -> None:
    """PyPTO's (internal) device synchronization: a no-op, calls here are synchronous."""
