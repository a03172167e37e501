"""``pypto.runtime``: the names of CANN PyPTO's runtime module that programs use. Every call here
runs to completion before it returns (the outputs are written), so a device synchronization has
nothing to wait for."""

from .config import RunMode

__all__ = ["RunMode", "RunConfig"]


def _device_synchronize() -> None:
    """PyPTO's (internal) device synchronization: a no-op, calls here are synchronous."""


def __getattr__(name: str) -> object:
    # RunConfig belongs to pypto.language (the hw-native-sys runtime's config, `from
    # pypto.runtime import RunConfig`); imported on first use to keep this module light.
    if name == "RunConfig":
        from .language import RunConfig
        return RunConfig
    raise AttributeError(f"module 'pypto.runtime' has no attribute {name!r}")
