"""PyPTO's older programming interface, which its operation tests use::

    x = pypto.tensor((72, 71), pypto.DT_FP32, "x")      # outside any function: declarations
    y = pypto.tensor((72, 71), pypto.DT_FP32, "y")
    pypto.runtime._device_init()
    with pypto.function("MAIN", x, y):                   # the block is recorded as a program
        y[:] = pypto.cos(x)                              #   whose parameters are x, y in order
    pypto.runtime._device_run_once_data_from_host(pypto.from_torch(a), pypto.from_torch(b))
    pypto.runtime._device_fini()

Inside the block the declared tensors are the program's parameters; leaving it compiles the
program (with the options in force); ``_device_run_once_data_from_host`` runs the last program
compiled on the tensors given, writing the outputs into them. Everything ``@pypto.jit`` checks
holds here too (shapes, dtypes, errors naming the user's line)."""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

import pypto._core as _core
from ..core import config, ops
from ..core._tracing import NO_LOC, Tracing, _format_loc, maybe_recorder, user_loc
from ..core.tensor import Tensor
from ..core._dtypes import DT_BF16, STORAGE_DTYPES, to_numpy_dtype


class _Compiled:
    def __init__(self, name: str, program: Any, params: List[Tensor], writes: List[bool]) -> None:
        self.name, self.program, self.params, self.writes = name, program, params, writes


_compiled: List[_Compiled] = []  # the programs compiled by function blocks, last one last


class function:  # noqa: N801 - PyPTO's name
    """``with pypto.function(name, *tensors):`` records the block as a program whose parameters
    are ``tensors`` (declared with ``pypto.tensor(shape, dtype, name)``)."""

    def __init__(self, name: str, *tensors: Any) -> None:
        if not isinstance(name, str):
            raise _core.UserError(f"pypto.function: the name must be a str, got {name!r}" + _format_loc(user_loc()))
        # PyPTO also takes lists of tensors (``pypto.function("f", [x, y], [out])``): flattened.
        tensors = tuple(t for arg in tensors for t in (arg if isinstance(arg, (list, tuple)) else (arg,)))
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor) or t.is_traced or t._spec is None or t._dtype is None or any(
                    not isinstance(d, int) for d in t._spec):
                raise _core.UserError(f"pypto.function({name!r}): argument {i} must be a tensor declared outside the "
                                      "block with a static shape and a dtype, e.g. pypto.tensor((64, 64), "
                                      f"pypto.DT_FP32, 'x'), got {t!r}" + _format_loc(user_loc()))
        if len({id(t) for t in tensors}) != len(tensors):
            raise _core.UserError(f"pypto.function({name!r}): a tensor is given twice" + _format_loc(user_loc()))
        self.name, self.tensors = name, list(tensors)
        self._tracing: Optional[Tracing] = None

    def __enter__(self) -> "function":
        if maybe_recorder() is not None:
            raise _core.UserError(f"pypto.function({self.name!r}) inside another traced function or block"
                                  + _format_loc(user_loc()))
        self.rec = _core.Recorder(self.name)
        for i, t in enumerate(self.tensors):
            vid = self.rec.add_param(t._name or f"arg{i}", list(t._spec), t._dtype, False, NO_LOC)
            t._rec, t._vid = self.rec, vid  # the declaration is the parameter while the block records
        self._tracing = Tracing(self.rec)
        self._tracing.__enter__()
        ops._apply_default_tiles()
        return self

    def __iter__(self) -> Any:
        """PyPTO's ``with pypto.function(...) as f: for _ in f: body``: the body once."""
        yield self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._tracing is not None
        self._tracing.__exit__(exc_type, exc, tb)
        try:
            if exc_type is None:
                self._compile()
        finally:
            for t in self.tensors:
                t._rec, t._vid = None, -1

    def _compile(self) -> None:
        writes = [self.rec.value_kind(t._vid) == "output" for t in self.tensors]
        if not any(writes):  # traced (shapes, dtypes and errors checked) but nothing to run
            _compiled.append(_Compiled(self.name, None, list(self.tensors), writes))
            return
        dbg, pas, ver = (config.merged(g, None) for g in ("debug", "pass", "verify"))
        dump = dbg["dump_passes"]
        import os
        dump_dir = os.path.join(dbg["dump_dir"], self.name) if dbg["dump_dir"] else ""
        program = self.rec.compile(pas["machine"], dump_dir, bool(dump), list(dump) if isinstance(dump, list) else [],
                                   bool(pas["reciprocal_division"]), config.verify_passes(dbg, ver))
        _compiled.append(_Compiled(self.name, program, list(self.tensors), writes))


def _as_array(a: Any, t: Tensor, i: int, name: str) -> np.ndarray:
    if type(a).__module__.startswith("torch"):
        import torch
        a = a.detach()
        if a.device.type != "cpu":
            raise _core.UserError(f"{name}: tensor {i} is on {a.device}; pass CPU tensors")
        if a.dtype == torch.bfloat16:
            a = a.view(torch.int16).numpy().view(np.uint16)
        elif t._dtype in STORAGE_DTYPES and a.element_size() == 1:
            a = a.view(torch.uint8).numpy()
        else:
            a = a.numpy()
    if not isinstance(a, np.ndarray):
        raise _core.UserError(f"{name}: argument {i} must be a torch tensor or a numpy array, got {type(a).__name__}")
    want = np.dtype(np.uint16) if t._dtype == DT_BF16 else np.dtype(to_numpy_dtype(t._dtype))
    if a.dtype == want and tuple(a.shape) != tuple(t._spec) and a.size == int(np.prod(t._spec)) \
            and a.flags.c_contiguous:
        a = a.reshape(t._spec)  # data from the host is its memory: the same elements in the declared shape
    if a.dtype != want or tuple(a.shape) != tuple(t._spec):
        raise _core.UserError(f"{name}: argument {i} has shape {tuple(a.shape)} and dtype {a.dtype}; the function's "
                              f"tensor {t._name or i} is {tuple(t._spec)} {_core.dtype_name(t._dtype)}")
    return a


def run_once(*args: Any) -> None:
    """Runs the last program a ``pypto.function`` block compiled on ``args`` (torch tensors or
    numpy arrays, one per declared tensor, in order), writing its outputs into them."""
    name = "pypto.runtime._device_run_once_data_from_host"
    if not _compiled:
        raise _core.UserError(f"{name}: no pypto.function block has been compiled" + _format_loc(user_loc()))
    f = _compiled[-1]
    if f.program is None:
        raise _core.UserError(f"{name}: pypto.function({f.name!r}) writes none of its tensors, so it has nothing to "
                              "run" + _format_loc(user_loc())
                              + "\nhint: write the results with pypto.assemble(v, offsets, out) or out[:] = v")
    if len(args) != len(f.params):
        raise _core.UserError(f"{name}: the function {f.name!r} has {len(f.params)} tensors, got {len(args)} "
                              "arguments" + _format_loc(user_loc()))
    arrays = [_as_array(a, t, i, name) for i, (a, t) in enumerate(zip(args, f.params))]
    for i, a in enumerate(arrays):
        if f.writes[i] and not a.flags.writeable:
            raise _core.UserError(f"{name}: argument {i} is written by {f.name!r} but is read-only")
    rt = config.merged("runtime", None)
    mode = "interp" if rt["run_mode"] == "interp" else "cpu"
    try:
        f.program.run(arrays, rt["workers"], rt["sched_mode"], False, mode, float(rt["timeout"]))
    except _core.UserError as e:
        raise _core.UserError(str(e) + _format_loc(user_loc())) from None
