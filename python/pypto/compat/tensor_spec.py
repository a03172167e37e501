"""``pypto.runtime.TensorSpec`` / ``ScalarSpec`` of hw-native-sys pypto: a program's arguments
described by name, shape, dtype and how to fill them, as its examples and test harness build
them (``spec.create_tensor()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List

__all__ = ["TensorSpec", "ScalarSpec"]

# The torch factories called as factory(shape, dtype=...); any other callable is called with no
# arguments and its result cast.
_FACTORIES = ("randn", "rand", "zeros", "ones")


@dataclass
class TensorSpec:
    """One tensor argument: ``init_value`` is None (zeros), a number (filled with it), a tensor
    (taken, cast to ``dtype``), ``torch.randn`` / ``rand`` / ``zeros`` / ``ones`` (called with the
    shape) or a no-argument callable returning the values; ``is_output`` marks what a test
    compares with its golden."""

    name: str
    shape: List[int]
    dtype: Any
    init_value: Any = field(default=None)
    is_output: bool = False

    def create_tensor(self) -> Any:
        import torch

        v = self.init_value
        if v is None:
            return torch.zeros(self.shape, dtype=self.dtype)
        if isinstance(v, bool) or not isinstance(v, (int, float, torch.Tensor)) and not callable(v):
            raise TypeError(f"TensorSpec {self.name!r}: init_value {type(v).__name__} is not None, a number, a "
                            "tensor or a callable")
        if isinstance(v, (int, float)):
            return torch.full(self.shape, v, dtype=self.dtype)
        if isinstance(v, torch.Tensor):
            return v.to(dtype=self.dtype)
        if any(v is getattr(torch, f) for f in _FACTORIES):
            return v(self.shape, dtype=self.dtype)
        return torch.as_tensor(v(), dtype=self.dtype)


_CTYPES = ("int64", "int32", "uint64", "uint32", "float", "double")


@dataclass
class ScalarSpec:
    """One scalar argument: its ``value`` and C type (``"int64"``, ``"int32"``, ``"uint64"``,
    ``"uint32"``, ``"float"``, ``"double"``)."""

    name: str
    value: Any
    ctype: str = "int64"

    def __post_init__(self) -> None:
        if self.ctype not in _CTYPES:
            raise ValueError(f"ScalarSpec {self.name!r}: unsupported ctype {self.ctype!r}; one of {list(_CTYPES)}")
