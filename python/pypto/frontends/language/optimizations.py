"""``pl.optimizations``: the entries of ``pl.at(..., optimizations=[...])`` (hw-native-sys
pypto's module): ``split(mode)`` and ``cross_core_slot(slot_num=N)``."""

from ._program import Optimization, cross_core_slot, split

__all__ = ["Optimization", "cross_core_slot", "split"]
