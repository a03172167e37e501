"""``pypto.runtime.ChipWorker`` (hw-native-sys's single-chip runtime handle) and the names that go
with it (``RegistrationHandle``, ``DeviceTensor``).

A ChipWorker runs compiled ``@pl.jit`` programs (``fn.compile(*sample_args)``) on this CPU:
``worker.register(compiled)`` gives a handle that runs exactly that program on new arguments
(torch tensors, numpy arrays, or the worker's DeviceTensors), writing its outputs in place, with
no trace and no compile-cache lookup; ``worker.run(compiled, *args)`` does the same without a
handle. ``worker.alloc_tensor`` makes tensors that stay with the worker (weights, a KV cache)
until ``free_tensor`` or ``close()``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import weakref

from ..frontends.jit_arguments import CompiledFunction
from ..frontends.language._host import CompiledHostProgram
from ..frontends.language import RunConfig
from ..frontends.language._worker import DeviceTensor, RegistrationHandle, Worker, caller_view

__all__ = ["ChipWorker", "RegistrationHandle", "DeviceTensor"]

_DEFAULT_RUNTIME = "tensormap_and_ringbuffer"  # upstream's default runtime name (accepted, recorded)


class ChipWorker(Worker):
    """``ChipWorker(config=RunConfig(), level=2)``: one chip's runtime handle. Initialized on
    construction (``auto_init``); ``close()`` frees its tensors and closes its handles, and a
    later ``init()`` opens it again. A context manager: leaving the block closes it.

    ``aicpu_dlopen_count`` counts the compiled programs this worker has registered since it was
    initialized (by ``register`` or a first ``run``): a program registered again, and every
    dispatch, count nothing."""

    def __init__(self, config: Optional[RunConfig] = None, *, level: int = 2, runtime: str = _DEFAULT_RUNTIME,
                 enable_sdma: bool = False, auto_init: Optional[bool] = None) -> None:
        if level != 2:
            raise ValueError(f"ChipWorker only supports level=2; got level={level}. L3+ runtimes go through "
                             "DistributedWorker.")
        super().__init__()
        self._config = config if config is not None else RunConfig()
        self._level, self._runtime, self._enable_sdma = level, runtime, bool(enable_sdma)
        self._initialized = False
        # id(compiled) -> (compiled, cid): the compiled object is kept so its id is not reused.
        self._cid_cache: Dict[int, Tuple[Any, int]] = {}
        self._handles: "weakref.WeakSet[RegistrationHandle]" = weakref.WeakSet()
        self._loads = 0
        if auto_init is None or auto_init:
            self.init()

    # --- lifecycle -----------------------------------------------------------------------------
    def init(self) -> None:
        """Opens the worker (idempotent); a worker opened again starts with no registrations."""
        if not self._initialized:
            self._initialized = True
            self._loads = 0

    def close(self) -> None:
        """Frees every tensor of ``alloc_tensor`` / ``malloc`` and closes every handle (idempotent)."""
        if not self._initialized:
            return
        self._close_owned_tensors()
        for h in list(self._handles):
            h._mark_closed()
        self._handles.clear()
        self._cid_cache.clear()
        self._initialized = False

    def __enter__(self) -> "ChipWorker":
        self.init()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _require_ready(self, op: str) -> None:
        if not self._initialized:
            raise RuntimeError(f"ChipWorker.{op}() requires an initialized ChipWorker. Use `with chipworker:` or "
                               "call `chipworker.init()` first.")

    # --- binding -------------------------------------------------------------------------------
    @property
    def level(self) -> int:
        return self._level

    @property
    def platform(self) -> str:
        return self._config.platform

    @property
    def device_id(self) -> int:
        return int(getattr(self._config, "device_id", 0))

    @property
    def runtime(self) -> str:
        return self._runtime

    @property
    def initialized(self) -> bool:
        return self._initialized

    @property
    def aicpu_dlopen_count(self) -> int:
        return self._loads

    # --- dispatch ------------------------------------------------------------------------------
    def _cid(self, compiled: Any) -> int:
        """The worker's id of `compiled`, registering it on first sight."""
        entry = self._cid_cache.get(id(compiled))
        if entry is not None:
            return entry[1]
        if isinstance(compiled, CompiledHostProgram):
            raise TypeError("ChipWorker runs single-chip programs: a compiled @pl.jit.host program runs on a "
                            "DistributedWorker (compiled.prepare(), or DistributedWorker(compiled))")
        if not isinstance(compiled, CompiledFunction) and not (callable(compiled) and hasattr(compiled, "entry")):
            raise TypeError(f"ChipWorker takes a compiled program (fn.compile(*sample_args)), got "
                            f"{type(compiled).__name__}")
        if isinstance(compiled, CompiledFunction) and compiled.function is None:
            raise TypeError("ChipWorker: this CompiledFunction was not made by fn.compile(...) (it has no "
                            "function to bind arguments with)")
        self._loads += 1
        self._cid_cache[id(compiled)] = (compiled, self._loads)
        return self._loads

    def register(self, compiled: Any) -> RegistrationHandle:
        """A handle that runs `compiled` on this worker; the same program registered again shares
        its registration."""
        self._require_ready("register")
        handle = RegistrationHandle(self, compiled, self._cid(compiled))
        self._handles.add(handle)
        return handle

    def run(self, compiled: Any, *args: Any, config: Any = None) -> Any:
        """Runs `compiled` on `args` (one per parameter; outputs written in place). Returns None when
        every result is an argument written in place, else the results (an argument that is
        returned comes back as the object passed)."""
        self._require_ready("run")
        self._cid(compiled)
        fn = compiled.function if isinstance(compiled, CompiledFunction) else None
        names: List[str] = [p.name for p in fn.params] if fn is not None else []
        passed: Dict[int, Any] = {}  # id(view) -> the DeviceTensor it stands for
        call: List[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, DeviceTensor):
                label = f"parameter {names[i]!r}" if i < len(names) else f"argument {i}"
                self._resident(a, f"{getattr(fn, '__name__', 'ChipWorker.run')}: {label}")
                v = caller_view(a)
                passed[id(v)] = a
                call.append(v)
            else:
                call.append(a)
        if fn is not None:
            result = fn.run_compiled(compiled, call, {})
        else:  # a compiled @pl.program (its `entry`): its own call
            result = compiled(*call, config=config) if config is not None else compiled(*call)
        given = {id(a) for a in call}
        if all(id(r) in given for r in (result if isinstance(result, tuple) else (result,))):
            return None  # an in-place call: the outputs are the arguments (upstream's contract)
        if isinstance(result, tuple):
            return tuple(passed.get(id(r), r) for r in result)
        return passed.get(id(result), result)
