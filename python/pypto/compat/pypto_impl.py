"""The few names of CANN PyPTO's internal module ``pypto.pypto_impl`` that its model code uses
(``from pypto import pypto_impl``): ``Element``, ``ScalarDivS``,
``GetCompilerMonitorTotalElapsed``, ``GetNPUArch`` / ``SetNPUArch``, ``LogTopFolder`` and the convolution's
``TileL1Info`` / ``TileL0Info`` / ``ConvReLuType``,
and the error codes ``ExternalError``. Programs should use the public names (``pypto.Element``,
``pypto.div``); these exist so such code runs unchanged."""

from __future__ import annotations

from typing import Any

from ..core._enums import ExternalError
from ..core.element import Element
from ..core.ops.conv import ConvReLuType, TileL0Info, TileL1Info
from .npu_platform import platform
from ..core.ops import div
from ..frontends.jit import compile_seconds
from ..whitebox import debug_output

__all__ = ["Element", "ScalarDivS", "GetCompilerMonitorTotalElapsed", "GetNPUArch", "SetNPUArch", "LogTopFolder",
           "TileL1Info", "TileL0Info", "ConvReLuType", "ExternalError"]


def GetNPUArch() -> str:  # noqa: N802 - PyPTO's name
    """pypto.platform.npuarch."""
    return platform.npuarch


def SetNPUArch(value: str) -> None:  # noqa: N802 - PyPTO's name
    platform.npuarch = value


def ScalarDivS(tensor: Any, other: Any, reverse: bool = False) -> Any:  # noqa: N802 - PyPTO's name
    """tensor / other, or other / tensor with ``reverse``."""
    return div(other, tensor) if reverse else div(tensor, other)


def GetCompilerMonitorTotalElapsed() -> float:  # noqa: N802 - PyPTO's name
    """Seconds this process spent compiling @pypto.jit functions (tracing, passes, kernels)."""
    return compile_seconds()


def LogTopFolder() -> str:  # noqa: N802 - PyPTO's name
    """The debug folder the last call with ``runtime_debug_mode`` / ``compile_debug_mode`` wrote
    (``dyn_topo.txt``, ``tilefwk_L1_prof_data.json``, ``merged_swimlane.json``; PyPTO's NPU
    profiler files are not written here), or "" before any."""
    return debug_output.last_folder
