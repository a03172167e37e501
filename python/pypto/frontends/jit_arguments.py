"""The arguments of a ``@pypto.jit`` call: binding them to the parameters, converting numpy arrays
and torch tensors (bf16 and the storage formats by their bits), the compile-cache key, and the
checks of shapes, dtypes and aliasing outputs. ``JitArguments`` is the half of ``JitFunction``
(frontends/jit.py) that reads arguments; the other half traces, compiles and runs."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import pypto._core as _core
from ..core import ops
from ..core._aliasing import SharedOutputs, overlap
from ..core._tracing import _format_loc, user_loc
from ..core._dtypes import _TORCH_DTYPES, DT_BF16, STORAGE_DTYPES, PackedDType, as_dtype, to_numpy_dtype
from ..core.tensor import DYNAMIC, STATIC, Tensor

def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


class CompiledFunction:
    """One compiled specialization: the program of every IR level and its runtime."""

    def __init__(self, program: Any, dump_dir: str, writes: Optional[List[bool]] = None) -> None:
        self.program = program
        self.dump_dir = dump_dir
        self.graph_written = False
        self.writes = writes or []  # per parameter: the program writes it (an in-place output)
        self.reshaped = [False] * len(self.writes)  # per parameter: the program reshapes it
        self.reshape_targets: List[Any] = [()] * len(self.writes)  # per parameter: the shapes it reshapes it to
        # What the call returns, in order: ("param", k), the k-th tensor argument itself (a written
        # parameter returned, `out[:] = ...; return out`), or ("result", k), the program's k-th result.
        self.returns: List[Tuple[str, int]] = []
        self.returns_params = False  # some ("param", k) in returns
        self.result_dtypes: List[Any] = []  # of the program's results (bf16 ones come back as uint16 bits)
        self.probes: List[Dict[str, Any]] = []  # pass_verify_print / _save calls (pypto.pass_verify)
        self.bound: List[Callable[[], Any]] = []  # parameters the program added (core._tracing.bind_param)
        # Set when compiled: the function it belongs to and the part of the cache key the
        # arguments give (so a runtime worker runs exactly this program: JitFunction.run_compiled).
        self.function: Any = None
        self.signature: Optional[Tuple[Any, ...]] = None
        self.signature_text = ""  # the arguments it was compiled for, for messages

    @property
    def dumps(self) -> List[Tuple[str, str]]:
        return list(self.program.dumps)


class _Param:
    """One parameter of a jit function: a tensor (with its annotation) or a compile-time value."""

    def __init__(self, name: str, kind: str, ann: Optional[Tensor], default: Any) -> None:
        self.name = name
        self.kind = kind  # "tensor", "value", or "auto" (unannotated: a tensor when given an array)
        self.ann = ann
        self.default = default


def _value_key(name: str, v: Any) -> Any:
    """A compile-time argument as part of the cache key (its type counts: True is not 1)."""
    if v is None or isinstance(v, (bool, int, float, str, complex)):
        return (type(v).__name__, v)
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_value_key(name, x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted((str(k), _value_key(name, x)) for k, x in v.items())))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__qualname__, tuple(_value_key(name, getattr(v, f.name)) for f in dataclasses.fields(v)))
    try:
        hash(v)
    except TypeError:
        raise _core.UserError(f"parameter '{name}': a {type(v).__name__} cannot be a compile-time argument (it is "
                              "not hashable, so calls cannot be told apart)"
                              "\nhint: pass ints, floats, bools, strings, lists/tuples/dicts of them, or a "
                              "dataclass") from None
    return (type(v).__qualname__, v)



class JitArguments:
    """Argument handling of JitFunction (a mixin: it reads the function's `params`, `sig`, `fn`)."""

    def _check_annotation(self, name: str, ann: Tensor) -> None:
        for d in ann.shape or ():
            if isinstance(d, int) and not isinstance(d, bool) and d <= 0:
                raise _core.UserError(
                    f"@pypto.jit {self.fn.__name__}: parameter '{name}' is annotated with shape {tuple(ann.shape)}, "
                    f"which has a dim {d}: dims must be positive"
                    + _format_loc((self.fn.__code__.co_filename, self.fn.__code__.co_firstlineno, 0, ""))
                    + "\nhint: use pypto.DYNAMIC for a dim whose size (0 included) comes from the call")
            if not (d is DYNAMIC or d is STATIC or d is Ellipsis or (isinstance(d, int) and not isinstance(d, bool))):
                raise _core.UserError(f"@pypto.jit {self.fn.__name__}: parameter '{name}': shape entry {d!r} must be "
                                      "an int, pypto.DYNAMIC, pypto.STATIC or ...")
        if ann.shape is not None and sum(d is Ellipsis for d in ann.shape) > 1:
            raise _core.UserError(f"@pypto.jit {self.fn.__name__}: parameter '{name}': at most one ... in a shape")

    def _bind(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> List[Any]:
        """The arguments in parameter order (defaults filled in), or a UserError naming the call."""
        try:
            bound = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise _core.UserError(f"@{self.fn.__name__}{self.sig}: {e}" + _format_loc(user_loc())) from None
        bound.apply_defaults()
        return [bound.arguments[p.name] for p in self.params]

    @staticmethod
    def _is_array(a: Any) -> bool:
        return isinstance(a, np.ndarray) or _is_torch(a)

    def _split(self, values: List[Any], shapes_ok: bool = False
               ) -> Tuple[List[_Param], List[np.ndarray], List[Any], List[Any]]:
        """(tensor params, their arrays, their dtypes, every argument with arrays converted)."""
        tparams: List[_Param] = []
        arrays: List[np.ndarray] = []
        dtypes: List[Any] = []
        call: List[Any] = []
        for p, v in zip(self.params, values):
            if p.kind == "tensor" or (p.kind == "auto" and self._is_array(v)):
                a, dt = self._as_array(v, p, shapes_ok)
                tparams.append(p)
                arrays.append(a)
                dtypes.append(dt)
                call.append(a)
            else:
                call.append(v)
        return tparams, arrays, dtypes, call

    @staticmethod
    def _dims(p: _Param, a: np.ndarray) -> List[Any]:
        """The parameter's dims for this array: its annotation with ``...`` and an inferred shape
        (``pypto.Tensor()``, ``Tensor([], dtype)``, an unannotated parameter) as STATIC dims."""
        spec = p.ann.shape if p.ann is not None else None
        if spec is None:
            return [STATIC] * a.ndim
        spec = list(spec)
        if Ellipsis in spec:
            i = spec.index(Ellipsis)
            fill = max(0, a.ndim - (len(spec) - 1))
            spec = spec[:i] + [STATIC] * fill + spec[i + 1:]
        if len(spec) != a.ndim and spec and all(d is STATIC for d in spec):
            # Every dim from the argument: its rank too (PyPTO's model code annotates a
            # [1, 1, d] weight as Tensor([STATIC, STATIC])).
            return [STATIC] * a.ndim
        if len(spec) < a.ndim and any(d is DYNAMIC or d is STATIC for d in spec):
            # PyPTO's "status shape" (DYNAMIC / STATIC entries) takes an argument of more dims:
            # the extra trailing dims are the argument's, static (its indexer passes the
            # [t, k / 32] E8M0 scales annotated so as [t, k / 64, 2]).
            return spec + [STATIC] * (a.ndim - len(spec))
        return spec

    def _key(self, tparams: List[_Param], arrays: List[np.ndarray], dtypes: List[Any],
             values: List[Any]) -> Tuple[Any, ...]:
        key: List[Any] = []
        for p, a, dt in zip(tparams, arrays, dtypes):
            dims = self._dims(p, a)
            key.append((p.name, dt, len(dims),
                        tuple(a.shape[i] if i < a.ndim else None for i, d in enumerate(dims) if d is STATIC)))
        tnames = {p.name for p in tparams}
        for p, v in zip(self.params, values):
            if p.name in tnames:
                continue
            if self._is_array(v):
                ann = self.sig.parameters[p.name].annotation
                ann = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
                raise _core.UserError(f"@{self.fn.__name__}: parameter '{p.name}' is annotated {ann}, so it takes a "
                                      f"compile-time value, but an array was passed" + _format_loc(user_loc())
                                      + "\nhint: annotate it pypto.Tensor(...) (or pypto.Tensor() to take shape and "
                                      "dtype from the argument)")
            key.append((p.name, _value_key(p.name, v)))
        key.append(self._compile_options())
        key.append(ops._default_tiles())
        return tuple(key)

    def _packed_dim(self, p: _Param, d: Any) -> Any:
        """The byte count of a logical FP4 dim (two values per byte)."""
        if not isinstance(d, int):
            return d
        if d % 2:
            raise _core.UserError(f"@{self.fn.__name__}: parameter '{p.name}' is {p.ann.dtype!r} with the odd last "
                                  f"dim {d}: two values share each byte, so the logical last dim is even"
                                  + _format_loc(user_loc()))
        return d // 2

    def _as_array(self, a: Any, p: _Param, shapes_ok: bool = False) -> Tuple[np.ndarray, Any]:
        """The argument of tensor parameter `p` as a numpy array, and its pypto dtype (the
        annotated one, checked; or the array's, for an unannotated dtype)."""
        want = p.ann.dtype if p.ann is not None else None
        framework, torch_dtype = "numpy array", ""
        if _is_torch(a):
            import torch
            t = a.detach().cpu()
            framework, torch_dtype = "torch tensor", str(t.dtype)
            if t.dtype == torch.bfloat16:
                # numpy has no bf16: its bit patterns go in as uint16, which only a bf16
                # parameter takes (int16 stays int16: no bits are reinterpreted).
                if want is not None and want != DT_BF16:
                    raise self._dtype_error(p, "a torch tensor of dtype torch.bfloat16", tuple(t.shape))
                return t.view(torch.int16).numpy().view(np.uint16), DT_BF16
            fp8 = _TORCH_DTYPES.get(str(t.dtype))
            if fp8 in STORAGE_DTYPES:  # the MX formats go in as their bytes
                if isinstance(want, PackedDType) and want.storage == fp8:
                    return t.view(torch.uint8).numpy(), want  # torch's float4_e2m1fn_x2 for DT_FP4_E2M1
                if want is not None and want != fp8:
                    raise self._dtype_error(p, f"a torch tensor of dtype {t.dtype}", tuple(t.shape))
                return t.view(torch.uint8).numpy(), fp8
            a = t.numpy()
        if isinstance(a, np.generic):  # a numpy scalar (np.float32(3)) is a 0-d array
            a = np.asarray(a)
            a.setflags(write=False)  # a value, not memory: a write into it would be lost
        if isinstance(a, np.ndarray):
            if want == DT_BF16 and a.dtype == np.uint16:
                return a, DT_BF16
            if (want in STORAGE_DTYPES or isinstance(want, PackedDType)) and a.dtype == np.uint8:
                return a, want  # an MX format's bytes
            try:
                got = as_dtype(a.dtype)
            except TypeError:
                got = None
            if got is None or (want is not None and got != want):
                what = ("bf16 bit patterns (numpy uint16)" if a.dtype == np.uint16 and want is not None
                        else f"a {framework} of dtype {torch_dtype or a.dtype}"
                        + (f" ({_core.dtype_name(got)})" if got is not None else ""))
                raise self._dtype_error(p, what, a.shape)
            return a, got
        if shapes_ok and isinstance(a, (list, tuple)) and all(isinstance(x, int) for x in a) and want is not None:
            # a shape, for compile(); bf16 is held as its uint16 bit patterns
            return np.empty(a, dtype=np.uint16 if want == DT_BF16 else to_numpy_dtype(want)), want
        raise _core.UserError(f"@{self.fn.__name__}: argument '{p.name}' must be a numpy array or a torch tensor, "
                              f"got {type(a).__name__}" + _format_loc(user_loc()))

    def _guard_outputs(self, compiled: CompiledFunction, arrays: List[np.ndarray],
                       names: List[str]) -> Tuple[List[np.ndarray], SharedOutputs]:
        """A parameter the program writes must be writable; an input that overlaps an output (but
        is not the very same array) is copied first, as numpy's ufuncs do; outputs that overlap
        each other run on copies merged back after the call (SharedOutputs)."""
        for i, a in enumerate(arrays):
            if compiled.writes[i] and not a.flags.writeable:
                raise _core.UserError(f"@{self.fn.__name__}: parameter '{names[i]}' is written by the function (an "
                                      f"in-place output) but the array passed is read-only" + _format_loc(user_loc())
                                      + "\nhint: pass a writable array, e.g. numpy.array(x) (a copy); a numpy scalar "
                                      "such as numpy.float32(0) is a value, so pass numpy.array(0, numpy.float32)")
        out = list(arrays)
        shared = SharedOutputs()
        for i, o in enumerate(arrays):
            if not compiled.writes[i]:
                continue
            for j, a in enumerate(arrays):
                if j == i or not overlap(o, a):
                    continue
                same = (o.__array_interface__["data"][0] == a.__array_interface__["data"][0]
                        and o.shape == a.shape and o.strides == a.strides and o.dtype == a.dtype)
                if same:
                    continue  # x and out the very same array: an in-place update, which works
                if compiled.writes[j]:
                    if i < j:
                        shared.add(out, arrays, i, j)
                elif out[j] is a:
                    out[j] = np.array(a)  # read before any write: a copy, as numpy does
        return out, shared

    def _dtype_error(self, p: _Param, what: str, shape: Any) -> Exception:
        if p.ann is None or p.ann.dtype is None:  # the dtype comes from the argument, and pypto has none for it
            return _core.UserError(f"@{self.fn.__name__}: parameter '{p.name}' got {what} of shape {tuple(shape)}, "
                                   "a dtype pypto does not support" + _format_loc(user_loc())
                                   + "\nhint: convert it, e.g. x.float() or x.astype(numpy.float32)")
        want = _core.dtype_name(p.ann.dtype)
        if p.ann.dtype == DT_BF16:
            hint = "pass a torch.bfloat16 tensor, or bf16 bit patterns as numpy uint16: pypto.to_bf16(x)"
        elif what.startswith("bf16 bit patterns") or "dtype" not in what:
            hint = "pass an array of a dtype pypto supports"
        else:
            hint = f"convert it, e.g. x.astype(numpy.{np.dtype(to_numpy_dtype(p.ann.dtype)).name})"
        return _core.UserError(f"@{self.fn.__name__}: parameter '{p.name}' expects dtype {want}, got {what} of shape "
                               f"{tuple(shape)}, which does not match the dtype of the annotation"
                               + _format_loc(user_loc()) + f"\nhint: {hint}")
