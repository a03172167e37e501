"""``pypto.info()``: what this installation runs on and how: the package version, the CPU and
the instruction-set level its kernels are compiled for (``PYPTO_CPU_ISA`` forces a lower one),
and the cube's micro-kernel path per dtype (src/runtime/cpu_isa.cpp)."""

from __future__ import annotations

from typing import Any, Dict

import pypto._core as _core

VERSION = "0.1.0"


def info() -> Dict[str, Any]:
    """{"version", "cpu", "features", "isa" (the level in use), "best" (the CPU's best level),
    "requested" (PYPTO_CPU_ISA), "amx", and the cube path of "fp32", "fp16", "bf16", "int8"}."""
    out: Dict[str, Any] = {"version": VERSION}
    out.update(dict(_core.cpu_paths()))
    return out
