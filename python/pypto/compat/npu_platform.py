"""``pypto.platform``: CANN PyPTO's platform information, which model code reads to choose a
chip-specific path (``if pypto.platform.npuarch == 'DAV_3510': ...``). Here the program runs on
the CPU; ``npuarch`` names the chip the machine model stands for: ``'DAV_2201'`` (Atlas A2 / A3,
the default) unless set."""

from __future__ import annotations

import pypto._core as _core

# The NPU architectures PyPTO names, and the machine model of each.
NPU_ARCHS = {"DAV_2201": "a2a3", "DAV_3510": "a5"}


class _Platform:
    """Platform information (``pypto.platform.npuarch``)."""

    def __init__(self) -> None:
        self._arch = "DAV_2201"

    @property
    def npuarch(self) -> str:
        """The NPU architecture programs are written for (a chip path choice; the CPU runs them)."""
        return self._arch

    @npuarch.setter
    def npuarch(self, value: str) -> None:
        if value not in NPU_ARCHS:
            raise _core.UserError(f"pypto.platform.npuarch: {value!r} is not one of {sorted(NPU_ARCHS)}")
        self._arch = value


platform = _Platform()
