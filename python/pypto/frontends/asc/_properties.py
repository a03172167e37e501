"""``asc.property(asc.DEFAULT_C0_SIZE)``: Ascend C's compile-time constants of the chip, as PyAsc
queries them in a kernel. Sizes are in bytes; the memory sizes are those of the chip the kernel
runs on (``@asc.jit(machine=...)``, a2a3 by default)."""

from __future__ import annotations

from typing import Callable, Dict

import pypto._core as _core
from ...core._tracing import _format_loc, user_loc
from ._memory import Block, Hardware, current_block


class Property:
    """One constant ``asc.property`` reads (``asc.DEFAULT_C0_SIZE``, ``asc.ONE_BLK_SIZE``,
    ``asc.TOTAL_L1_SIZE``, ``asc.TOTAL_L0C_SIZE``)."""

    def __init__(self, name: str, value: Callable[[Block], int]) -> None:
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"asc.{self.name}"


# The bytes of one fractal row (C0) and of one block of local memory: 32 on every Ascend chip.
DEFAULT_C0_SIZE = Property("DEFAULT_C0_SIZE", lambda block: 32)
ONE_BLK_SIZE = Property("ONE_BLK_SIZE", lambda block: 32)
TOTAL_L1_SIZE = Property("TOTAL_L1_SIZE", lambda block: block.capacity[Hardware.L1])
TOTAL_L0C_SIZE = Property("TOTAL_L0C_SIZE", lambda block: block.capacity[Hardware.L0C])
_ALL: Dict[str, Property] = {p.name: p for p in (DEFAULT_C0_SIZE, ONE_BLK_SIZE, TOTAL_L1_SIZE, TOTAL_L0C_SIZE)}


def property(prop: Property) -> int:  # noqa: A001 - PyAsc's name
    """``asc.property(asc.DEFAULT_C0_SIZE)``: the value of a chip constant, in a running kernel."""
    block = current_block("property")
    if not isinstance(prop, Property):
        raise _core.UserError(f"asc.property: takes one of asc.{', asc.'.join(_ALL)}, got {prop!r}"
                              + _format_loc(user_loc()))
    return int(prop.value(block))
