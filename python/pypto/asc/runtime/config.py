"""``asc.runtime.config`` of PyAsc: the backend and platform a program asks for. Every kernel
here runs on this CPU; the choice is accepted and kept."""

from __future__ import annotations

import enum
from typing import Any, Optional, Tuple


class Backend(enum.Enum):
    Model = "Model"
    NPU = "NPU"


class Platform(enum.Enum):
    Ascend910B1 = "Ascend910B1"
    Ascend910B2 = "Ascend910B2"
    Ascend910B3 = "Ascend910B3"
    Ascend910B4 = "Ascend910B4"


chosen: Optional[Tuple[Any, Any]] = None


def set_platform(backend: Any = None, platform: Any = None) -> None:
    global chosen
    chosen = (backend, platform)
