"""``pl.array``: hw-native-sys pypto's small on-core arrays of scalars (``create``,
``get_element``, ``update_element``); ``arr[i]`` / ``arr[i] = v`` are the same. Arrays of
``pl.TASK_ID`` hold the task ids ``pl.submit`` returns, for ``deps=[...]``
(pypto.language._tasks)."""

from ._tasks import Array, get_element, update_element
from ._tasks import array_create as create

__all__ = ["Array", "create", "get_element", "update_element"]
