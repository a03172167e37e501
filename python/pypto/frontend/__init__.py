"""`pypto.frontend.jit()`: the decorator of the PyPTO tensor-level frontend."""

from ..jit import JitFunction, jit

__all__ = ["jit", "JitFunction"]
