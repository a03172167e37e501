"""PyPTO's precision tool ("pass verify"): ``set_verify_golden_data``, ``pass_verify_print`` and
``pass_verify_save``, with ``verify_options={"enable_pass_verify": True}``.

With verify on, a call also evaluates the program's tensor graph with numpy (the meaning of the
program, python/pypto/tools/tensor_semantics.py), compares it with the goldens given by
``set_verify_golden_data`` and with what each lower level computed (tools/verify.py), and runs
the probes: ``pass_verify_print`` prints values of that evaluation and ``pass_verify_save``
writes them to files, at the point of the program where they were called, each time the
evaluation passes there (once per loop iteration, when ``cond`` holds). Without verify on
they do nothing, as in PyPTO.
"""

from __future__ import annotations

import os
import re
import threading
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

import pypto._core as _core
from ..core._tracing import current_probes, current_recorder, maybe_recorder, user_loc
from ..core.tensor import Tensor
from . import verify

_goldens = threading.local()


def set_verify_golden_data(in_out_tensors: Optional[Sequence[Any]] = None,
                           goldens: Optional[Sequence[Any]] = None) -> None:
    """The expected results of the next verified call: ``goldens`` lines up with the kernel's
    parameters (inputs and outputs in order; then its returned tensors), None where there is
    nothing to compare. The next call of a function compiled with ``enable_pass_verify``
    compares its tensor-graph evaluation with them (``pass_verify_error_tol``) and uses them up.
    ``in_out_tensors`` is accepted for PyPTO's non-jit mode; a jit call verifies with its own
    arguments."""
    if goldens is not None:
        out: List[Optional[np.ndarray]] = []
        for i, g in enumerate(goldens):
            if g is None:
                out.append(None)
                continue
            if hasattr(g, "detach"):  # a torch tensor: on the CPU, as PyPTO requires
                if getattr(getattr(g, "device", None), "type", "cpu") not in ("cpu",):
                    raise _core.UserError(f"set_verify_golden_data: goldens[{i}] is on device '{g.device}'; "
                                          "give CPU data (.cpu())")
                g = g.detach()
                g = g.float().numpy() if str(g.dtype) == "torch.bfloat16" else g.numpy()
            out.append(np.asarray(g))
        _goldens.value = out
    if in_out_tensors is not None:
        _goldens.in_out = list(in_out_tensors)


def take_goldens() -> Optional[List[Optional[np.ndarray]]]:
    """The goldens set for the next verified call (and forgets them)."""
    g = getattr(_goldens, "value", None)
    _goldens.value = None
    return g


def _probes() -> Optional[List[Dict[str, Any]]]:
    return current_probes() if maybe_recorder() is not None else None


def _cond(cond: Union[int, bool, _core.SymbolicScalar], api: str) -> Any:
    if isinstance(cond, _core.SymbolicScalar):
        return cond
    if isinstance(cond, (bool, int, np.integer)):
        return int(bool(cond))
    raise _core.UserError(f"pypto.{api}: cond must be an int or a pypto symbolic scalar, got {type(cond).__name__}")


def pass_verify_print(*values: Any, cond: Union[int, _core.SymbolicScalar] = 1) -> None:
    """Prints ``values`` (tensors, symbolic scalars, anything else as its str) from the tensor
    graph's evaluation, at this point of the program, when ``cond`` is nonzero."""
    rec = current_recorder("pass_verify_print")
    probes = _probes()
    items: List[Any] = []
    for v in values:
        if isinstance(v, Tensor):
            items.append(("tensor", v._id, rec.value_name(v._id)))
        elif isinstance(v, (_core.SymbolicScalar, int)) and not isinstance(v, bool):
            items.append(("scalar", v))
        else:
            items.append(("text", str(v)))
    if probes is not None:
        probes.append({"kind": "print", "pos": rec.position(), "items": items,
                       "cond": _cond(cond, "pass_verify_print"), "loc": user_loc()})


_PLACEHOLDER = re.compile(r"\$([A-Za-z0-9_]+)")


def pass_verify_save(tensor: Tensor, fname: Union[str, int, _core.SymbolicScalar],
                     cond: Union[int, _core.SymbolicScalar] = 1, **kwargs: Any) -> None:
    """Writes ``tensor`` from the tensor graph's evaluation to ``<dir>/tensor/<fname>.data`` (its
    bytes) and ``.csv`` (dtype and shape), at this point of the program, when ``cond`` is
    nonzero. ``$name`` in ``fname`` is replaced by the value of ``kwargs[name]`` (a loop index:
    one file per iteration)."""
    rec = current_recorder("pass_verify_save")
    if not isinstance(tensor, Tensor):
        raise _core.UserError(f"pypto.pass_verify_save: the first argument must be a pypto.Tensor, got "
                              f"{type(tensor).__name__}")
    text = str(fname)
    for name in _PLACEHOLDER.findall(text):
        if name not in kwargs:
            raise _core.UserError(f"pypto.pass_verify_save: the placeholder '${name}' of '{text}' has no keyword "
                                  "argument")
    probes = _probes()
    if probes is not None:
        probes.append({"kind": "save", "pos": rec.position(), "tensor": tensor._id, "fname": text,
                       "values": dict(kwargs), "cond": _cond(cond, "pass_verify_save"), "loc": user_loc()})


def verify_call(fn_name: str, compiled: Any, before: List[np.ndarray], outs: List[np.ndarray],
                after: List[np.ndarray], run_mode: str, dbg: Dict[str, Any], vopt: Dict[str, Any],
                stats: Dict[str, Any]) -> None:
    """Checks one call of a jit function: verify_passes (ours: a level that changes the answer
    raises) or PyPTO's pass verify (goldens, the probes, PASS / FAILED / NO_COMPARE lines)."""
    pypto_mode = bool(vopt["enable_pass_verify"])
    save_dir = ""
    if pypto_mode:
        stamp = time.strftime("%Y%m%d%H%M%S")
        save_dir = vopt["pass_verify_save_tensor_dir"] or os.path.join(os.getcwd(), "output", f"output_{stamp}")
    rtol, atol = (list(vopt["pass_verify_error_tol"]) + [1e-3, 1e-3])[:2]
    report = verify.verify(compiled.program, before, outs, after, run_mode, probes=compiled.probes,
                           goldens=take_goldens() if pypto_mode else None, golden_tol=(float(rtol), float(atol)),
                           strict=bool(dbg["verify_passes"]), save_dir=save_dir,
                           passes=vopt["pass_verify_pass_filter"] if pypto_mode else None)
    stats["verify"] = str(report)
    if pypto_mode and vopt["pass_verify_save_tensor"]:
        stats["verify_dir"] = verify.write_report(report, save_dir, fn_name)
    if report.failures:
        warnings.warn(f"@{fn_name}: pass verify: " + "; ".join(report.failures), RuntimeWarning, stacklevel=4)
