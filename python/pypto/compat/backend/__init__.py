"""``pypto.backend`` of hw-native-sys pypto: ``BackendType`` (the chip a program is compiled for)
and the backend configuration calls. Here every program runs on this CPU; the backend type names
the chip whose machine model the checks and the simulator use (Ascend910B -> "a2a3",
Ascend950 -> "a5", the names ``RunConfig(platform=...)`` takes)."""

from __future__ import annotations

from typing import Optional

from ...frontends.language._types import BackendType, machine_of

__all__ = ["BackendType", "set_backend_type", "get_backend_type", "is_backend_configured", "reset_for_testing",
           "machine_of"]

_configured: Optional[BackendType] = None


def set_backend_type(backend_type: BackendType) -> None:
    """Sets the process's backend type once (again with the same type is a no-op; another type
    raises ValueError, as upstream)."""
    global _configured
    machine_of(backend_type)
    if _configured is not None and _configured is not backend_type:
        raise ValueError(f"the backend type is already {_configured.name}; cannot change it to {backend_type.name}")
    _configured = backend_type


def get_backend_type() -> BackendType:
    if _configured is None:
        raise ValueError("the backend type has not been configured (pypto.backend.set_backend_type)")
    return _configured


def is_backend_configured() -> bool:
    return _configured is not None


def reset_for_testing() -> None:
    global _configured
    _configured = None
