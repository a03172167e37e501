"""Options: compile (pass), runtime, debug, and PyPTO's host / codegen / verify groups.

Every group takes the keys PyPTO documents; the ones that mean nothing on a CPU (NPU scheduling,
stitching, buffer counts, PMU traces, ...) are checked against their documented values, kept, and
recorded in the dumps (``options.json`` beside the pass dumps), but change nothing. Globals are
set with ``set_<group>_options(**kw)``, read with ``get_<group>_options()``, reset with
``reset_options()``; ``@pypto.jit(<group>_options={...})`` overrides them for one function, and
``pypto.options(...)`` for a block of code (a context manager) or a function (a decorator). Any
option given as None goes back to its default (``set_debug_options(dump_dir=None)``).
"""

from __future__ import annotations

import contextlib
import copy
import enum
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pypto._core as _core
from . import ops, pass_config
from .ops import tiles


class RunMode(enum.IntEnum):
    """PyPTO's run modes. NPU runs on this machine's native CPU backend (there is no NPU here:
    see docs/porting.md); SIM is the NPU machine model's simulation."""

    NPU = 0
    SIM = 1


class CompStage(enum.Enum):
    """PyPTO's host option ``compile_stage``: where compilation stops. Accepted and recorded; the
    CPU backend always compiles completely."""

    ALL_COMPLETE = 0
    TENSOR_GRAPH = 1
    TILE_GRAPH = 2
    EXECUTE_GRAPH = 3
    CODEGEN_INSTRUCTION = 4
    CODEGEN_BINARY = 5


@dataclass(frozen=True)
class _Key:
    default: Any
    check: Callable[[Any], bool]
    want: str  # what the key takes, for the error message
    meaningful: bool = True  # False: accepted and recorded, no effect on a CPU


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(lo: int, hi: Optional[int] = None) -> Callable[[Any], bool]:
    return lambda v: _is_int(v) and v >= lo and (hi is None or v <= hi)


def _one_of(*values: Any) -> Callable[[Any], bool]:
    return lambda v: any(v == x and type(v) is type(x) or (_is_int(v) and _is_int(x) and v == x) for x in values)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _nbuffer(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, (str, int)) and _is_int(n) and n >= 1 for k, n in v.items())


def _l1_reuse(v: Any) -> bool:
    """PyPTO's cube_l1_reuse_setting: per key a merge count, or (count, side) with the matrix whose
    L1 block is kept ('left', 'right' or 'auto'). Recorded; the CPU has no L1 to reuse."""
    def entry(n: Any) -> bool:
        if isinstance(n, (tuple, list)) and len(n) == 2:
            return _is_int(n[0]) and n[0] >= 1 and n[1] in ("auto", "left", "right")
        return _is_int(n) and n >= 1
    return isinstance(v, dict) and all(isinstance(k, (str, int)) and entry(n) for k, n in v.items())


def _run_mode(v: Any) -> bool:
    return v in ("cpu", "interp", "sim") or (_is_int(v) and v in (0, 1))


def _timeout(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


def _scope(v: Any) -> bool:
    return _is_int(v) or (isinstance(v, tuple) and len(v) == 3 and _is_int(v[0]) and _bool(v[1]) and _bool(v[2]))


def _str_list(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)


def _tol(v: Any) -> bool:
    return (isinstance(v, (list, tuple)) and len(v) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in v))


_N = False  # the key means nothing on a CPU: accepted, recorded

_GROUPS: Dict[str, Dict[str, _Key]] = {
    "pass": {
        "machine": _Key("cpu", lambda v: v in _core.machine_names(), "a machine name"),
        "reciprocal_division": _Key(False, _bool, "True or False"),
        # PyPTO's pass options (graph partition and buffering on the NPU).
        "vec_nbuffer_setting": _Key({}, _nbuffer, "a dict {key: buffer count >= 1}", _N),
        "cube_l1_reuse_setting": _Key({}, _l1_reuse, "a dict {key: count >= 1 or (count, 'auto' | 'left' | "
                                      "'right')}", _N),
        "cube_nbuffer_setting": _Key({"DEFAULT": 1}, _nbuffer, "a dict {key: buffer count >= 1}", _N),
        "sg_set_scope": _Key(-1, _scope, "an int, or (scope_id, allow_parallel_merge, allow_cross_scope_merge)", _N),
        "auto_mix_partition": _Key(0, _one_of(0, 1), "0 or 1", _N),
        "sg_set_ooo_scope": _Key(-1, lambda v: _is_int(v) and (v == -1 or 1 <= v <= 100000), "-1 or 1..100000", _N),
        "ooo_sched_mode": _Key("", lambda v: v in ("", "GAPMIN", "HLF"), '"", "GAPMIN" or "HLF"', _N),
        "sg_set_tunevf_mode": _Key(0, _one_of(0, 1, 2), "0, 1 or 2", _N),
        "enable_slice": _Key(False, _bool, "True or False", _N),
    },
    "runtime": {
        "workers": _Key(0, _int_in(0), "an int >= 0 (0: all cores)"),
        "sched_mode": _Key("fifo", lambda v: v in ("fifo", "lifo"), '"fifo" or "lifo"'),
        "run_mode": _Key("cpu", _run_mode, '"cpu", "interp", "sim", pypto.RunMode.NPU (= "cpu") or pypto.RunMode.SIM '
                         '(= "sim")'),
        "timeout": _Key(0, _timeout, "a number of seconds >= 0 (0: no timeout)"),
        # PyPTO's runtime options (the NPU's AICPU scheduler and graph stitching).
        "device_sched_mode": _Key(0, _one_of(0, 1, 2, 3), "0, 1, 2 or 3", _N),
        "stitch_function_max_num": _Key(128, _int_in(1, 1024), "an int in 1..1024", _N),
        "max_workspace_kb": _Key(0, _int_in(0, 2147483647), "an int in 0..2147483647", _N),
        "valid_shape_optimize": _Key(0, _one_of(0, 1), "0 or 1", _N),
        "ready_on_host_tensors": _Key([], _str_list, "a list of parameter names", _N),
        "device_sched_parallelism": _Key(1, _int_in(1, 8), "an int in 1..8", _N),
        "launch_sched_aicpu_num": _Key(7, _int_in(1, 7), "an int in 1..7", _N),
        "launch_early_mode": _Key(1, _one_of(0, 1, 2), "0, 1 or 2", _N),
    },
    "debug": {
        "dump_dir": _Key("", _str, "a directory"),
        "dump_passes": _Key(False, lambda v: _bool(v) or _str_list(v), "True or False (or a list of pass names)"),
        "swimlane": _Key(False, _bool, "True or False"),
        "graph": _Key(False, _bool, "True or False"),
        "verify_passes": _Key(False, _bool, "True or False"),
        # PyPTO's debug options: compile_debug_mode 1 dumps every pass (into $PYPTO_DUMP_DIR or
        # ./pypto_dumps); runtime_debug_mode 1 records the swimlane, 4 is the bounds check the
        # CPU runtime always does; dump_pass_graph names the passes to dump.
        "compile_debug_mode": _Key(0, _one_of(0, 1, 2), "0, 1 or 2"),
        "runtime_debug_mode": _Key(0, _one_of(0, 1, 2, 3, 4), "0..4"),
        "dump_pass_graph": _Key([], _str_list, "a list of pass names"),
    },
    "host": {
        "compile_stage": _Key(CompStage.ALL_COMPLETE, lambda v: isinstance(v, CompStage), "a pypto.CompStage", _N),
        "compile_monitor_enable": _Key(1, _one_of(0, 1, 2), "0, 1 or 2", _N),
        "compile_timeout": _Key(600, _int_in(0), "seconds (an int >= 0)", _N),
        "compile_timeout_stage": _Key(0, _int_in(0), "seconds (an int >= 0)", _N),
        "compile_monitor_print_interval": _Key(60, _int_in(1), "seconds (an int >= 1)", _N),
    },
    "codegen": {
        "support_dynamic_aligned": _Key(False, _bool, "True or False", _N),
        "enable_pmu_trace": _Key(False, _bool, "True or False", _N),
    },
    "verify": {
        # enable_pass_verify evaluates the tensor graph with numpy and checks every level against it,
        # the goldens (set_verify_golden_data) with pass_verify_error_tol, runs pass_verify_print /
        # pass_verify_save; pass_verify_save_tensor writes the report folder (pypto/pass_verify.py).
        "enable_pass_verify": _Key(False, _bool, "True or False"),
        "pass_verify_save_tensor": _Key(False, _bool, "True or False"),
        "pass_verify_save_tensor_dir": _Key("", _str, "a directory"),
        # None: every level; "all" too; []: the tensor graph only; names: those passes' levels.
        "pass_verify_pass_filter": _Key(None, lambda v: v is None or _str_list(v), "a list of pass names"),
        "pass_verify_error_tol": _Key([1e-3, 1e-3], _tol, "[rtol, atol]"),
    },
}

_version = 0  # bumped on every change, so callers can cache merged options
_values: Dict[str, Dict[str, Any]] = {}
_matrix_size: List[int] = []


def _defaults(group: str) -> Dict[str, Any]:
    return {k: copy.deepcopy(spec.default) for k, spec in _GROUPS[group].items()}


def _reset() -> None:
    global _version
    for g in _GROUPS:
        _values[g] = _defaults(g)
    _matrix_size.clear()
    _version += 1


_reset()


_operation_options: Dict[str, Any] = {"combine_axis": False}


def operation_options() -> Dict[str, Any]:
    """PyPTO's operation options (pypto.experimental.set_operation_options): recorded, no effect
    on a CPU."""
    return _operation_options


def version() -> int:
    """Changes when anything the merged options depend on changes (the pass configs too)."""
    return _version + pass_config.version()


def bump() -> None:
    """Something the merged options depend on changed (the pass configs of pypto.pass_config)."""
    global _version
    _version += 1


def _check(group: str, k: str, v: Any) -> Any:
    keys = _GROUPS[group]
    if k not in keys:
        raise _core.UserError(f"unknown {group} option '{k}'\nhint: known {group} options are: "
                              + ", ".join(sorted(keys)))
    spec = keys[k]
    if v is None:  # every option takes None as "back to its default"
        return copy.deepcopy(spec.default)
    if not spec.check(v):
        want = f"one of {_core.machine_names()}" if k == "machine" else spec.want
        raise _core.UserError(f"{group} option {k}={v!r} is not valid: it takes {want}")
    return copy.deepcopy(v)


def _update(group: str, target: Dict[str, Any], opts: Dict[str, Any]) -> None:
    for k, v in opts.items():
        target[k] = _check(group, k, v)


def _setter(group: str) -> Callable[..., None]:
    def set_options(**opts: Any) -> None:
        global _version
        _update(group, _values[group], opts)
        _version += 1  # merged options cached by callers are stale now

    return set_options


def _getter(group: str) -> Callable[[], Dict[str, Any]]:
    def get_options() -> Dict[str, Any]:
        return copy.deepcopy(_values[group])

    return get_options


set_pass_options = _setter("pass")
set_pass_options.__doc__ = """Compiler options: ``machine`` ("cpu", the default, this host; "a2a3" or "a5" check that
    the program fits that NPU: UB capacity and 32-byte tile rows), ``reciprocal_division`` (default
    False; True divides by a per-row value, and a scalar by a tensor, as a multiply by the
    reciprocal: within 1.5 ulp, but inf for a subnormal divisor; see docs/numerics.md), and
    PyPTO's NPU partition and buffering keys (accepted, recorded; see docs/porting.md)."""
set_runtime_options = _setter("runtime")
set_runtime_options.__doc__ = """Runtime options: ``workers`` (0 = all cores), ``sched_mode`` ("fifo" | "lifo"),
    ``run_mode`` ("cpu" or pypto.RunMode.NPU: native generated kernels, the default; "interp":
    the reference interpreter, which needs no compiler), ``timeout`` (seconds; 0 = none: a longer
    call is cancelled with a UserError), and PyPTO's NPU scheduler keys (accepted, recorded).
    Ctrl-C cancels a running call (KeyboardInterrupt) either way."""
set_debug_options = _setter("debug")
set_debug_options.__doc__ = """Debug outputs: ``dump_dir``, ``dump_passes`` (True or a list of pass names),
    ``swimlane``, ``graph``, ``verify_passes``; PyPTO's ``compile_debug_mode`` (1: dump every pass),
    ``runtime_debug_mode`` (1: swimlane), ``dump_pass_graph`` (passes to dump)."""
set_host_options = _setter("host")
set_host_options.__doc__ = "PyPTO's host options (compile stage and monitor): accepted and recorded."
set_codegen_options = _setter("codegen")
set_codegen_options.__doc__ = "PyPTO's codegen options (``support_dynamic_aligned``, ``enable_pmu_trace``): recorded."
set_verify_options = _setter("verify")
set_verify_options.__doc__ = ("PyPTO's verify options: ``enable_pass_verify`` checks every IR level against the "
                              "tensor graph's numpy evaluation and the goldens (docs/toolchain.md, Pass verify).")
get_pass_options = _getter("pass")
get_runtime_options = _getter("runtime")
get_debug_options = _getter("debug")
get_host_options = _getter("host")
get_codegen_options = _getter("codegen")
get_verify_options = _getter("verify")


def reset_options() -> None:
    """Every option group back to its defaults, and no tile shapes set outside a function."""
    _reset()
    tiles._DEFAULT_TILES["vec"] = tiles._DEFAULT_TILES["cube"] = None


def set_matrix_size(size: Sequence[int]) -> None:
    """PyPTO's [m, k, n] of a matmul whose NZ-format input was reshaped (0: not given, as PyPTO's
    page attention passes k). Arrays here are always row-major (ND), so it is accepted, checked
    and recorded, but changes nothing."""
    global _version
    if (not isinstance(size, (list, tuple)) or len(size) != 3
            or not all((_is_int(s) and s >= 0) or isinstance(s, _core.SymbolicScalar) for s in size)):
        raise _core.UserError(f"pypto.set_matrix_size({size!r}): it takes [m, k, n], three non-negative ints (0: "
                              "not given) or symbolic sizes in a traced function")
    _matrix_size[:] = [s if _is_int(s) else str(s) for s in size]
    _version += 1


def get_matrix_size() -> List[int]:
    return list(_matrix_size)


def merged(group: str, local: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Global options of `group` overridden by a function's own, with PyPTO's spellings mapped
    onto the keys that act here."""
    out = copy.deepcopy(_values[group])
    _update(group, out, local or {})
    if group == "runtime" and _is_int(out["run_mode"]):
        # RunMode.NPU: this machine's native backend; RunMode.SIM: the NPU machine model (pypto.sim).
        out["run_mode"] = "sim" if out["run_mode"] == RunMode.SIM else "cpu"
    if group == "debug":
        every, named = pass_config.dumped_passes()  # set_pass_config(..., KEY_DUMP_GRAPH, True)
        if named:
            out["dump_pass_graph"] = sorted(set(out["dump_pass_graph"]) | set(named))
        all_passes = bool(os.environ.get("PYPTO_DUMP_DIR") or out["compile_debug_mode"] or every)
        if not out["dump_dir"] and (all_passes or named):  # PyPTO dumps without being given a place
            out["dump_dir"] = os.environ.get("PYPTO_DUMP_DIR") or os.path.join(os.getcwd(), "pypto_dumps")
        if all_passes and out["dump_dir"]:
            out["dump_passes"] = out["dump_passes"] or True
        if out["dump_pass_graph"] and not out["dump_passes"]:
            out["dump_passes"] = list(out["dump_pass_graph"])
        out["swimlane"] = out["swimlane"] or out["runtime_debug_mode"] == 1
    return out


def verify_passes(debug: Dict[str, Any], verify: Dict[str, Any]) -> bool:
    return bool(debug["verify_passes"] or verify["enable_pass_verify"])


def recorded(groups: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The options of a compile as JSON-able data (for options.json in the dump directory)."""
    def plain(v: Any) -> Any:
        if isinstance(v, enum.Enum):
            return v.name
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    out = {g: plain(vals) for g, vals in groups.items()}
    out["matrix_size"] = get_matrix_size()
    out["pass_config"] = pass_config.recorded()
    out["operation"] = dict(_operation_options)
    out["no_effect_on_cpu"] = {g: sorted(k for k, spec in _GROUPS[g].items() if not spec.meaningful)
                               for g in _GROUPS}
    return out


_SCOPE_KEYS = ("pass_options", "runtime_options", "debug_options", "host_options", "codegen_options",
               "verify_options")


class options(contextlib.ContextDecorator):  # noqa: N801 - PyPTO's name
    """``pypto.options(pass_options=..., runtime_options=..., ..., vec_tile_shapes=...,
    cube_tile_shapes=..., matrix_size=...)``: options for a block (``with pypto.options(...):``)
    or for every call of a function (``@pypto.options(...)``); the previous values come back
    after. ``name`` labels the scope; ``operation_options`` and ``conv_tile_shapes`` are accepted.
    Tile shapes given here are the default of functions traced inside the scope."""

    def __init__(self, name: str = "", *, pass_options: Optional[Dict[str, Any]] = None,
                 runtime_options: Optional[Dict[str, Any]] = None, debug_options: Optional[Dict[str, Any]] = None,
                 host_options: Optional[Dict[str, Any]] = None, codegen_options: Optional[Dict[str, Any]] = None,
                 verify_options: Optional[Dict[str, Any]] = None, operation_options: Optional[Dict[str, Any]] = None,
                 vec_tile_shapes: Optional[Sequence[int]] = None, cube_tile_shapes: Optional[Sequence[Any]] = None,
                 conv_tile_shapes: Any = None, matrix_size: Optional[Sequence[int]] = None) -> None:
        self.name = name
        self.groups = {"pass": pass_options, "runtime": runtime_options, "debug": debug_options,
                       "host": host_options, "codegen": codegen_options, "verify": verify_options}
        for g, opts in self.groups.items():  # checked now: a typo fails where it is written
            for k, v in (opts or {}).items():
                _check(g, k, v)
        self.vec_tile_shapes = list(vec_tile_shapes) if vec_tile_shapes is not None else None
        self.cube_tile_shapes = cube_tile_shapes
        self.matrix_size = matrix_size
        self._saved: List[Tuple[Dict[str, Dict[str, Any]], List[int], Any]] = []

    def __enter__(self) -> "options":
        global _version
        self._saved.append((copy.deepcopy(_values), list(_matrix_size), ops._default_tiles()))
        for g, opts in self.groups.items():
            _update(g, _values[g], opts or {})
        if self.matrix_size is not None:
            set_matrix_size(self.matrix_size)
        ops._set_default_tiles(self.vec_tile_shapes, self.cube_tile_shapes)
        _version += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        global _version
        values, matrix, tiles = self._saved.pop()
        _values.clear()
        _values.update(values)
        _matrix_size[:] = matrix
        ops._restore_default_tiles(tiles)
        _version += 1
