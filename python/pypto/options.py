"""Global compile, runtime and debug options; `jit(...)` takes the same as dicts."""

from __future__ import annotations

import copy
import os
from typing import Any, Dict

from . import _core

_PASS_DEFAULTS: Dict[str, Any] = {"machine": "cpu", "reciprocal_division": False}
_RUNTIME_DEFAULTS: Dict[str, Any] = {"workers": 0, "sched_mode": "fifo", "run_mode": "cpu", "timeout": 0}
_DEBUG_DEFAULTS: Dict[str, Any] = {"dump_dir": "", "dump_passes": False, "swimlane": False, "graph": False,
                                   "verify_passes": False}

_version = 0  # bumped on every change, so callers can cache merged options
_pass: Dict[str, Any] = dict(_PASS_DEFAULTS)
_runtime: Dict[str, Any] = dict(_RUNTIME_DEFAULTS)
_debug: Dict[str, Any] = dict(_DEBUG_DEFAULTS)

_VALUES = {
    "sched_mode": ("fifo", "lifo"),
    "run_mode": ("cpu", "interp"),
}


def version() -> int:
    return _version


def _update(kind: str, target: Dict[str, Any], defaults: Dict[str, Any], opts: Dict[str, Any]) -> None:
    for k, v in opts.items():
        if k not in defaults:
            known = ", ".join(sorted(defaults))
            raise _core.UserError(f"unknown {kind} option '{k}'\nhint: known {kind} options are: {known}")
        if k in _VALUES and v not in _VALUES[k]:
            raise _core.UserError(f"{kind} option {k}={v!r} is not one of {_VALUES[k]}")
        if k == "machine" and v not in _core.machine_names():
            raise _core.UserError(f"unknown machine {v!r}\nhint: use one of {_core.machine_names()}")
        _check_type(kind, k, v, defaults[k])
        target[k] = v


def _check_type(kind: str, k: str, v: Any, default: Any) -> None:
    """Each option takes the type of its default; counts and times are not negative."""
    if isinstance(default, bool):
        ok = isinstance(v, bool) or (k == "dump_passes" and isinstance(v, (list, tuple)))
        want = "True or False" + (" (or a list of pass names)" if k == "dump_passes" else "")
    elif isinstance(default, int):
        ok = isinstance(v, (int, float) if k == "timeout" else int) and not isinstance(v, bool) and v >= 0
        want = "a number of seconds >= 0 (0: no timeout)" if k == "timeout" else "an int >= 0"
    elif isinstance(default, str):
        ok, want = isinstance(v, str), "a string"
    else:
        ok, want = True, ""
    if not ok:
        raise _core.UserError(f"{kind} option {k}={v!r} is not valid: it takes {want}")


def set_pass_options(**opts: Any) -> None:
    """Compiler options: ``machine`` ("cpu", the default, this host; "a2a3" or "a5" check that
    the program fits that NPU: UB capacity and 32-byte tile rows),
    ``reciprocal_division`` (default False; True divides by a per-row value, and a scalar by a
    tensor, as a multiply by the reciprocal: within 1.5 ulp of the division, but inf for a
    subnormal divisor; see docs/numerics.md)."""
    global _version
    _update("pass", _pass, _PASS_DEFAULTS, opts)
    _version += 1  # merged options cached by callers are stale now


def set_runtime_options(**opts: Any) -> None:
    """Runtime options: ``workers`` (0 = all cores), ``sched_mode`` ("fifo" | "lifo"),
    ``run_mode`` ("cpu": native generated kernels, the default; "interp": the reference
    interpreter, which needs no compiler), ``timeout`` (seconds; 0 = none: a longer call is
    cancelled with a UserError). Ctrl-C cancels a running call (KeyboardInterrupt) either way."""
    global _version
    _update("runtime", _runtime, _RUNTIME_DEFAULTS, opts)
    _version += 1  # merged options cached by callers are stale now


def set_debug_options(**opts: Any) -> None:
    """Debug outputs: ``dump_dir``, ``dump_passes`` (True or a list of pass names)."""
    global _version
    _update("debug", _debug, _DEBUG_DEFAULTS, opts)
    _version += 1  # merged options cached by callers are stale now


def get_pass_options() -> Dict[str, Any]:
    return dict(_pass)


def get_runtime_options() -> Dict[str, Any]:
    return dict(_runtime)


def get_debug_options() -> Dict[str, Any]:
    return dict(_debug)


def merged(kind: str, local: Dict[str, Any]) -> Dict[str, Any]:
    """Global options of `kind` overridden by a function's own."""
    base, defaults = {"pass": (_pass, _PASS_DEFAULTS), "runtime": (_runtime, _RUNTIME_DEFAULTS),
                      "debug": (_debug, _DEBUG_DEFAULTS)}[kind]
    out = copy.deepcopy(base)
    if kind == "debug" and not out["dump_dir"] and os.environ.get("PYPTO_DUMP_DIR"):
        out["dump_dir"] = os.environ["PYPTO_DUMP_DIR"]
        out["dump_passes"] = True
    _update(kind, out, defaults, local or {})
    return out
