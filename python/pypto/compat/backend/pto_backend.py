"""``pypto.backend.pto_backend`` of hw-native-sys pypto: the error its code generation raises.

``PartialCodegenError`` is what a program that cannot be turned into code raises there. Here the
compiler raises it (a ``UserError`` too, naming the line) for a program whose ``pl.Out``
parameter is never written: upstream's code generation fails on it as well (the value never
reaches the store), docs/porting.md."""

from __future__ import annotations

from ...core.error import PartialCodegenError

__all__ = ["PartialCodegenError"]
