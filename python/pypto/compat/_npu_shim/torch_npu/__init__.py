"""``torch_npu`` in a Python process started by a program that runs under pypto.npu_compat (PyPTO's
tests run some scripts in a subprocess): importing it maps the NPU device to the CPU there too,
and the import gives pypto.npu_compat's torch_npu module. npu_compat puts this folder on
PYTHONPATH for child processes; it is never on the path otherwise."""

import sys

del sys.modules[__name__]  # the import then returns the module install() registers
from pypto.compat import npu_compat  # noqa: E402

npu_compat.install()
