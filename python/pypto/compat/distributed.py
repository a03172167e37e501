"""``pypto.distributed``: CANN PyPTO's shmem ops, on the ranks of one host.

A rank is a process of the program's own (CANN's tests start them with ``multiprocessing`` and
join a torch.distributed group over ``hccl``, which is gloo here: ``compat/hccl.py``). A shmem
tensor is a window every member of a group maps: ``create_shmem_tensor(group, n_pes, dtype,
shape)`` in a jit function adds parameters the caller does not pass (its data, [n_pes, *shape],
and its signals, [n_pes, n_pes, *shape[:-1]] int32), whose memory is a shared-memory segment the
group's members agree on at the function's first call (through the torch.distributed group).
The ops are the language's: a put is a store into a peer's copy (``ADD``: added atomically), a
get a view of a copy, and a signal or a wait a fence of one instruction per row of the region
(see docs/distributed.md, "CANN PyPTO's shmem ops").

Deliberate differences: signals count per row of the region (CANN: per vec tile), so a signal or
wait region spans whole rows (the last dim); ``pred`` tokens are accepted and need not order
anything (signals run in program order with every other launch); each ``create_shmem_tensor``
starts from zero (it clears this rank's copy and its signals, then waits for the group), as a
fresh window on the NPU does; ``shmem_barrier_all`` waits for at least the group size (CANN: equal
to it, which a fast rank's next barrier can overshoot)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import pypto._core as _core

from ..core import ops as _ops
from ..core._dtypes import DT_BF16, DT_FP16, DT_FP32, DT_INT32, to_numpy_dtype
from ..core._enums import AtomicType, OpType
from ..core._tracing import _format_loc, bind_param, current_recorder, user_loc
from ..core.tensor import Tensor
from ..dist.heap import SharedSegment
from . import hccl

__all__ = ["ShmemTensor", "AtomicType", "create_shmem_tensor", "create_shmem_signal", "shmem_view", "shmem_put",
           "shmem_get", "shmem_signal", "shmem_wait_until", "shmem_barrier_all", "shmem_clear_data",
           "shmem_clear_signal", "my_symbolic_pe"]


def _loc() -> str:
    return _format_loc(user_loc())


# --- the group and its shared memory -------------------------------------------------------------


def _group(name: Any, what: str) -> Tuple[Any, int, int]:
    """(torch ProcessGroup, this rank in it, its size) of an HCCL group name."""
    if not isinstance(name, str) or not 1 <= len(name) < 128:
        raise _core.UserError(f"pypto.distributed.{what}: the group name must be a string of 1 to 127 characters, "
                              f"got {name!r}" + _loc())
    pg = hccl.group_of(name)
    if pg is None:
        raise _core.UserError(f"pypto.distributed.{what}: {name!r} is not a communication group of this process"
                              + _loc() + "\nhint: the name comes from group._get_backend(torch.device('npu'))"
                              ".get_hccl_comm_name(rank) after dist.init_process_group(backend='hccl')")
    import torch.distributed as dist  # noqa: PLC0415 - only a program with a group gets here

    return pg, dist.get_rank(group=pg), dist.get_world_size(group=pg)


_segments: Dict[Tuple[str, int], SharedSegment] = {}
_serial: Dict[str, int] = {}
_names = itertools.count()  # parameter names (unique in a function that makes several)


def _shared(group: str, serial: int, nbytes: int, what: str) -> SharedSegment:
    """The segment of a group's `serial`-th shmem allocation: made by the group's first rank and
    mapped by the others at the first call (every member traces and calls the same functions in the
    same order, so the serials agree); unlinked once all have mapped it. Members that disagree on
    the allocation (another shape or dtype) get a UserError naming each one's, on every member."""
    key = (group, serial)
    seg = _segments.get(key)
    if seg is not None:
        return seg
    import torch.distributed as dist  # noqa: PLC0415

    pg, me, size = _group(group, "create_shmem_tensor")
    first = dist.get_process_group_ranks(pg)[0]
    views: List[Any] = [None] * size
    dist.all_gather_object(views, (nbytes, what), group=pg)
    if any(v != views[0] for v in views):
        raise _core.UserError(f"pypto.distributed: the members of group {group!r} disagree on its shmem allocation "
                              f"#{serial}: " + "; ".join(f"rank {r}: {v[1]}" for r, v in enumerate(views))
                              + "\nhint: every member must create the same shmem tensors, in the same order")
    name: List[Any] = [None]
    if me == 0:
        seg = SharedSegment.create(nbytes, f"shmem{serial}")
        name[0] = seg.name
    dist.broadcast_object_list(name, src=first, group=pg)
    if seg is None:
        seg = SharedSegment(str(name[0]), max(nbytes, 4096), create=False)
    # Every member has mapped it (an object all-gather: dist.barrier asks torch for the accelerator,
    # which the NPU stand-in names without one).
    dist.all_gather_object([None] * dist.get_world_size(group=pg), True, group=pg)
    if me == 0:
        seg.unlink()
    _segments[key] = seg
    return seg


@dataclass
class _Alloc:
    group: str
    n_pes: int
    me: int
    shape: List[int]
    data: Optional[Tensor]  # every PE's copy, merged into dim 0: [n_pes * shape[0], *shape[1:]]
    signal: Tensor          # [n_pes (whose copy), n_pes (src_pe), *shape[:-1]] int32
    barrier: Tensor         # [n_pes, n_pes, 1] int32: create's rendezvous


class ShmemTensor:
    """A shmem tensor or a view of one (``create_shmem_tensor``, ``shmem_view``): ``data`` is this
    rank's copy of the region, ``signal`` its signals; ``group`` and ``worldSize`` as CANN's."""

    def __init__(self, alloc: _Alloc, offsets: List[Any], shape: List[Any], valid: Optional[List[Any]] = None) -> None:
        self._alloc, self._offsets, self._shape, self._valid = alloc, offsets, shape, valid
        self.group, self.worldSize = alloc.group, alloc.n_pes

    @property
    def data(self) -> Optional[Tensor]:
        return None if self._alloc.data is None else _copy(self, self._alloc.me)

    @property
    def signal(self) -> Tensor:
        a = self._alloc
        return _ops.view(a.signal, [1, a.n_pes] + list(a.shape[:-1]), [a.me, 0] + [0] * (len(a.shape) - 1))

    def __repr__(self) -> str:
        return f"ShmemTensor(group={self.group!r}, worldSize={self.worldSize}, shape={self._shape})"


def _copy(t: ShmemTensor, pe: Any, valid: Optional[List[Any]] = None) -> Tensor:
    """PE `pe`'s copy of the region of `t`."""
    a = t._alloc
    if a.data is None:
        raise _core.UserError("pypto.distributed: a shmem signal (create_shmem_signal) has no data" + _loc())
    offsets = [pe * a.shape[0] + t._offsets[0]] + list(t._offsets[1:])
    v = valid if valid is not None else t._valid
    if v is None:
        return _ops.view(a.data, list(t._shape), offsets)
    return _ops.view(a.data, list(t._shape), offsets, valid_shape=list(v))


def _cells(op: str, t: ShmemTensor, pe: Any, src_pe: Any) -> Tensor:
    """The signal cells of the region of `t` about `src_pe`'s copy, in PE `pe`'s signals: one per
    row of the region."""
    a = t._alloc
    if a.data is None:  # a signal tensor: one cell per (pe, src_pe)
        return _ops.view(a.signal, [1, 1, 1], [pe, src_pe, 0])
    if t._offsets[-1] != 0 or t._shape[-1] != a.shape[-1]:
        raise _core.UserError(f"pypto.distributed.{op}: a signal region spans whole rows here (its last dim "
                              f"{t._shape[-1]} at offset {t._offsets[-1]} of {a.shape[-1]})" + _loc()
                              + "\nhint: signal and wait on regions [rows, the whole last dim]")
    return _ops.view(a.signal, [1, 1] + list(t._shape[:-1]), [pe, src_pe] + list(t._offsets[:-1]))


def _record(op: str, cells: Tensor, attrs: Dict[str, Any]) -> None:
    current_recorder(f"pypto.distributed ({op})").op(op, [cells._id], attrs, user_loc())


def _token() -> Tensor:
    """What an op returns for ``pred=`` lists: an INT32 [1, 1] tensor (its values mean nothing)."""
    return _ops.full([1, 1], 0, DT_INT32)


def _int(op: str, name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise _core.UserError(f"pypto.distributed.{op}: {name} must be an int, got {v!r}" + _loc())
    return int(v)


def _rendezvous(a: _Alloc) -> None:
    """Every member of the group gets here before any goes on (create's own signals)."""
    for pe in range(a.n_pes):
        _record("notify", _ops.view(a.barrier, [1, 1, 1], [pe, a.me, 0]), {"value": 1, "op": 1})
    _record("wait", _ops.view(a.barrier, [1, a.n_pes, 1], [a.me, 0, 0]),
            {"expected": 1, "cmp": int(OpType.GE), "consume": 1})


# --- the ops -------------------------------------------------------------------------------------


def _create(group_name: str, n_pes: int, dtype: Any, shape: Optional[List[int]], what: str) -> ShmemTensor:
    _, me, size = _group(group_name, what)
    n_pes = _int(what, "n_pes", n_pes)
    if n_pes != size:
        raise _core.UserError(f"pypto.distributed.{what}: n_pes {n_pes} differs from the size {size} of group "
                              f"{group_name!r}" + _loc())
    if shape is not None:
        if not 2 <= len(shape) <= 4 or not all(isinstance(d, int) and d > 0 for d in shape):
            raise _core.UserError(f"pypto.distributed.{what}: a shmem tensor has 2 to 4 positive static dims, got "
                                  f"{list(shape)}" + _loc())
    serial = _serial[group_name] = _serial.get(group_name, -1) + 1
    dshape = list(shape) if shape is not None else [1, 8]
    npdt = np.dtype(np.uint16) if dtype in (DT_BF16,) else np.dtype(to_numpy_dtype(dtype if shape else DT_INT32))
    data_bytes = n_pes * int(np.prod(dshape)) * npdt.itemsize if shape is not None else 0
    sig_shape = [n_pes, n_pes] + (dshape[:-1] if shape is not None else [1])
    sig_bytes = int(np.prod(sig_shape)) * 4
    bar_bytes = n_pes * n_pes * 4
    off_sig = -(-data_bytes // 64) * 64
    off_bar = off_sig + -(-sig_bytes // 64) * 64
    total = off_bar + bar_bytes

    described = f"{what}({n_pes}, {dtype}, {dshape if shape is not None else ''})"

    def part(offset: int, shp: List[int], dt: np.dtype) -> Callable[[], np.ndarray]:
        return lambda: _shared(group_name, serial, total, described).array(offset, shp, dt)

    rec = current_recorder(f"pypto.distributed.{what}")
    tag = f"shmem{next(_names)}"
    data = None
    if shape is not None:
        root = Tensor(_rec=rec, _id=bind_param(f"{tag}_data", [n_pes] + dshape, dtype,
                                               part(0, [n_pes] + dshape, npdt)))
        data = Tensor(_rec=rec, _id=rec.reshape(root._id, [n_pes * dshape[0]] + dshape[1:], user_loc(), True))
    signal = Tensor(_rec=rec, _id=bind_param(f"{tag}_signal", sig_shape, DT_INT32,
                                             part(off_sig, sig_shape, np.dtype(np.int32))))
    barrier = Tensor(_rec=rec, _id=bind_param(f"{tag}_barrier", [n_pes, n_pes, 1], DT_INT32,
                                              part(off_bar, [n_pes, n_pes, 1], np.dtype(np.int32))))
    a = _Alloc(group_name, n_pes, me, dshape, data, signal, barrier)
    # A fresh window: this rank's copy and its signals zero, and no peer writes before they are.
    if data is not None:
        _ops.assemble(_ops.full(dshape, 0, dtype), [me * dshape[0]] + [0] * (len(dshape) - 1), data)
    _ops.assemble(_ops.full([1] + sig_shape[1:], 0, DT_INT32), [me] + [0] * (len(sig_shape) - 1), signal)
    _rendezvous(a)
    return ShmemTensor(a, [0] * len(dshape), dshape)


def create_shmem_tensor(group_name: str, n_pes: int, dtype: Any, shape: List[int]) -> ShmemTensor:
    """A window of `shape` and `dtype` on every PE of the group, with its signals, zeroed."""
    return _create(group_name, n_pes, dtype, list(shape), "create_shmem_tensor")


def create_shmem_signal(group_name: str, n_pes: int) -> ShmemTensor:
    """Signals only (for ``shmem_barrier_all``)."""
    return _create(group_name, n_pes, DT_INT32, None, "create_shmem_signal")


def _check(what: str, t: Any) -> ShmemTensor:
    if not isinstance(t, ShmemTensor):
        raise _core.UserError(f"pypto.distributed.{what} takes a ShmemTensor (create_shmem_tensor), got "
                              f"{type(t).__name__}" + _loc())
    return t


def shmem_view(src: ShmemTensor, shape: List[int], offsets: List[Any], *,
               valid_shape: Optional[List[Any]] = None) -> ShmemTensor:
    """The region [offsets, offsets + shape) of `src`, data and signals."""
    src = _check("shmem_view", src)
    if src._alloc.data is None:
        raise _core.UserError("pypto.distributed.shmem_view: a shmem signal (create_shmem_signal) has no data to view"
                              + _loc())
    if len(shape) != len(src._shape) or len(offsets) != len(src._shape):
        raise _core.UserError(f"pypto.distributed.shmem_view: shape {list(shape)} and offsets {list(offsets)} need "
                              f"{len(src._shape)} entries" + _loc())
    return ShmemTensor(src._alloc, [a + b for a, b in zip(src._offsets, offsets)], list(shape),
                       list(valid_shape) if valid_shape is not None else None)


def _region(t: ShmemTensor, shape: Optional[List[int]], offsets: Optional[List[Any]],
            valid_shape: Optional[List[Any]] = None) -> ShmemTensor:
    if shape is not None and offsets is not None:
        return shmem_view(t, shape, offsets, valid_shape=valid_shape)
    if valid_shape is not None:
        return ShmemTensor(t._alloc, t._offsets, t._shape, list(valid_shape))
    return t


def shmem_put(src: Tensor, offsets: List[Any], dst: ShmemTensor, dst_pe: Any, *, put_op: AtomicType = AtomicType.SET,
              pred: Optional[List[Tensor]] = None) -> Tensor:
    """Writes `src` into PE `dst_pe`'s copy of `dst` at `offsets` (``ADD``: adds, atomically). No
    signal: follow it with ``shmem_signal``."""
    dst = _check("shmem_put", dst)
    a = dst._alloc
    if not isinstance(src, Tensor) or not src.is_traced:
        raise _core.UserError(f"pypto.distributed.shmem_put: src must be a tensor of the function, got {src!r}" + _loc())
    if put_op not in (AtomicType.SET, AtomicType.ADD):
        raise _core.UserError(f"pypto.distributed.shmem_put: put_op must be a pypto.AtomicType, got {put_op!r}"
                              + _loc())
    region = shmem_view(dst, list(src.shape), list(offsets))
    dtype = a.data.dtype if a.data is not None else None
    if src.dtype != dtype:
        if put_op is AtomicType.ADD and dtype == DT_FP32 and src.dtype in (DT_FP16, DT_BF16):
            src = _ops.cast(src, DT_FP32)
        else:
            raise _core.UserError(f"pypto.distributed.shmem_put: src {src!r} and the shmem data ({dtype}) differ in "
                                  "dtype" + _loc())
    window = _copy(region, dst_pe)
    rec = current_recorder("pypto.distributed.shmem_put")
    rec.assemble(src._id, [0] * len(src.shape), window._id, user_loc(), put_op is AtomicType.ADD)
    return _token()


def shmem_get(src: ShmemTensor, src_pe: Any, shape: Optional[List[int]] = None, offsets: Optional[List[Any]] = None,
              *, valid_shape: Optional[List[Any]] = None, pred: Optional[List[Tensor]] = None) -> Tensor:
    """PE `src_pe`'s copy of the region (read when the program gets there: after a wait)."""
    region = _region(_check("shmem_get", src), shape, offsets, valid_shape)
    return _copy(region, src_pe)


def shmem_signal(src: ShmemTensor, src_pe: Any, signal: int, shape: Optional[List[int]] = None,
                 offsets: Optional[List[Any]] = None, *, target_pe: Any, sig_op: AtomicType = AtomicType.SET,
                 pred: Optional[List[Tensor]] = None) -> Tensor:
    """Sets (``SET``) or adds (``ADD``) `signal` in PE `target_pe`'s signals of the region about
    `src_pe`'s copy (``target_pe=-1``: every PE, this one included), after this rank's earlier writes."""
    region = _region(_check("shmem_signal", src), shape, offsets)
    a = region._alloc
    value = _int("shmem_signal", "signal", signal)
    if sig_op not in (AtomicType.SET, AtomicType.ADD):
        raise _core.UserError(f"pypto.distributed.shmem_signal: sig_op must be a pypto.AtomicType, got {sig_op!r}"
                              + _loc())
    targets = range(a.n_pes) if isinstance(target_pe, int) and target_pe == -1 else [target_pe]
    for pe in targets:
        _record("notify", _cells("shmem_signal", region, pe, src_pe), {"value": value, "op": int(sig_op)})
    return _token()


def shmem_wait_until(src: ShmemTensor, src_pe: Any, cmp_value: int = 0, shape: Optional[List[int]] = None,
                     offsets: Optional[List[Any]] = None, *, cmp: OpType = OpType.EQ, clear_signal: bool = False,
                     pred: Optional[List[Tensor]] = None) -> Tensor:
    """Sleeps until this PE's signals of the region about `src_pe`'s copy equal `cmp_value`
    (``clear_signal``: then resets them); later reads see what was written before those signals."""
    region = _region(_check("shmem_wait_until", src), shape, offsets)
    if cmp is not OpType.EQ:
        raise _core.UserError(f"pypto.distributed.shmem_wait_until: only cmp=pypto.OpType.EQ is supported (as in "
                              f"CANN PyPTO), got {cmp!r}" + _loc())
    value = _int("shmem_wait_until", "cmp_value", cmp_value)
    _record("wait", _cells("shmem_wait_until", region, region._alloc.me, src_pe),
            {"expected": value, "cmp": int(OpType.EQ), "consume": 1 if clear_signal else 0})
    return _token()


def shmem_barrier_all(src: ShmemTensor, pred: Optional[List[Tensor]] = None) -> Tensor:
    """Every PE of the group reaches this point before any goes on."""
    a = _check("shmem_barrier_all", src)._alloc
    rank = len(a.signal.shape)

    def cell(pe: int) -> Tensor:
        return _ops.view(a.signal, [1] * rank, [pe] + [0] * (rank - 1))

    for pe in range(a.n_pes):
        _record("notify", cell(pe), {"value": 1, "op": int(AtomicType.ADD)})
    _record("wait", cell(a.me), {"expected": a.n_pes, "cmp": int(OpType.GE), "consume": 1})
    return _token()


def shmem_clear_data(src: ShmemTensor, shape: Optional[List[int]] = None, offsets: Optional[List[Any]] = None, *,
                     pred: Optional[List[Tensor]] = None) -> Tensor:
    """Zeroes this PE's copy of the region."""
    region = _region(_check("shmem_clear_data", src), shape, offsets)
    a = region._alloc
    if a.data is None:
        raise _core.UserError("pypto.distributed.shmem_clear_data: a shmem signal has no data" + _loc())
    _ops.assemble(_ops.full(list(region._shape), 0, a.data.dtype), [0] * len(region._shape), _copy(region, a.me))
    return _token()


def shmem_clear_signal(src: ShmemTensor, *, pred: Optional[List[Tensor]] = None) -> Tensor:
    """Zeroes this PE's signals."""
    a = _check("shmem_clear_signal", src)._alloc
    shp = list(a.signal.shape)
    _ops.assemble(_ops.full([1] + shp[1:], 0, DT_INT32), [a.me] + [0] * (len(shp) - 1), a.signal)
    return _token()


def my_symbolic_pe(group_name: str) -> int:
    """This process's rank in the group (a compile-time int here: each rank compiles its own
    program, as for pld.rank)."""
    return _group(group_name, "my_symbolic_pe")[1]


def shmem_store(src: Tensor, offsets: List[Any], dst: ShmemTensor, dst_pe: Any, *,
                put_op: AtomicType = AtomicType.SET, pred: Optional[List[Tensor]] = None) -> Tensor:
    """``pypto.experimental.shmem_store``: shmem_put of an on-chip tile (the same here)."""
    return shmem_put(src, offsets, dst, dst_pe, put_op=put_op, pred=pred)


def shmem_load(src: ShmemTensor, src_pe: Any, shape: Optional[List[int]] = None, offsets: Optional[List[Any]] = None,
               *, pred: Optional[List[Tensor]] = None, valid_shape: Optional[List[Any]] = None) -> Tensor:
    """``pypto.experimental.shmem_load``: shmem_get into an on-chip tile (the same here)."""
    return shmem_get(src, src_pe, shape, offsets, valid_shape=valid_shape, pred=pred)
