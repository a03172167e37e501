"""Worker-resident memory of ``pypto.runtime``'s workers (hw-native-sys's ``Worker`` base):
``DeviceTensor``, the memory table every worker keeps (``malloc`` / ``free`` / ``copy_to`` /
``copy_from``, ``alloc_tensor`` / ``free_tensor``, released by ``close()``) and
``RegistrationHandle``. ``ChipWorker`` (compat/runtime_worker.py) and ``DistributedWorker``
(``_host.py``) build on it.

"Device" memory is host memory here: a ChipWorker's block is memory of this process, a
DistributedWorker's a /dev/shm segment every rank process maps (``pypto.dist.heap``), so a
resident tensor is the same bytes for the caller and for every rank, with no copy per dispatch.
A ``data_ptr`` is an address in the worker's own space (never reused by that worker), not a
host pointer: ``copy_to`` / ``copy_from`` move bytes between it and host memory."""

from __future__ import annotations

import ctypes
import os
import sys
import weakref
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core

from ...core._tracing import _format_loc, user_loc
from ...dist import launcher
from ...dist.heap import PAGE, SharedSegment

# Where a worker's first allocation starts; each one advances it by whole pages, so a freed
# tensor's address never comes back (a stale DeviceTensor cannot name a newer allocation).
_DEVICE_BASE = 0x12_0000_0000


def _torch_dtype(dtype: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(dtype, torch.dtype)


def _as_dtype(dtype: Any) -> Any:
    """A torch dtype as it is (upstream's form), anything numpy names as a numpy dtype."""
    if _torch_dtype(dtype):
        return dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"DeviceTensor.dtype must be a torch.dtype (or a numpy dtype), got {dtype!r}") from None


def _itemsize(dtype: Any) -> int:
    return int(dtype.itemsize)  # torch and numpy dtypes both say it


def _check_shape(shape: Sequence[Any], what: str) -> Tuple[int, ...]:
    dims = tuple(shape)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{what} must contain ints, got {dims!r}")
    if not dims:
        raise ValueError(f"{what} must be non-empty")
    if any(d <= 0 for d in dims):
        raise ValueError(f"{what} must be all positive, got {dims}")
    return tuple(int(d) for d in dims)


class Block:
    """A worker's allocation: `nbytes` of memory, seen as bytes."""

    nbytes: int

    def bytes(self) -> np.ndarray:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    @property
    def address(self) -> int:
        return int(self.bytes().__array_interface__["data"][0])


class HostBlock(Block):
    """Memory of this process (a ChipWorker's), 64-byte aligned."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        raw = np.zeros(nbytes + 64, np.uint8)
        start = -raw.__array_interface__["data"][0] % 64
        self._bytes: Optional[np.ndarray] = raw[start:start + nbytes]

    def bytes(self) -> np.ndarray:
        assert self._bytes is not None, "a freed block"
        return self._bytes

    def release(self) -> None:
        self._bytes = None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class SharedBlock(Block):
    """A /dev/shm segment every rank maps (a DistributedWorker's). Its name stays until the ranks
    of a pool have mapped it (the run unlinks it then, as it does the arena and the heap); if
    that pool is replaced (a rank failed), `ready_for` moves the bytes to a fresh segment for the
    new ranks. A finalizer unlinks a name no rank mapped yet when the worker is dropped or the
    process exits."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.seg = SharedSegment.create(nbytes, "resident")
        self.pool: Any = None  # the rank pool that mapped it (None: not mapped yet, the name is linked)
        self._unlink = weakref.finalize(self, _unlink, "/dev/shm/" + self.seg.name)

    def bytes(self) -> np.ndarray:
        return self.seg.array(0, (self.nbytes,), np.dtype(np.uint8))

    def ready_for(self, pool: Any) -> bool:
        """Makes the block mappable by `pool`'s ranks; True when they have yet to map it."""
        if self.pool is None:
            return True
        if self.pool is pool:
            return False
        old = self.seg
        self.seg = SharedSegment.create(self.nbytes, "resident")
        self.bytes()[...] = old.array(0, (self.nbytes,), np.dtype(np.uint8))
        self._unlink.detach()
        self._unlink = weakref.finalize(self, _unlink, "/dev/shm/" + self.seg.name)
        self._drop(old)
        self.pool = None
        return True

    def _drop(self, seg: SharedSegment) -> None:
        seg.unlink()
        seg.close()
        launcher.dropped(seg.name)  # ranks that mapped it unmap it with their next job

    def release(self) -> None:
        self._unlink()
        self._drop(self.seg)


class DeviceTensor:
    """A tensor resident on a worker (``worker.alloc_tensor(shape, dtype, init=...)``): pass it
    as an argument in place of a host tensor; its bytes stay with the worker from dispatch to
    dispatch and are read back with ``worker.copy_from(host.data_ptr(), t.data_ptr, t.nbytes)``.
    ``dtype`` is a torch dtype (or a numpy dtype). Immutable; ``buffer`` is the worker's
    allocation (None for a DeviceTensor made by hand, which no worker dispatches)."""

    __slots__ = ("data_ptr", "shape", "dtype", "buffer")

    data_ptr: int
    shape: Tuple[int, ...]
    dtype: Any
    buffer: Optional[Block]

    def __init__(self, data_ptr: int, shape: Sequence[int], dtype: Any, *, buffer: Optional[Block] = None) -> None:
        if isinstance(data_ptr, bool) or not isinstance(data_ptr, int) or data_ptr <= 0:
            raise ValueError(f"DeviceTensor.data_ptr must be a positive int, got {data_ptr!r}")
        object.__setattr__(self, "data_ptr", data_ptr)
        object.__setattr__(self, "shape", _check_shape(shape, "DeviceTensor.shape"))
        object.__setattr__(self, "dtype", _as_dtype(dtype))
        object.__setattr__(self, "buffer", buffer)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DeviceTensor is immutable (cannot set {name!r})")

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * _itemsize(self.dtype)

    def __repr__(self) -> str:
        return f"DeviceTensor(data_ptr=0x{self.data_ptr:x}, shape={self.shape}, dtype={self.dtype})"


def numpy_view(t: DeviceTensor) -> np.ndarray:
    """The tensor's memory as a numpy array (a torch dtype numpy lacks as its bits: bf16 as
    uint16, the 8-bit floats as uint8, as a torch argument converts)."""
    assert t.buffer is not None
    raw = t.buffer.bytes()[:t.nbytes]
    if _torch_dtype(t.dtype):
        import torch  # noqa: PLC0415 - a torch dtype: torch is loaded

        try:
            dt = torch.empty(0, dtype=t.dtype).numpy().dtype
        except TypeError:  # bf16, fp8: their bits
            dt = np.dtype({1: np.uint8, 2: np.uint16}.get(_itemsize(t.dtype), np.uint8))
        return raw.view(dt).reshape(t.shape)
    return raw.view(t.dtype).reshape(t.shape)


def caller_view(t: DeviceTensor) -> Any:
    """The tensor's memory as what a caller passes: a torch tensor for a torch dtype (bf16
    included), else a numpy array."""
    if _torch_dtype(t.dtype):
        import torch  # noqa: PLC0415

        assert t.buffer is not None
        return torch.from_numpy(t.buffer.bytes()[:t.nbytes]).view(t.dtype).view(t.shape)
    return numpy_view(t)


class Worker:
    """The memory and registration half of a runtime worker. A subclass gives its readiness
    (`_require_ready`), which worker ids it has (`_check_worker_id`), its memory (`_new_block`)
    and its dispatch (`run`, `register`); its ``close()`` calls `_close_owned_tensors`."""

    def __init__(self) -> None:
        self._device_buffers: Dict[Tuple[int, int], Block] = {}  # (worker_id, data_ptr) -> allocation
        self._owned_tensors: Dict[Tuple[int, int], DeviceTensor] = {}  # alloc_tensor's, freed by close()
        self._next_ptr = _DEVICE_BASE

    # --- hooks ---------------------------------------------------------------------------------
    def _require_ready(self, op: str) -> None:
        pass

    def _check_worker_id(self, worker_id: int, op: str) -> None:
        if worker_id != 0:
            raise ValueError(f"{type(self).__name__}.{op}() only supports worker_id=0, got {worker_id}")

    def _new_block(self, nbytes: int) -> Block:
        return HostBlock(nbytes)

    def run(self, compiled: Any, *args: Any, config: Any = None) -> Any:
        raise NotImplementedError

    def register(self, compiled: Any) -> "RegistrationHandle":
        raise NotImplementedError

    # --- raw memory ----------------------------------------------------------------------------
    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int:
        """`nbytes` of the worker's memory (zeroed); an address of its space. Pair with `free`."""
        self._require_ready("malloc")
        self._check_worker_id(worker_id, "malloc")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"nbytes must be a positive int, got {nbytes!r}")
        ptr = self._next_ptr
        self._next_ptr += -(-nbytes // PAGE) * PAGE
        self._device_buffers[(worker_id, ptr)] = self._new_block(nbytes)
        return ptr

    def _block(self, ptr: int, worker_id: int, op: str) -> Block:
        self._check_worker_id(worker_id, op)
        block = self._device_buffers.get((worker_id, ptr))
        if block is None:
            raise ValueError(f"{type(self).__name__}.{op}() requires an allocation base returned by this worker's "
                             f"malloc(..., worker_id={worker_id}); got 0x{ptr:x} (freed, interior, or another "
                             "worker's)")
        return block

    def free(self, ptr: int, *, worker_id: int = 0) -> None:
        self._require_ready("free")
        self._block(ptr, worker_id, "free").release()
        del self._device_buffers[(worker_id, ptr)]

    def _span(self, ptr: int, nbytes: int, worker_id: int, op: str) -> int:
        self._require_ready(op)
        block = self._block(ptr, worker_id, op)
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 < nbytes <= block.nbytes:
            raise ValueError(f"{type(self).__name__}.{op}(): nbytes must be a positive int of at most the "
                             f"allocation's {block.nbytes}, got {nbytes!r}")
        return block.address

    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        """Host to worker: `nbytes` from host address `src_host_ptr` (``t.data_ptr()``)."""
        ctypes.memmove(self._span(dst_dev_ptr, nbytes, worker_id, "copy_to"), src_host_ptr, nbytes)

    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        """Worker to host: `nbytes` into host address `dst_host_ptr`."""
        ctypes.memmove(dst_host_ptr, self._span(src_dev_ptr, nbytes, worker_id, "copy_from"), nbytes)

    # --- DeviceTensors -------------------------------------------------------------------------
    def alloc_tensor(self, shape: Sequence[int], dtype: Any, *, init: Any = None, worker_id: int = 0) -> DeviceTensor:
        """A tensor resident on this worker (zeroed, or a copy of `init`: a torch tensor or numpy
        array of exactly this shape and dtype). ``close()`` frees it if `free_tensor` did not."""
        self._require_ready("alloc_tensor")
        dims = _check_shape(shape, "shape")
        dt = _as_dtype(dtype)
        if init is not None and (tuple(getattr(init, "shape", ())) != dims or getattr(init, "dtype", None) != dt):
            raise ValueError(f"init must have shape={dims} dtype={dt}, got shape={tuple(getattr(init, 'shape', ()))} "
                             f"dtype={getattr(init, 'dtype', None)}")
        nbytes = int(np.prod(dims, dtype=np.int64)) * _itemsize(dt)
        ptr = self.malloc(nbytes, worker_id=worker_id)
        try:
            t = DeviceTensor(ptr, dims, dt, buffer=self._device_buffers[(worker_id, ptr)])
            if init is not None:  # (its dtype is dt: a torch tensor for a torch dtype)
                if _torch_dtype(dt):
                    caller_view(t).copy_(init.detach())
                else:
                    numpy_view(t)[...] = init
        except BaseException:
            self.free(ptr, worker_id=worker_id)
            raise
        self._owned_tensors[(worker_id, ptr)] = t
        return t

    def free_tensor(self, t: DeviceTensor, *, worker_id: int = 0) -> None:
        """Frees a tensor of `alloc_tensor` (a second free of it does nothing)."""
        key = (worker_id, t.data_ptr)
        if self._owned_tensors.get(key) is not t:
            owners = sorted(w for (w, p), o in self._owned_tensors.items() if o is t)
            if owners:
                raise ValueError(f"free_tensor(..., worker_id={worker_id}) of a tensor allocated on worker(s) "
                                 f"{owners}: pass the same worker_id")
            return
        self.free(t.data_ptr, worker_id=worker_id)
        del self._owned_tensors[key]

    def _close_owned_tensors(self) -> None:
        """Frees every allocation left (called by a subclass's close())."""
        for block in self._device_buffers.values():
            block.release()
        self._device_buffers.clear()
        self._owned_tensors.clear()

    def _resident(self, t: DeviceTensor, label: str) -> Block:
        """The allocation of a DeviceTensor argument, or an error saying why it cannot run here."""
        self._require_ready("run")
        name = type(self).__name__
        if t.buffer is None:
            raise TypeError(f"{label}: a DeviceTensor made by hand has no memory here; allocate it with "
                            f"{name}.alloc_tensor()")
        if not any(o is t for o in self._owned_tensors.values()):
            raise _core.UserError(f"{label}: {t!r} is not a live tensor of this {name}: it was freed "
                                  f"(free_tensor, or the worker was closed) or another worker allocated it"
                                  + _format_loc(user_loc())
                                  + f"\nhint: allocate it with this {name}.alloc_tensor() and pass it only "
                                  "until free_tensor()")
        return t.buffer


class RegistrationHandle:
    """``worker.register(compiled)``: calling it dispatches that program on that worker
    (``handle(*args)``, as ``worker.run(compiled, *args)``). ``unregister()`` (or leaving it as a
    context manager) closes the handle; the worker's ``close()`` closes every handle. A closed
    handle refuses calls with a RuntimeError."""

    __test__ = False

    def __init__(self, worker: Worker, compiled: Any, cid: Any) -> None:
        self._worker, self._compiled, self._cid = worker, compiled, cid
        self._closed = False

    @property
    def cid(self) -> Any:
        return self._cid

    @property
    def compiled(self) -> Any:
        return self._compiled

    @property
    def closed(self) -> bool:
        return self._closed

    def __call__(self, *args: Any, config: Any = None) -> Any:
        if self._closed:
            raise RuntimeError("RegistrationHandle has been unregistered (or its parent Worker was closed). "
                               "Re-register via worker.register(compiled) to get a fresh handle.")
        return self._worker.run(self._compiled, *args, config=config)

    def unregister(self) -> None:
        self._closed = True

    def _mark_closed(self) -> None:
        self._closed = True

    def __enter__(self) -> "RegistrationHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unregister()
