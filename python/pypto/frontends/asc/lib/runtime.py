"""``asc.lib.runtime`` of PyAsc: streams. Launches here are synchronous (the outputs are written
when the launch returns), so a stream is a name."""

from __future__ import annotations


def current_stream() -> int:
    return 0


def synchronize() -> None:
    """Launches are synchronous here: nothing to wait for."""
