"""``asc.runtime`` of PyAsc (``asc.runtime.config``)."""

from . import config

__all__ = ["config"]
