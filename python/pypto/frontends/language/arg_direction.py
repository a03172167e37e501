"""``pl.adir``: hw-native-sys pypto's call-site argument directions (``pl.adir.input``,
``output``, ``output_existing``, ``inout``, ``no_dep``, ``scalar``), the members of
``ArgDirection``. Here the runtime derives each task's accesses from the callee's ``pl.Out`` /
``pl.InOut`` parameters and the data; the names are upstream's values."""

import enum

__all__ = [
    "DIRECTION_TO_NAME",
    "NAME_TO_DIRECTION",
    "ArgDirection",
    "inout",
    "input",
    "no_dep",
    "output",
    "output_existing",
    "scalar",
]


class ArgDirection(enum.Enum):
    """Call-site argument direction (upstream ``ir.ArgDirection``)."""

    Input = 0
    Output = 1
    InOut = 2
    OutputExisting = 3
    NoDep = 4
    Scalar = 5


input = ArgDirection.Input
output = ArgDirection.Output
output_existing = ArgDirection.OutputExisting
inout = ArgDirection.InOut
no_dep = ArgDirection.NoDep
scalar = ArgDirection.Scalar

NAME_TO_DIRECTION = {"input": input, "output": output, "output_existing": output_existing, "inout": inout,
                     "no_dep": no_dep, "scalar": scalar}
DIRECTION_TO_NAME = {v: k for k, v in NAME_TO_DIRECTION.items()}
