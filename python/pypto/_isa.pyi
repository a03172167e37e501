"""Type stub of pypto._isa, the nanobind module behind pypto.isa (src/isa_bindings).

Every PTO instruction runs through `call` with its operands as tagged tuples; pypto.isa wraps
it with one function per instruction. Errors from the C++ side (bad shapes, dtypes, operands)
are raised as ValueError.
"""

from collections.abc import Mapping
from typing import Literal, Union

import numpy as np
import numpy.typing as npt

# A 2-D array used as a tile: rows contiguous (row stride >= width), dtype one of float32,
# float16, uint16 (bf16 bit patterns), int8, int16, int32, int64, uint8, bool; then the valid
# rows and columns the instruction acts on.
TileOperand = tuple[Literal["tile"], npt.NDArray[np.generic], int, int]
# An array of 1 to 5 dims used as a global tensor (any strides).
GlobalOperand = tuple[Literal["gm"], npt.NDArray[np.generic]]
# Scalars: an exact integer or a double (converted to the instruction's dtype).
IntOperand = tuple[Literal["int"], int]
FloatOperand = tuple[Literal["float"], float]
Operand = Union[TileOperand, GlobalOperand, IntOperand, FloatOperand]

def call(name: str, args: list[Operand], attrs: Mapping[str, str]) -> None:
    """Runs one instruction: call('TADD', [('tile', dst, vr, vc), ...], {'cmp': 'gt'}).

    `name` is the upper-case PTO name; `attrs` holds string attributes such as cmp, round,
    atomic, upper, descending. Releases the GIL while the instruction runs.
    """

def instructions() -> list[tuple[str, str, str, str]]:
    """(name, operands, dtypes) of every instruction."""

def run(
    text: str,
    tensors: dict[str, npt.NDArray[np.generic]],
    scalars: dict[str, Union[int, float]],
) -> None:
    """Runs a PTO assembly module with tensors / scalars bound by name ('%x' keys); tensors are
    written in place."""

def parse_print(text: str, /) -> str:
    """The canonical text of a PTO assembly module (parse, then print)."""

def isa() -> Literal["avx2", "generic"]:
    """The instruction set of the fast layer in use (avx2 or generic)."""
