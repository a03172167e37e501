"""Runs programs written for CANN PyPTO on an Ascend NPU here, on the CPU, without editing them.

CANN PyPTO's examples and model tests pick their device with a few lines: ``import torch_npu``,
``torch.npu.set_device(i)``, ``device=f"npu:{i}"``, ``x.npu()``, ``torch.npu.synchronize()``.
Those are the only lines a port has to change (docs/porting.md). This module makes even that
unnecessary: it maps the NPU device to the CPU, so the kernel code and its checks run as written.

    pypto run script.py [args...]              # a script (its __main__ block runs)
    python -m pytest -p pypto.npu_compat ...   # PyPTO's model tests (pytest files)

What it does, and nothing more:

* ``torch.device("npu")`` / ``"npu:N"`` exist (torch's PrivateUse1 backend renamed ``npu``), and a
  tensor asked for on an NPU device (``device=`` of a factory, also a bare index ``device=0`` as
  torch_npu reads it, ``.to(...)``, ``.npu()``) is made on the CPU; it reports ``device`` npu:0
  (and ``is_npu``), as do the tensors computed from it, and ``.cpu()`` gives a CPU alias;
* ``torch.npu`` and a ``torch_npu`` module exist with the device calls (``set_device``,
  ``synchronize``, ``current_device``, ``device_count``, ``is_available``, ``config``) as no-ops,
  and ``torch_npu.npu_format_cast`` returns its input (arrays are row-major here; NZ is recorded
  by the annotations, see docs/porting.md);
* the few fused NPU kernels PyPTO's model tests compute their golden data with
  (``npu_dynamic_quant``, ``npu_quant_matmul``, ``npu_swiglu``, ``npu_quantize``,
  ``npu_rms_norm``, ``npu_rotary_mul``) are CPU versions of their documented formulas
  (pypto.npu_reference);
* any other ``torch_npu`` attribute (an NPU-only kernel such as ``torch_npu.npu_moe_gating_top_k``) raises
  an AttributeError that says so, when it is used;
* a Python process started from the program (a test running a script in a subprocess) gets the
  same mapping when it imports ``torch_npu``: a stand-in for it (``pypto/_npu_shim``) is put on
  ``PYTHONPATH`` for child processes.
"""

from __future__ import annotations

import contextlib
import re
import runpy
import sys
import types
from typing import Any, Iterator, List, Optional
from . import hccl
from .npu_reference import hifloat8, KERNELS
from .npu_platform import platform
from ..frontends.jit import call_recorders

_NPU_DEVICE = re.compile(r"^npu(:\d+)?$")
_installed = False


def _is_npu(dev: Any) -> bool:
    if isinstance(dev, str):
        return bool(_NPU_DEVICE.match(dev))
    t = getattr(dev, "type", None)
    return isinstance(t, str) and t in ("npu", "privateuseone")


def _cpu(dev: Any) -> Any:
    return "cpu" if _is_npu(dev) else dev


class _NotOnCpu:
    """A torch_npu attribute with no CPU meaning: an error when it is used, not when imported."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AttributeError(
            f"torch_npu.{self._name} is an NPU kernel; it has no CPU version here (pypto.npu_compat "
            "maps only the device calls). hint: compute this reference with torch or numpy")

    def __getattr__(self, attr: str) -> Any:
        return _NotOnCpu(f"{self._name}.{attr}")


class _Module(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _NotOnCpu(name)


def _device_module() -> types.ModuleType:
    npu = types.ModuleType("torch.npu")
    state = {"device": 0}
    npu.set_device = lambda d=0: state.__setitem__("device", int(getattr(d, "index", d) or 0))  # type: ignore[attr-defined]
    npu.current_device = lambda: state["device"]  # type: ignore[attr-defined]
    npu.device_count = lambda: 1  # type: ignore[attr-defined]
    npu.is_available = lambda: True  # type: ignore[attr-defined]
    npu.is_initialized = lambda: True  # type: ignore[attr-defined]
    npu.synchronize = lambda *a, **k: None  # type: ignore[attr-defined]
    npu.empty_cache = lambda: None  # type: ignore[attr-defined]
    npu.manual_seed = lambda seed: None  # type: ignore[attr-defined]
    npu.manual_seed_all = lambda seed: None  # type: ignore[attr-defined]
    npu._is_in_bad_fork = lambda: False  # type: ignore[attr-defined]
    npu.config = types.SimpleNamespace(allow_internal_format=False)  # type: ignore[attr-defined]

    def _set_compile_mode(*args: Any, **kwargs: Any) -> None:
        return None

    npu.set_compile_mode = _set_compile_mode  # type: ignore[attr-defined]
    npu.NPUGraph = NPUGraph  # type: ignore[attr-defined]
    npu.graph = graph  # type: ignore[attr-defined]
    npu.Stream = Stream  # type: ignore[attr-defined]
    npu.Event = Event  # type: ignore[attr-defined]
    default = Stream()
    current = [default]
    npu.current_stream = lambda device=None: current[-1]  # type: ignore[attr-defined]
    npu.default_stream = lambda device=None: default  # type: ignore[attr-defined]

    @contextlib.contextmanager
    def stream(s: Optional[Stream]) -> Iterator[Optional[Stream]]:
        current.append(s if s is not None else current[-1])
        try:
            yield s
        finally:
            current.pop()

    npu.stream = stream  # type: ignore[attr-defined]
    npu.set_stream = lambda s: current.__setitem__(-1, s)  # type: ignore[attr-defined]
    npu.is_current_stream_capturing = lambda: bool(_capturing)  # type: ignore[attr-defined]
    return npu


class Event:
    """torch.npu.Event: work here is done when a call returns, so every event has happened."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, stream: Any = None) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "Event") -> float:
        return 0.0


class Stream:
    """torch.npu.Stream: calls run to completion on the CPU in program order, so a stream has
    nothing pending; waiting and synchronizing return at once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait_stream(self, other: "Stream") -> None:
        pass

    def wait_event(self, event: Event) -> None:
        pass

    def record_event(self, event: Optional[Event] = None) -> Event:
        return event if event is not None else Event()

    def query(self) -> bool:
        return True


_capturing: List["NPUGraph"] = []  # graphs between capture_begin and capture_end


class NPUGraph:
    """torch.npu.NPUGraph (an ACL graph): the code run under ``torch.npu.graph(g)`` runs once,
    eagerly, and the @pypto.jit calls it made are recorded; ``replay()`` runs those calls again
    on the same arguments (so new values written into the captured inputs give new outputs, as
    on the device). Torch operations inside the capture are not replayed: on the CPU they ran
    once at capture."""

    def __init__(self) -> None:
        self.calls: List[Any] = []

    def capture_begin(self, *args: Any, **kwargs: Any) -> None:
        call_recorders.append(self.calls)
        _capturing.append(self)

    def capture_end(self) -> None:
        if self in _capturing:
            _capturing.remove(self)
            call_recorders.remove(self.calls)

    def replay(self) -> None:
        for fn, args, kwargs in self.calls:
            fn(*args, **kwargs)

    def reset(self) -> None:
        self.calls = []


@contextlib.contextmanager
def graph(g: NPUGraph, *args: Any, **kwargs: Any) -> Iterator[NPUGraph]:
    """torch.npu.graph(g): records the @pypto.jit calls made inside into g (see NPUGraph)."""
    g.capture_begin()
    try:
        yield g
    finally:
        g.capture_end()


def _format_cast(t: Any, fmt: Any = None, *args: Any, **kwargs: Any) -> Any:
    """torch_npu.npu_format_cast: the NPU's storage format of a tensor (ACL_FORMAT_ND = 2,
    FRACTAL_NZ = 29, ...). The data stays row-major here; the format is remembered so
    get_npu_format reports it, as a program checking its weights' layout expects."""
    out = t.clone() if kwargs.get("customize_dtype") is None else t
    try:
        out._pypto_npu_format = int(fmt) if fmt is not None else 2
    except (TypeError, ValueError):
        pass
    return out


def install() -> None:
    """Maps the NPU device to the CPU in this process (idempotent). Needs torch."""
    global _installed
    if _installed:
        return
    import torch
    from torch.overrides import TorchFunctionMode

    try:
        torch.utils.rename_privateuse1_backend("npu")
    except RuntimeError:
        pass  # already renamed (to npu, by us or by the program)
    npu = _device_module()
    if not hasattr(torch, "npu"):
        torch._register_device_module("npu", npu)
    else:
        npu = torch.npu

    device_descr = torch.Tensor.__dict__.get("device") or torch._C.TensorBase.__dict__["device"]
    npu0 = torch.device("npu", 0)
    topk = {torch.topk, torch.Tensor.topk}
    to_cpu = {torch.Tensor.cpu, torch.Tensor.numpy, torch.Tensor.tolist, torch.Tensor.item}

    def tag(res: Any) -> Any:
        if isinstance(res, torch.Tensor):
            res._pypto_npu = True
        elif isinstance(res, (tuple, list)):
            for r in res:
                if isinstance(r, torch.Tensor):
                    r._pypto_npu = True
        return res

    def npu_topk(x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True,  # noqa: A002
                 *, out: Any = None) -> Any:
        """The NPU's topk: its k values in order even when asked not to sort, and equal values in
        index order (a stable sort); model tests compare against it position by position, and the
        CPU's order (unsorted, or ties in any order) would differ."""
        if out is not None:
            raise TypeError("torch.topk(out=...) on an NPU tensor is not supported by pypto.npu_compat")
        values, indices = torch.sort(x, dim=dim, descending=largest, stable=True)
        return torch.return_types.topk((values.narrow(dim, 0, k), indices.narrow(dim, 0, k)))

    class NpuToCpu(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):  # type: ignore[override]
            kwargs = kwargs or {}
            if getattr(func, "__self__", None) is device_descr:
                # A tensor made for the NPU says so (`t.device.type == "npu"`, as programs check
                # before they ask torch_npu for its format); its data is on the CPU.
                return npu0 if getattr(args[0], "_pypto_npu", False) else func(*args)
            if func is torch.device:
                return func(*args, **kwargs)  # torch.device("npu:0") is that device (used, it means the CPU)
            leaves = func in to_cpu or (func is torch.Tensor.to and any(
                a == "cpu" or (isinstance(a, torch.device) and a.type == "cpu")
                for a in (*args[1:], kwargs.get("device"))))
            d0 = kwargs.get("device")
            on_npu = d0 is not None and (_is_npu(d0) or (isinstance(d0, int) and not isinstance(d0, bool)))
            if "device" in kwargs:
                d = kwargs["device"]
                # With torch_npu, a bare index (device=0) is that NPU.
                kwargs["device"] = "cpu" if isinstance(d, int) and not isinstance(d, bool) else _cpu(d)
            if args and any(_is_npu(a) for a in args):
                on_npu = on_npu or func is torch.Tensor.to
                args = tuple(_cpu(a) for a in args)
            dt = kwargs.get("dtype")
            if on_npu and func is torch.rand and dt is not None and not dt.is_floating_point:
                # The NPU's rand takes an integer dtype (values in [0, 1) truncated: zeros), which
                # programs use to make output buffers; the CPU's refuses it.
                return tag(func(*args, **dict(kwargs, dtype=torch.float32)).to(dt))
            npu_args = any(getattr(a, "_pypto_npu", False) for a in args if isinstance(a, torch.Tensor))
            if npu_args and func in topk:
                return tag(npu_topk(*args, **kwargs))
            res = func(*args, **kwargs)
            if leaves:
                if isinstance(res, torch.Tensor) and getattr(res, "_pypto_npu", False):
                    res = res.view_as(res)  # the CPU copy: an alias without the NPU tag
                return res
            if on_npu or npu_args:
                tag(res)  # computed from NPU tensors: on the NPU
            return res

    # torch.accelerator would report the renamed backend as an accelerator with streams (torch.compile
    # asks for its current stream); there is none: the NPU device is the CPU here.
    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "is_available"):
        real = acc.is_available
        acc.is_available = lambda: False if str(acc.current_accelerator()) == "npu" else real()

    mode = NpuToCpu()
    mode.__enter__()  # for the whole process, as torch_npu's device would be
    def to_npu(self: Any, *a: Any, **k: Any) -> Any:
        out = self.view_as(self)  # an alias: the CPU tensor it came from stays a CPU tensor
        out._pypto_npu = True
        return out

    torch.Tensor.npu = to_npu  # type: ignore[attr-defined]
    torch.nn.Module.npu = lambda self, *a, **k: self  # type: ignore[attr-defined]  # its tensors stay CPU ones
    torch.Tensor.is_npu = property(lambda self: bool(getattr(self, "_pypto_npu", False)))  # type: ignore[attr-defined]
    for name in ("NPUGraph", "graph"):  # a torch.npu that existed before: add what it lacks
        if not hasattr(npu, name):
            setattr(npu, name, globals()[name])
    torch_npu = _Module("torch_npu")
    torch_npu.npu = npu  # type: ignore[attr-defined]
    torch_npu.npu_format_cast = _format_cast  # type: ignore[attr-defined]
    torch_npu.get_npu_format = lambda t: getattr(t, "_pypto_npu_format", 2)  # type: ignore[attr-defined]
    for name, fn in KERNELS.items():  # the NPU kernels model tests compute their goldens with
        setattr(torch_npu, name, fn)
    torch_npu.hifloat8 = hifloat8  # type: ignore[attr-defined]
    torch_npu.__version__ = "cpu (pypto.npu_compat)"  # type: ignore[attr-defined]
    sys.modules.setdefault("torch_npu", torch_npu)
    sys.modules.setdefault("torch_npu.npu", npu)
    _for_child_processes()
    hccl.install()  # torch.distributed's hccl backend: gloo (CANN's distributed tests)
    _installed = True


def _for_child_processes() -> None:
    """A Python started from here (a test running a script in a subprocess) that imports
    torch_npu gets this mapping too: the folder of a stand-in ``torch_npu`` goes on PYTHONPATH."""
    import os

    shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_npu_shim")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if shim not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([*paths, shim])
    if shim not in sys.path:  # multiprocessing's spawn gives the child this process's sys.path
        sys.path.append(shim)  # (here torch_npu is already in sys.modules: the shim is not read)


def run_script(path: str, argv: List[str]) -> None:
    """Runs path as __main__ with sys.argv = [path, *argv], the NPU device mapped to the CPU."""
    import os

    install()
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")


def pytest_configure(config: Optional[Any] = None) -> None:
    """As a pytest plugin (``-p pypto.npu_compat``): installs the mapping before tests import."""
    install()
    if config is not None:
        config.addinivalue_line("markers", "soc(*chips): the NPU chips (\"910\", \"950\") a CANN PyPTO test is for")


# The test tag of each chip the machine model stands for (CANN PyPTO's conftest: "950" for the
# Ascend 950, "910" for the rest).
_SOC_TAG = {"DAV_2201": "910", "DAV_3510": "950"}


def soc_tag() -> str:
    """The chip tag of ``pypto.platform.npuarch``, the chip the CPU stands in for: PYPTO_NPUARCH
    in the environment sets it before the tests import (DAV_2201, "910", by default)."""
    import os

    arch = os.environ.get("PYPTO_NPUARCH")
    if arch:
        platform.npuarch = arch
    return _SOC_TAG[platform.npuarch]


def pytest_collection_modifyitems(config: Any, items: List[Any]) -> None:
    """As CANN PyPTO's conftest does on a device: a test marked ``@pytest.mark.soc(...)`` for other
    chips than the one stood in for (a test without the mark is for "910") does not run; here it
    is skipped, with the reason, rather than dropped."""
    import pytest

    tag = soc_tag()
    for item in items:
        marker = item.get_closest_marker("soc")
        if marker is None or not marker.args:
            chips = ["910"]
        else:
            first = marker.args[0]
            chips = [str(c).strip() for c in (first if isinstance(first, (list, tuple)) else marker.args)]
        if tag not in chips:
            item.add_marker(pytest.mark.skip(
                reason=f"for NPU chips {chips}; pypto.npu_compat stands in for a {tag} (PYPTO_NPUARCH selects)"))
