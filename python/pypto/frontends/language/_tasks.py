"""hw-native-sys's manual dependencies, honoured by the data order the runtime keeps: task ids
(``pl.TASK_ID``, ``pl.TaskId``), ``pl.array`` (of task ids or ints), ``pl.scope`` /
``pl.manual_scope``, ``pl.submit`` / ``pl.spmd_submit`` (the call as a direct call, plus a task
id), ``pl.system.task_dummy`` / ``task_invalid``, ``pl.no_dep`` / ``pl.dump_tag``."""

from __future__ import annotations

import enum
import itertools
import threading
from typing import Any, Dict, List, Optional, Sequence

import pypto._core as _core

from ...core._tracing import _format_loc, user_loc
from ._program import KernelFunction, current_trace
from ._program import spmd as _spmd
from ._types import Scalar

_local = threading.local()  # the open pl.scope modes of this thread


def _err(msg: str, hint: str = "") -> _core.UserError:
    """A UserError at the user's line, with an optional hint (the language's names use it)."""
    return _core.UserError(msg + _format_loc(user_loc()) + (f"\nhint: {hint}" if hint else ""))


class _TaskIdDType:
    """``pl.TASK_ID``: the dtype of task ids (``pl.Scalar[pl.TASK_ID]``, ``pl.array.create(n,
    pl.TASK_ID)``)."""

    def __repr__(self) -> str:
        return "pl.TASK_ID"


TASK_ID = _TaskIdDType()
TaskId = Scalar[TASK_ID]  # the annotation of a task id, as upstream's alias

_task_ids = itertools.count(1)


class TaskIdValue:
    """A task id: what ``pl.submit`` / ``pl.spmd_submit`` / ``pl.system.task_dummy`` return, to
    name in later ``deps=[...]``. The runtime here orders tasks by their data, so a task id
    carries no ordering of its own; ``invalid`` is upstream's "no producer"."""

    def __init__(self, kind: str = "task", invalid: bool = False) -> None:
        self.kind, self.invalid = kind, invalid
        self.id = 0 if invalid else next(_task_ids)

    def __repr__(self) -> str:
        return "TaskId(invalid)" if self.invalid else f"TaskId({self.kind} #{self.id})"


def _check_deps(op: str, deps: Any) -> None:
    if deps is None:
        return
    if not isinstance(deps, (list, tuple)):
        raise _err(f"{op}: deps must be a list of task ids (pl.submit's second result, a pl.array of them, or "
                   f"None), got {deps!r}")
    for d in deps:
        if d is None or isinstance(d, TaskIdValue):
            continue
        if isinstance(d, Array) and d.dtype is TASK_ID and d._values is not None:
            continue
        raise _err(f"{op}: deps takes task ids (pl.submit's second result), arrays of them "
                   f"(pl.array.create(n, pl.TASK_ID)) or None; got {d!r}")


# --- pl.array --------------------------------------------------------------------------------------------


def _is_int_dtype(dtype: Any) -> bool:
    try:
        from ...core._dtypes import DT_BOOL, is_int_dtype
        return dtype == DT_BOOL or bool(is_int_dtype(dtype))
    except Exception:
        return False


class _ArrayMeta(type):
    def __getitem__(cls, item: Any) -> "Array":
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError("Array requires [extent, dtype] notation")
        return cls(item[0], item[1])


class Array(metaclass=_ArrayMeta):
    """``pl.Array[extent, dtype]`` (annotation) and the value ``pl.array.create(extent, dtype)``
    gives: a small fixed-size array of scalars (upstream keeps it in the core's scalar
    registers). ``arr[i] = v`` and ``arr[i]`` read and write it while the program is traced, so
    an integer array's index must be known then (an int, or the index of a loop unrolled at
    trace time). An array of task ids takes any index: task ids carry no data here."""

    def __init__(self, extent: Any = None, dtype: Any = None, _values: Optional[List[Any]] = None) -> None:
        self.extent, self.dtype, self._values = extent, dtype, _values

    def __class_getitem__(cls, item: Any) -> "Array":
        return type(cls).__getitem__(cls, item)

    def _index(self, op: str, index: Any) -> Optional[int]:
        if self._values is None:
            raise _err(f"pl.array.{op}: pl.Array[{self.extent!r}, {self.dtype!r}] is an annotation; arrays come "
                       "from pl.array.create(extent, dtype)")
        i = index
        if isinstance(i, _core.SymbolicScalar) and i.is_concrete():
            i = int(i)
        if isinstance(i, bool) or not isinstance(i, int):
            if self.dtype is TASK_ID:
                return None  # task ids carry no data: any element stands for the array's tasks
            raise _err(f"pl.array.{op}: the index {i!r} is known only when the program runs; an array of "
                       f"{self.dtype!r} is read and written while the program is traced here",
                       "index it with an int or the index of a pl.unroll / pl.range(..., init_values=) loop of "
                       "int bounds")
        if not -len(self._values) <= i < len(self._values):
            raise _err(f"pl.array.{op}: index {i} is out of range for an array of {len(self._values)}")
        return i

    def __getitem__(self, index: Any) -> Any:
        return get_element(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        updated = update_element(self, index, value)
        self._values = updated._values

    def __len__(self) -> int:
        if self._values is None:
            raise TypeError("an annotation-only pl.Array has no length")
        return len(self._values)

    def __repr__(self) -> str:
        if self._values is None:
            return f"pl.Array[{self.extent!r}, {self.dtype!r}]"
        return f"pl.array({self._values!r}, dtype={self.dtype!r})"


def array_create(extent: int, dtype: Any) -> Array:
    """``pl.array.create(extent, dtype)``: an array of `extent` elements of an integer dtype,
    BOOL or ``pl.TASK_ID``, zero-filled (task ids: the invalid id, "no producer")."""
    if isinstance(extent, bool) or not isinstance(extent, int) or extent <= 0:
        raise _err(f"pl.array.create: extent must be a positive int, got {extent!r}")
    if dtype is TASK_ID:
        return Array(extent, dtype, [None] * extent)
    if not _is_int_dtype(dtype):
        raise _err(f"pl.array.create: dtype must be an integer dtype, pl.BOOL or pl.TASK_ID, got {dtype!r}")
    return Array(extent, dtype, [0] * extent)


def get_element(array: Array, index: Any) -> Any:
    """``pl.array.get_element(arr, i)`` (``arr[i]``)."""
    if not isinstance(array, Array):
        raise _err(f"pl.array.get_element takes a pl.array, got {array!r}")
    i = array._index("get_element", index)
    if i is None:  # a task-id array at a run-time index: stands for any of its tasks
        return TaskIdValue("array element")
    value = array._values[i]  # type: ignore[index]
    if array.dtype is TASK_ID and value is None:
        return TaskIdValue(invalid=True)
    return value


def update_element(array: Array, index: Any, value: Any) -> Array:
    """``pl.array.update_element(arr, i, v)``: a new array with element `i` set to `v`
    (``arr[i] = v`` rebinds `arr` to it)."""
    if not isinstance(array, Array):
        raise _err(f"pl.array.update_element takes a pl.array, got {array!r}")
    i = array._index("update_element", index)
    if array.dtype is TASK_ID:
        if value is not None and not isinstance(value, TaskIdValue):
            raise _err(f"pl.array: an array of pl.TASK_ID holds task ids (pl.submit's second result), got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, (int, _core.SymbolicScalar)):
        raise _err(f"pl.array: an array of {array.dtype!r} holds integer scalars, got {value!r}")
    values = list(array._values)  # type: ignore[arg-type]
    if i is not None:
        values[i] = value
    return Array(array.extent, array.dtype, values)


# --- scopes and submit -------------------------------------------------------------------------------------


class ScopeMode(enum.Enum):
    """Dependency-tracking mode of a runtime scope: ``AUTO`` (derived from the data each task
    touches) or ``MANUAL`` (upstream: declared with ``pl.submit(..., deps=[...])``). The runtime
    here always derives order from the data (see the module docstring)."""

    AUTO = 0
    MANUAL = 1


def _scope_stack() -> List[ScopeMode]:
    if not hasattr(_local, "scopes"):
        _local.scopes = []
    return _local.scopes


class scope:
    """``with pl.scope(mode=pl.ScopeMode.AUTO | MANUAL):`` a runtime scope region (upstream: a
    tuning boundary of dependency tracking and ring memory, never a correctness requirement).
    Here tasks are ordered by their data in every mode; upstream's nesting rules are checked."""

    def __init__(self, mode: ScopeMode = ScopeMode.AUTO) -> None:
        if not isinstance(mode, ScopeMode):
            raise _err(f"pl.scope: mode must be a pl.ScopeMode, got {mode!r}")
        self.mode = mode

    def __enter__(self) -> "scope":
        stack = _scope_stack()
        if ScopeMode.MANUAL in stack:
            what = "a manual scope" if self.mode is ScopeMode.MANUAL else "an AUTO scope"
            raise _err(f"{what} cannot be nested inside a manual scope (upstream's runtime forbids it)")
        stack.append(self.mode)
        return self

    def __exit__(self, *exc: object) -> bool:
        _scope_stack().pop()
        return False


class manual_scope(scope):
    """``with pl.manual_scope():`` = ``pl.scope(mode=pl.ScopeMode.MANUAL)``: upstream turns off
    data-derived dependency tracking and the program names every edge with ``pl.submit(...,
    deps=[...])``. Here the runtime keeps ordering the tasks by their data (the declared edges
    are checked, and implied), so a program whose edges are complete gives upstream's result."""

    def __init__(self) -> None:
        super().__init__(ScopeMode.MANUAL)


def _submit_call(op: str, kernel: Any, args: Sequence[Any], kwargs: Dict[str, Any], deps: Any,
                 dumps: Any, predicate: Any) -> None:
    if not isinstance(kernel, KernelFunction) or kernel.inline:
        raise _err(f"{op} submits an in-core function of the program (pl.{op}(self.kernel, *args, ...)), got "
                   f"{kernel!r}")
    _check_deps(f"pl.{op}", deps)
    if predicate is not None:
        raise _err(f"pl.{op}: predicate= (a dispatch-time condition the chip's scheduler evaluates) is not "
                   "supported here", "compute the condition and branch on it with `if` in the orchestration")
    if dumps is not None and not isinstance(dumps, (list, tuple)):
        raise _err(f"pl.{op}: dumps must be a list of the submitted tensor arguments, got {dumps!r}")
    current_trace(op)


def submit(kernel: Any, *args: Any, deps: Any = None, dumps: Any = None, allow_early_resolve: bool = False,
           predicate: Any = None, **kwargs: Any) -> Any:
    """``out, tid = pl.submit(self.kernel, *args, deps=[...])``: calls the in-core function exactly
    as ``self.kernel(*args)`` does and returns its result and a task id (``(a, b), tid`` for a
    function returning two values). ``deps`` (task ids, arrays of them, None) are checked; the
    runtime orders the task after the ones whose data it touches. ``dumps=`` and
    ``allow_early_resolve=`` are accepted (a dump selection and a scheduling hint)."""
    _submit_call("submit", kernel, args, kwargs, deps, dumps, predicate)
    result = kernel(*args, **kwargs)
    return result, TaskIdValue(getattr(kernel, "__name__", "task"))


def spmd_submit(kernel: Any, *args: Any, core_num: Any = None, sync_start: bool = False, deps: Any = None,
                dumps: Any = None, allow_early_resolve: bool = False, predicate: Any = None, **kwargs: Any) -> Any:
    """``out, tid = pl.spmd_submit(self.kernel, *args, core_num=N, deps=[...])``: the kernel as
    `N` blocks (as ``with pl.spmd(N): self.kernel(*args)``) and one task id for the launch."""
    _submit_call("spmd_submit", kernel, args, kwargs, deps, dumps, predicate)
    if core_num is None:
        raise _err("pl.spmd_submit: core_num= (the block count) is required")
    with _spmd(core_num, sync_start=sync_start):
        result = kernel(*args, **kwargs)
    return result, TaskIdValue(getattr(kernel, "__name__", "spmd task"))


def task_dummy(*, deps: Sequence[Any]) -> TaskIdValue:
    """``pl.system.task_dummy(deps=[...])``: a task id ready once every dep is (a barrier to name
    in later deps instead of all of them)."""
    _check_deps("pl.system.task_dummy", deps)
    return TaskIdValue("dummy")


def task_invalid() -> TaskIdValue:
    """``pl.system.task_invalid()``: the "no producer" task id (a dep on it waits for nothing)."""
    return TaskIdValue(invalid=True)


def no_dep(tensor: Any) -> Any:
    """``pl.no_dep(t)``: upstream's per-argument opt-out of dependency tracking (the caller asserts
    no conflict). Returns `t`: the runtime here still orders by the data, which gives the same
    result when the assertion holds."""
    return tensor


def dump_tag(tensor: Any) -> Any:
    """``pl.dump_tag(t)``: marks `t` for upstream's selective tensor dump; returns `t` (the dump
    pipeline is the chip runtime's)."""
    return tensor
