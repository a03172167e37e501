"""``asc.runtime.config`` of PyAsc: the backend and platform a program asks for. Every kernel
here runs on this CPU; the choice is accepted and kept."""

from __future__ import annotations

import enum
from typing import Any, Optional, Tuple


class Backend(enum.Enum):
    Model = "Model"
    NPU = "NPU"


class KernelType(enum.Enum):
    """Which cores a kernel's blocks occupy (PyAsc's values). Unset, a kernel that calls
    ``asc.adv.register_matmul`` is MIX_AIC_1_2 (each launched block a group of one cube and two
    vector cores; AIC_ONLY with ``matmul_cube_only=True``), any other AIV_ONLY."""

    AIV_ONLY = 0
    AIC_ONLY = 1
    MIX_AIV_HARD_SYNC = 2
    MIX_AIC_HARD_SYNC = 3
    MIX_AIV_1_0 = 4
    MIX_AIC_1_0 = 5
    MIX_AIC_1_1 = 6
    MIX_AIC_1_2 = 7


class Platform(enum.Enum):
    Ascend910B1 = "Ascend910B1"
    Ascend910B2 = "Ascend910B2"
    Ascend910B3 = "Ascend910B3"
    Ascend910B4 = "Ascend910B4"


chosen: Optional[Tuple[Any, Any]] = None


def set_platform(backend: Any = None, platform: Any = None) -> None:
    global chosen
    chosen = (backend, platform)
