"""``pypto.ir.pass_manager`` of hw-native-sys pypto: ``OptimizationStrategy`` (accepted by
``RunConfig(strategy=...)``; this compiler runs one pipeline, docs/ARCHITECTURE.md)."""

import enum

__all__ = ["OptimizationStrategy"]


class OptimizationStrategy(enum.Enum):
    Default = "Default"
    DebugTileOptimization = "DebugTileOptimization"
