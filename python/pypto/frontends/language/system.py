"""``pl.system``: hw-native-sys pypto's system-op namespace: task ids (``task_dummy``,
``task_invalid``), the cross-core pipe ops (``tpush_*`` / ``tpop_*`` / ``tfree_*`` /
``*_initialize_pipe``, as ``pl.<name>``), ``AUTO``, and the chip's synchronization and buffer
ops, which are UserErrors naming why (``pl.system`` of ``pypto.language.distributed`` is pld's
own namespace and is unchanged)."""

from __future__ import annotations

from typing import Any

from ._tasks import task_dummy, task_invalid
from ._names_extra import (
    AUTO,
    _err,
    import_peer_buffer,
    reserve_buffer,
)
from ._pipe import (
    aic_initialize_pipe,
    aiv_initialize_pipe,
    tfree_to_aic,
    tfree_to_aiv,
    tpop_from_aic,
    tpop_from_aiv,
    tpush_to_aic,
    tpush_to_aiv,
)

__all__ = [
    "AUTO",
    "aic_initialize_pipe",
    "aiv_initialize_pipe",
    "available_aiv_count",
    "available_cluster_count",
    "bar_all",
    "bar_m",
    "bar_v",
    "cacheinvalid",
    "fence",
    "import_peer_buffer",
    "reserve_buffer",
    "set_ffts",
    "sync_dst",
    "sync_set",
    "sync_src",
    "sync_wait",
    "syncall",
    "task_dummy",
    "task_invalid",
    "tfree_to_aic",
    "tfree_to_aiv",
    "tpop_from_aic",
    "tpop_from_aiv",
    "tpush_to_aic",
    "tpush_to_aiv",
]

_SYNC_WHY = ("synchronizes the chip's cores or pipelines by hand; here each kernel's ops run in program order and the "
             "runtime orders tasks by the data they touch, so there is no chip pipeline or core to synchronize")


def _refused(name: str, why: str, hint: str = "") -> Any:
    def op(*args: Any, **kwargs: Any) -> Any:
        raise _err(f"pl.system.{name} {why}", hint)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``pl.system.{name}``: refused here: it {why}."
    return op


sync_src = _refused("sync_src", _SYNC_WHY)
sync_dst = _refused("sync_dst", _SYNC_WHY)
sync_set = _refused("sync_set", _SYNC_WHY)
sync_wait = _refused("sync_wait", _SYNC_WHY)
bar_v = _refused("bar_v", _SYNC_WHY)
bar_m = _refused("bar_m", _SYNC_WHY)
bar_all = _refused("bar_all", _SYNC_WHY)
fence = _refused("fence", _SYNC_WHY)
syncall = _refused("syncall", _SYNC_WHY, "hand data between cores through tensors (ordered by the runtime) or "
                   "pl.tpush_* / pl.tpop_*")
set_ffts = _refused("set_ffts", "sets the chip's cross-core flag workspace (FFTS), a chip-only register")
cacheinvalid = _refused("cacheinvalid", "invalidates the chip's data cache; memory here has no cache to invalidate "
                        "by hand")
available_cluster_count = _refused("available_cluster_count", "is the chip's usable cluster count reported by its "
                                   "runtime; there is no such count here",
                                   "give pl.spmd a block count of your own")
available_aiv_count = _refused("available_aiv_count", "is the chip's usable AIV count reported by its runtime; "
                               "there is no such count here", "give pl.spmd a block count of your own")
