"""``@pl.jit.host``: the host orchestrator of a distributed program (seed 002's HOST level).

Its body runs in this process, in plain Python: ``pld.alloc_window_buffer`` lays out the
symmetric heap, ``pld.window`` names a window for a rank, and a call of a ``@pl.jit`` function
with ``device=r`` is recorded as rank r's work. When the body returns, every rank runs its calls
at once, each in its own process (``pypto.dist.launcher``): the caller's arrays are shared with
the ranks through a shared-memory arena (copied in before and back after the run) and the
windows through the heap. A rank that raises, dies or outlives the timeout fails the call with
its rank and message, and stops the others."""

from __future__ import annotations

import ast
import functools
import inspect
import json
import os
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core

from ...core._dtypes import to_numpy_dtype
from ...core._tracing import _format_loc, function_scope, user_loc
from ...dist import launcher
from ...dist.engine import check_hosts, hosts_from_env
from ...dist.heap import SharedSegment, WindowLayout
from ._types import Direction, declared_directions
from ._worker import DeviceTensor, RegistrationHandle, SharedBlock, Worker, numpy_view


class DistributedConfig:
    """``DistributedConfig(device_ids=[0, 1])``: the ranks of a host program (one per device id;
    here each rank is a process of this host). ``timeout`` (seconds, default 60) bounds a run and
    every wait on a signal; ``num_sub_workers`` is accepted for upstream's per-rank sub-worker
    threads (the rank's runtime sizes its own worker pool here)."""

    def __init__(self, device_ids: Optional[Sequence[int]] = None, num_sub_workers: int = 0,
                 timeout: float = 60.0, hosts: Optional[int] = None, in_process: Optional[bool] = None,
                 **fields: Any) -> None:
        ids = list(device_ids) if device_ids is not None else [0]
        if not ids or len(set(ids)) != len(ids) or not all(isinstance(d, int) and d >= 0 for d in ids):
            raise _core.UserError(f"DistributedConfig: device_ids must be distinct non-negative ints, got {ids}")
        if not timeout > 0:
            raise _core.UserError(f"DistributedConfig: timeout must be positive seconds, got {timeout!r}")
        self.device_ids = ids
        self.num_sub_workers = int(num_sub_workers)
        self.timeout = float(timeout)
        # The hosts the ranks span (contiguous blocks of ranks): above 1 they run under MPI, each
        # host with a heap of its own (python/pypto/dist/engine.py; on one machine: a simulated
        # cluster). $PYPTO_DIST_HOSTS gives the default.
        self.hosts = min(hosts_from_env(), len(ids)) if hosts is None else hosts
        check_hosts(len(ids), self.hosts, "DistributedConfig")
        # Every rank a thread of this process (one process: no rank processes, the windows in this
        # process's memory); $PYPTO_DIST_IN_PROCESS=1 gives the default.
        self.in_process = (os.environ.get("PYPTO_DIST_IN_PROCESS", "") == "1" if in_process is None
                           else bool(in_process))
        if self.in_process and self.hosts > 1:
            if hosts is not None:
                raise _core.UserError(f"DistributedConfig: in_process=True runs every rank in this process, on one "
                                      f"host; hosts={hosts} asks for {hosts}")
            self.hosts = 1
        self.fields = fields

    @property
    def world_size(self) -> int:
        return len(self.device_ids)

    def __repr__(self) -> str:
        hosts = f", hosts={self.hosts}" if self.hosts > 1 else (", in_process=True" if self.in_process else "")
        return f"DistributedConfig(device_ids={self.device_ids}, timeout={self.timeout:g}{hosts})"


@dataclass
class WindowBuffer:
    """``pld.alloc_window_buffer(shape, dtype=)``: a window of every rank, in the host program."""

    index: int
    shape: Tuple[int, ...]
    dtype: Any


@dataclass
class HostRun:
    """The state of one run of a host body: the heap layout and each rank's calls."""

    nranks: int
    layout: WindowLayout
    arena_base: int
    arena: SharedSegment
    calls: List[List[launcher.Call]] = field(default_factory=list)
    spans: List[Tuple[int, int]] = field(default_factory=list)  # each caller array's (address, bytes) in the arena
    written: set = field(default_factory=set)  # the caller arrays a rank may write (copied back after the run)
    resident: List[Tuple[int, SharedBlock]] = field(default_factory=list)  # (address here, block) of DeviceTensors
    # HOST SubWorker calls: (callback, its arguments, how many rank calls preceded it)
    callbacks: List[Tuple["HostCallback", Tuple[Any, ...], int]] = field(default_factory=list)

    def arg(self, a: Any, written: bool = True) -> Any:
        if isinstance(a, np.ndarray):
            base = self.arena_base
            ptr = a.__array_interface__["data"][0]
            for at, block in self.resident:  # a worker's DeviceTensor (or a slice of one): the ranks map it
                if at <= ptr < at + block.nbytes:
                    return launcher.SegmentArray(block.seg.name, block.seg.size, ptr - at, tuple(a.shape),
                                                 tuple(a.strides), a.dtype.str)
            if not base <= ptr < base + self.arena.size:
                raise _core.UserError("a rank takes arrays of the host program (its parameters, or slices of them): "
                                      f"an array of shape {a.shape} made in the host body cannot reach the ranks"
                                      + _format_loc(user_loc()))
            if written:
                self.written.update(i for i, (p, n) in enumerate(self.spans) if p <= ptr < p + n)
            return launcher.HostArray(ptr - base, tuple(a.shape), tuple(a.strides), a.dtype.str, written)
        if isinstance(a, WindowBuffer):
            raise _core.UserError("pass a rank pld.window(buffer, shape, dtype=...), not the window buffer itself"
                                  + _format_loc(user_loc()))
        if hasattr(a, "__array__") and not isinstance(a, (int, float)):
            raise _core.UserError(f"a rank takes arrays of the host program, got {type(a).__name__}"
                                  + _format_loc(user_loc()))
        return a


_active = threading.local()


def active() -> Optional[HostRun]:
    """The host body being run in this thread, if any."""
    return getattr(_active, "run", None)


def dispatch(fn: Any, args: Sequence[Any], kwargs: Dict[str, Any], device: Any) -> Any:
    """A call of `fn` with ``device=r`` in a host body: rank r's next call. Returns the arguments
    of its ``pl.Out`` / ``pl.InOut`` parameters (what the call writes, as upstream's call returns
    them; their contents are the ranks' once the host body has returned)."""
    run = active()
    name = getattr(fn, "__name__", repr(fn))
    if run is None:
        raise _core.UserError(f"{name}(..., device={device!r}): device= dispatches to a rank, which only a "
                              "@pl.jit.host orchestrator does" + _format_loc(user_loc()))
    if device is None:
        # A call with no device= (upstream: a comm-less dispatch, placed round-robin): rank 0, so the
        # host body's calls keep their order (calls on different ranks here run at once, unordered).
        device = 0
    if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < run.nranks:
        raise _core.UserError(f"{name}(..., device={device!r}): the rank must be an int in [0, {run.nranks})"
                              + _format_loc(user_loc()))
    module, qualname = launcher.function_ref(fn)
    writes = _writes(fn, args, kwargs)
    run.calls[device].append(launcher.Call(module, qualname, [run.arg(a, writes(i, None)) for i, a in enumerate(args)],
                                           {k: run.arg(v, writes(None, k)) for k, v in kwargs.items()}))
    directions = declared_directions(getattr(fn, "fn", fn))
    try:
        bound = inspect.signature(getattr(fn, "fn", fn)).bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None
    outs = [v for n, v in bound.items() if directions.get(n) in (Direction.Out, Direction.InOut)]
    return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)


def _writes(fn: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Callable[[Optional[int], Optional[str]], bool]:
    """Whether the argument at a position (or keyword) may be written by `fn`: a parameter of a
    @pl.jit function whose direction is In is read only; anything else may be written."""
    directions = getattr(fn, "directions", None)
    sig = getattr(fn, "sig", None)
    if directions is None or sig is None:
        return lambda i, k: True
    names = list(sig.parameters)

    def writes(i: Optional[int], k: Optional[str]) -> bool:
        name = names[i] if i is not None and i < len(names) else k
        return name is None or directions.get(name, Direction.In) is not Direction.In

    return writes


def world_size() -> Optional[int]:
    run = active()
    return run.nranks if run is not None else None


def alloc_window_buffer(shape: Sequence[Any], dtype: Any) -> WindowBuffer:
    run = active()
    if run is None:
        raise _core.UserError("pld.alloc_window_buffer allocates a window of every rank: call it in a @pl.jit.host "
                              "orchestrator" + _format_loc(user_loc()))
    dims = list(shape)
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise _core.UserError(f"pld.alloc_window_buffer: shape must be positive ints, got {dims}"
                              + _format_loc(user_loc()))
    index = run.layout.allocate(dims, _numpy_dtype(dtype), bf16="BF16" in str(dtype).upper())
    return WindowBuffer(index, tuple(dims), dtype)


def window(buf: Any, shape: Sequence[Any], dtype: Any) -> launcher.WindowArg:
    if not isinstance(buf, WindowBuffer):
        raise _core.UserError(f"pld.window takes a buffer from pld.alloc_window_buffer, got {buf!r}"
                              + _format_loc(user_loc()))
    if tuple(shape) != buf.shape or (dtype is not None and dtype != buf.dtype):
        raise _core.UserError(f"pld.window: shape {list(shape)} {dtype} differs from the buffer's {list(buf.shape)} "
                              f"{buf.dtype}" + _format_loc(user_loc()))
    return launcher.WindowArg(buf.index)


def _numpy_dtype(dtype: Any) -> np.dtype:
    try:
        return np.dtype(to_numpy_dtype(dtype))
    except Exception:  # noqa: BLE001 - bf16 and the storage formats: their bytes
        return np.dtype(np.uint16)


def _as_numpy(a: Any) -> Tuple[np.ndarray, Any]:
    """(a numpy array sharing the caller's memory, the caller's object)."""
    if isinstance(a, np.ndarray):
        return a, a
    mod = type(a).__module__
    if mod.startswith("torch"):
        import torch  # noqa: PLC0415 - torch is optional; a torch tensor means it is loaded

        t = a.detach()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16), a
        return t.numpy(), a
    raise _core.UserError(f"a @pl.jit.host argument must be a numpy array or a torch tensor, got {type(a).__name__}")


def body_is_ellipsis(fn: Any) -> bool:
    """True when the function's body is only ``...`` (and a docstring): an abstract callback."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef):
        return False
    body = [s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                         and isinstance(s.value.value, str))]
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and body[0].value.value is Ellipsis


class HostArg:
    """A HOST SubWorker's tensor argument (upstream's mapped wire argument): ``buffer`` is the
    memory (a numpy array, the caller's own array when the host program was given it), ``shapes``
    and ``dtype`` its type; ``pypto.runtime.distributed_runner._tensor_from_continuous`` makes it a
    torch tensor without a copy."""

    def __init__(self, buffer: np.ndarray, dtype: Any) -> None:
        self.buffer, self.dtype, self.shapes = buffer, dtype, tuple(buffer.shape)

    def __repr__(self) -> str:
        return f"HostArg({self.dtype}, {list(self.shapes)})"


class HostCallback:
    """``@pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)``: Python that runs on the host,
    called from a host orchestrator. A body of ``...`` only declares it: its implementation is
    bound when the program is prepared (``compiled.prepare(callbacks={name: fn})``), which refuses
    to start without it. Here it runs in the host's process once the ranks have run the chip work
    the orchestrator called before it (its arguments then hold their results); chip work called
    after a callback would need the ranks to wait for the host, which this runtime does not do:
    a UserError says so."""

    def __init__(self, fn: Callable[..., Any], abstract: bool) -> None:
        functools.update_wrapper(self, fn)
        self.fn, self.abstract = fn, abstract

    @property
    def requires_runtime_binding(self) -> bool:
        return self.abstract

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        run = active()
        if run is None:
            raise _core.UserError(f"{self.__name__} is a HOST SubWorker: a host orchestrator calls it"
                                  + _format_loc(user_loc()))
        if kwargs:
            raise _core.UserError(f"{self.__name__}: a HOST SubWorker takes its tensors by position"
                                  + _format_loc(user_loc()))
        run.callbacks.append((self, tuple(args), sum(len(c) for c in run.calls)))


def _run_callbacks(run: HostRun, bound: Dict[str, Callable[..., Any]], original: Dict[int, Any]) -> None:
    for cb, args, _ in run.callbacks:
        impl = bound.get(cb.__name__)
        if impl is None:
            if cb.abstract:
                raise _core.UserError(f"the HOST SubWorker {cb.__name__} has no implementation: its body is `...`; "
                                      f"bind one with compiled.prepare(callbacks={{{cb.__name__!r}: fn}})")
            cb.fn(*args)
            continue
        wire = []
        for a in args:
            if isinstance(a, np.ndarray):
                a = original.get(id(a), a)
                arr, _ = _as_numpy(a)
                wire.append(HostArg(arr, getattr(a, "dtype", arr.dtype)))
            else:
                wire.append(a)
        impl(wire)


class CompiledHostProgram:
    """What ``host_fn.compile(args..., config=RunConfig(distributed_config=...))`` returns: the
    host program bound to its ranks; call it with the arrays to run it. Each rank compiles its
    kernels at its first run (cached on disk like every kernel); ``output_dir`` holds the run
    summary (ranks, windows, calls per rank)."""

    def __init__(self, host: "HostFunction", dist: DistributedConfig) -> None:
        self.host, self.dist = host, dist
        self.callbacks: Dict[str, Callable[..., Any]] = {}  # bound at prepare() (HOST SubWorkers)
        self.output_dir = os.path.join(tempfile.gettempdir(), "pypto-dist", f"{host.__name__}_{os.getpid()}")
        os.makedirs(self.output_dir, exist_ok=True)

        self.segments = _Segments()

    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.host.run(self.dist, args, kwargs, self.output_dir, _wants_swimlane(config), self.segments,
                             callbacks=self.callbacks)

    def prepare(self, config: Any = None, *, extra_compiled: Sequence["CompiledHostProgram"] = (),
                persistent: bool = False, reset_persistent_windows: Optional[bool] = None,
                callbacks: Optional[Dict[str, Callable[..., Any]]] = None, sub_worker_overrides: Any = None,
                startup_timeout_s: Optional[float] = None) -> "DistributedWorker":
        """A ``DistributedWorker`` for this program (and `extra_compiled`): the ranks start now."""
        return DistributedWorker([self, *extra_compiled], config, persistent=persistent,
                                 reset_persistent_windows=reset_persistent_windows,
                                 callbacks=callbacks if callbacks is not None else sub_worker_overrides,
                                 startup_timeout_s=startup_timeout_s)


class DistributedWorker(Worker):
    """``compiled.prepare(...)`` / ``DistributedWorker(compiled)`` / ``DistributedWorker([prefill,
    decode])`` (hw-native-sys's runtime): the ranks set up once for one or several host programs of
    the same devices, then any number of dispatches. ``rt(*args)`` runs the one program (refused
    when there are several), ``rt.run(compiled, *args)`` a chosen one, ``rt.submit(...)`` runs it
    in the background (one at a time, in order; ``.result(timeout)``). ``persistent=True`` with
    ``reset_persistent_windows=False`` keeps the windows' contents from one dispatch to the next
    (otherwise every dispatch starts from zeroed windows).

    ``rt.alloc_tensor(shape, dtype, init=...)`` makes a tensor resident on the worker (a KV cache,
    weights): shared memory every rank maps, passed in place of a host array to any of the
    worker's programs, its contents kept across dispatches until ``rt.free_tensor`` or
    ``close()``. A context manager: leaving it closes the worker."""

    def __init__(self, compiled: Any, config: Any = None, *, persistent: bool = False,
                 reset_persistent_windows: Optional[bool] = None, callbacks: Optional[Dict[str, Any]] = None,
                 sub_worker_overrides: Any = None, inherited_host_tensors: Any = None,
                 startup_timeout_s: Optional[float] = None) -> None:
        super().__init__()
        programs = list(compiled) if isinstance(compiled, (list, tuple)) else [compiled]
        if not programs or not all(isinstance(c, CompiledHostProgram) for c in programs):
            raise TypeError("DistributedWorker takes compiled @pl.jit.host programs (host_fn.compile(...))")
        ids = {tuple(c.dist.device_ids) for c in programs}
        if len(ids) != 1:
            raise ValueError(f"DistributedWorker: the programs run on different devices: {sorted(ids)}")
        names = dict(callbacks or sub_worker_overrides or {})
        declared: Dict[str, HostCallback] = {}
        for c in programs:
            declared.update(c.host.subworkers())
        unknown = sorted(set(names) - set(declared))
        if unknown:
            raise ValueError(f"DistributedWorker: no HOST SubWorker function is named {unknown} (the programs "
                             f"declare {sorted(declared) or 'none'})")
        missing = sorted(n for n, cb in declared.items() if cb.abstract and n not in names)
        if missing:
            raise ValueError(f"DistributedWorker: the HOST SubWorker(s) {missing} have no implementation (their body "
                             f"is `...`): bind them with prepare(callbacks={{{missing[0]!r}: fn, ...}})")
        for n, impl in names.items():
            if not callable(impl):
                raise ValueError(f"DistributedWorker: the callback for {n!r} is not callable: {impl!r}")
        self.callbacks = names
        self.programs = programs
        # One set of ranks for every program (its resident tensors are mapped once): their waits give
        # up after the longest of the programs' timeouts.
        self.dist = DistributedConfig(list(programs[0].dist.device_ids), timeout=max(c.dist.timeout for c in programs))
        self.keep_windows = persistent and reset_persistent_windows is False
        self._executor: Any = None
        self.closed = False
        if not self.dist.in_process:
            launcher.pool_for(self.dist.world_size, self.dist.timeout, self.dist.hosts)  # the ranks start now

    def _require_ready(self, op: str) -> None:
        if self.closed:
            raise RuntimeError(f"DistributedWorker.{op}() called after close()")

    def _check_worker_id(self, worker_id: int, op: str) -> None:
        # Every rank maps every resident tensor; the id says which chip upstream would place it on.
        if isinstance(worker_id, bool) or not isinstance(worker_id, int) or not 0 <= worker_id < self.dist.world_size:
            raise ValueError(f"DistributedWorker.{op}(): worker_id must be in [0, {self.dist.world_size}), got "
                             f"{worker_id!r}")

    def _new_block(self, nbytes: int) -> SharedBlock:
        return SharedBlock(nbytes)

    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        if len(self.programs) != 1:
            raise TypeError(f"rt(*args) is ambiguous on a DistributedWorker of {len(self.programs)} programs "
                            f"({', '.join(c.host.__name__ for c in self.programs)}); dispatch explicitly with "
                            "rt.run(compiled, *args).")
        return self.run(self.programs[0], *args, config=config, **kwargs)

    def run(self, compiled: "CompiledHostProgram", *args: Any, config: Any = None, **kwargs: Any) -> Any:
        self._require_ready("run")
        if not any(compiled is c for c in self.programs):
            raise ValueError("DistributedWorker: this program was not prepared with the worker "
                             "(DistributedWorker([...]) or prepare(extra_compiled=[...]))")
        return compiled.host.run(self.dist, args, kwargs, compiled.output_dir, _wants_swimlane(config),
                                 compiled.segments, zero_windows=not self.keep_windows, worker=self,
                                 callbacks=self.callbacks)

    def register(self, compiled: "CompiledHostProgram") -> RegistrationHandle:
        """A handle that runs `compiled` (one of the worker's programs) on this worker."""
        self._require_ready("register")
        if not any(compiled is c for c in self.programs):
            raise ValueError("DistributedWorker.register: this program was not prepared with the worker")
        return RegistrationHandle(self, compiled, 0)

    def submit(self, compiled: "CompiledHostProgram", *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """Runs it in the background (after the earlier submissions); a Future (``result``, ``done``)."""
        self._require_ready("submit")
        if self._executor is None:
            import concurrent.futures  # noqa: PLC0415 - only a program that submits needs it

            self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="pypto-dist")
        return self._executor.submit(self.run, compiled, *args, config=config, **kwargs)

    def close(self) -> None:
        """Waits for the submitted runs, then frees every resident tensor (idempotent)."""
        if self.closed:
            return
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._close_owned_tensors()
        self.closed = True

    def __enter__(self) -> "DistributedWorker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _wants_swimlane(config: Any) -> bool:
    """RunConfig(enable_chip_swimlane=1) (upstream's DFX switch): one swimlane of every rank."""
    fields = getattr(config, "fields", {}) if config is not None else {}
    return bool(fields.get("enable_chip_swimlane", 0))


class HostFunction:
    """A ``@pl.jit.host`` function (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._compiled: Dict[Tuple[Any, ...], CompiledHostProgram] = {}

    @staticmethod
    def _dist(config: Any) -> DistributedConfig:
        dist = getattr(config, "fields", {}).get("distributed_config") if config is not None else None
        if dist is None:
            return DistributedConfig([0])
        if not isinstance(dist, DistributedConfig):
            raise _core.UserError(f"RunConfig(distributed_config=...) takes a DistributedConfig, got {dist!r}")
        return dist

    def compile(self, *args: Any, config: Any = None, **kwargs: Any) -> CompiledHostProgram:
        dist = self._dist(config)
        key = (tuple(dist.device_ids), dist.timeout, dist.hosts, dist.in_process)
        if key not in self._compiled:
            self._compiled[key] = CompiledHostProgram(self, dist)
        return self._compiled[key]

    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.compile(*args, config=config, **kwargs)(*args, config=config, **kwargs)

    def subworkers(self) -> Dict[str, HostCallback]:
        """The HOST SubWorkers the orchestrator may call: those its code names (module level, its
        closure, or its program's, `self.name`)."""
        raw = getattr(self.fn, "__func__", self.fn)
        scope = function_scope(raw)
        owner = getattr(self.fn, "__self__", None)
        found: Dict[str, HostCallback] = {}
        for n in raw.__code__.co_names + raw.__code__.co_freevars:
            v = scope.get(n)
            if v is None and owner is not None:
                v = getattr(owner, n, None) if not n.startswith("_") else None
            if isinstance(v, HostCallback):
                found[v.__name__] = v
        return found

    def run(self, dist: DistributedConfig, args: Sequence[Any], kwargs: Dict[str, Any], output_dir: str,
            swimlane: bool = False, segments: Optional["_Segments"] = None, zero_windows: bool = True,
            worker: Optional[DistributedWorker] = None, callbacks: Optional[Dict[str, Any]] = None) -> None:
        """Runs the host body, then every rank's calls. With `swimlane`, `output_dir/swimlane.json` is one
        Chrome trace of the run (a process per rank, its cores as threads, one clock; Perfetto).
        `segments`: the arena and heap of earlier runs, reused while they fit and the ranks are the same.
        `worker`: the DistributedWorker whose resident tensors (DeviceTensor arguments) the run may use."""
        self._check_arguments(args, kwargs)
        n = dist.world_size
        pool = launcher.IN_PROCESS if dist.in_process else launcher.pool_for(n, dist.timeout, dist.hosts)
        arrays: List[Tuple[np.ndarray, Any]] = []
        index: Dict[int, int] = {}
        resident: Dict[int, Tuple[np.ndarray, SharedBlock]] = {}  # id(DeviceTensor) -> (its memory here, block)
        fresh: List[SharedBlock] = []  # resident blocks the ranks have yet to map
        for name, a in self._named(args, kwargs):
            if isinstance(a, DeviceTensor):
                if worker is None:
                    raise _core.UserError(f"@pl.jit.host {self.__name__}: parameter {name!r} is a DeviceTensor, which "
                                          "runs only on the worker that allocated it: rt.run(compiled, ...)"
                                          + _format_loc(user_loc()))
                block = worker._resident(a, f"@pl.jit.host {self.__name__}: parameter {name!r}")
                assert isinstance(block, SharedBlock)
                if id(a) not in resident:
                    if block.ready_for(pool) and block not in fresh:
                        fresh.append(block)
                    resident[id(a)] = (numpy_view(a), block)
            elif isinstance(a, np.ndarray) or type(a).__module__.startswith("torch"):
                if id(a) not in index:
                    index[id(a)] = len(arrays)
                    arrays.append(_as_numpy(a))
        offsets, size = [], 0
        for a, _ in arrays:
            offsets.append(size)
            size += -(-a.nbytes // 64) * 64
        segments = segments if segments is not None else _Segments()
        arena = segments.get("arena", size, pool)
        views = []
        for (a, _), off in zip(arrays, offsets):
            v = arena.array(off, a.shape, a.dtype)
            v[...] = a
            views.append(v)

        def staged(x: Any) -> Any:
            if id(x) in resident:
                return resident[id(x)][0]
            return views[index[id(x)]] if id(x) in index else x

        run = HostRun(n, WindowLayout(n), arena.array(0, (1,), np.uint8).__array_interface__["data"][0], arena,
                      [[] for _ in range(n)])
        run.resident = [(b.address, b) for _, b in resident.values()]
        run.spans = [(views[i].__array_interface__["data"][0], max(1, a.nbytes)) for i, (a, _) in enumerate(arrays)]
        _active.run = run
        try:
            self.fn(*[staged(a) for a in args], **{k: staged(v) for k, v in kwargs.items()})
        finally:
            _active.run = None
        total = sum(len(c) for c in run.calls)
        for cb, _, before in run.callbacks:
            if before != total:
                raise _core.UserError(f"@pl.jit.host {self.__name__}: the HOST SubWorker {cb.__name__} is followed by "
                                      "more chip work; here the ranks run the host body's chip work once it returns "
                                      "and the SubWorkers after it, so a SubWorker must come after the last chip call"
                                      + _format_loc(user_loc())
                                      + "\nhint: split the program in two host programs around the SubWorker")
        heap = None
        if run.layout.windows and dist.hosts == 1:  # (over several hosts each host's engine keeps its heap)
            earlier = segments.held.get("heap", (None, None))[0]
            heap = segments.get("heap", run.layout.total_bytes, pool)
            if zero_windows and heap is earlier:  # (a new segment is zeroed already)
                heap.array(0, (run.layout.total_bytes,), np.uint8)[...] = 0  # every run's windows start zeroed
        t_run = time.perf_counter()
        jobs = [launcher.Job(calls, (arena.name, arena.size), (heap.name, heap.size) if heap else None,
                             run.layout, t_run if swimlane else None,
                             segments=[(b.seg.name, b.seg.size) for b in fresh], zero_heap=zero_windows)
                for calls in run.calls]
        try:
            answers = launcher.run_ranks(jobs, dist.timeout, [s for s in (arena, heap) if s is not None]
                                         + [b.seg for b in fresh], 0 if dist.in_process else dist.hosts)
        except BaseException:
            segments.drop()  # the ranks were stopped: the next run maps new segments
            raise
        finally:
            for b in fresh:  # mapped by this pool's ranks, and unlinked (a new pool gets a copy: ready_for)
                b.pool = pool
        if swimlane:
            _write_swimlane(output_dir, self.fn.__name__, answers)
        for i, ((a, _), v) in enumerate(zip(arrays, views)):
            if i in run.written and a.flags.writeable:  # what a rank may have written (pl.Out / InOut)
                a[...] = v
        if run.callbacks:  # the SubWorkers see the caller's arrays, with what the ranks wrote
            original = {id(v): arrays[i][1] for i, v in enumerate(views)}
            _run_callbacks(run, callbacks or {}, original)
        _write_summary(output_dir, self.fn.__name__, dist, run)


    def _named(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[Tuple[str, Any]]:
        """The arguments with their parameters' names."""
        names = list(inspect.signature(self.fn).parameters)
        return [(names[i] if i < len(names) else str(i), a) for i, a in enumerate(args)] + list(kwargs.items())

    def _check_arguments(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> None:
        """A UserError naming the program and its parameters when the arguments do not fit them."""
        sig = inspect.signature(self.fn)
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            got = ", ".join(_describe(a) for a in args)
            raise _core.UserError(f"@pl.jit.host {self.__name__}{sig}: {e} (called with {len(args)} argument"
                                  f"{'' if len(args) == 1 else 's'}: {got})" + _format_loc(user_loc())) from None


def _describe(a: Any) -> str:
    """An argument as an error message shows it: `float32[128, 128]`, `DeviceTensor float32[128, 128]`."""
    if isinstance(a, DeviceTensor):
        return f"DeviceTensor {str(a.dtype).replace('torch.', '')}{list(a.shape)}"
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return f"{str(a.dtype).replace('torch.', '')}{list(a.shape)}"
    return repr(a)


class _Segments:
    """A host program's arena and heap, kept from run to run (mapping a fresh segment costs a page
    fault per page, each run): a segment is reused while it is large enough and the rank pool that
    mapped it is the same; otherwise a new one replaces it."""

    def __init__(self) -> None:
        self.held: Dict[str, Tuple[SharedSegment, Any]] = {}

    def get(self, kind: str, size: int, pool: Any) -> SharedSegment:
        seg, owner = self.held.get(kind, (None, None))
        if seg is not None and owner is pool and seg.size >= size:
            return seg
        if seg is not None:
            self._release(seg)
        seg = SharedSegment.create(max(size, 64), kind)
        self.held[kind] = (seg, pool)
        return seg

    def drop(self) -> None:
        for seg, _ in self.held.values():
            self._release(seg)
        self.held.clear()

    @staticmethod
    def _release(seg: SharedSegment) -> None:
        seg.unlink()
        seg.close()
        launcher.dropped(seg.name)  # the ranks unmap it with their next job

    def __del__(self) -> None:
        try:
            self.drop()
        except Exception:  # noqa: BLE001 - at interpreter exit
            pass


def _write_swimlane(output_dir: str, name: str, answers: List[Any]) -> None:
    events = [e for a in answers for e in (a or [])]
    path = os.path.join(output_dir, "swimlane.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns",
                   "otherData": {"format": "pypto-swimlane-1", "function": name, "ranks": len(answers)}}, f)
    print(f"pypto: the swimlane of {name} over {len(answers)} ranks is {path} (open it in https://ui.perfetto.dev)")


_summaries: Dict[str, Any] = {}  # the last run.json written per folder (rewritten when the run differs)


def _write_summary(output_dir: str, name: str, dist: DistributedConfig, run: HostRun) -> None:
    summary = {
        "function": name, "ranks": dist.world_size, "device_ids": dist.device_ids,
        "windows": [{"shape": list(w.shape), "dtype": w.dtype.str, "offset": w.offset} for w in run.layout.windows],
        "calls": [[f"{c.module}.{c.qualname}" for c in calls] for calls in run.calls],
    }
    if _summaries.get(output_dir) == summary:
        return
    with open(os.path.join(output_dir, "run.json"), "w") as f:
        json.dump(summary, f, indent=1)
    _summaries[output_dir] = summary
