"""`pypto.Tensor`: a signature annotation, and the traced value inside a @pypto.jit function."""

from __future__ import annotations

from ._enums import CachePolicy, TileOpFormat  # noqa: F401 - PyPTO names, re-exported here
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import pypto._core as _core
from .._core import DataType, SymbolicScalar
from ._dtypes import DT_FP32, PackedDType, UnsupportedDType, check_dtype
from ._tracing import (_format_loc, automatic_tiles, current_recorder, maybe_recorder, note_write, read_point,
                       user_loc)
from .symbolic_api import SymbolicPrintWarning, sym_text as _sym_text  # noqa: F401 - re-exported
from ._unavailable import Unavailable


class _OpsModule:
    """The tensor ops (pypto.core.ops), which build on this module: they bind themselves here when
    they load (bind_ops), so Tensor's operators reach them without an import running back up."""

    module: Any = None

    def __getattr__(self, name: str) -> Any:
        if self.module is None:
            raise _core.InternalError("pypto.core.ops is not loaded yet (import pypto first)")
        return getattr(self.module, name)


ops: Any = _OpsModule()


def bind_ops(module: Any) -> None:
    """Called by pypto.core.ops once its ops exist."""
    ops.module = module


Dim = Union[int, SymbolicScalar]


class _DimMarker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"pypto.{self.name}"


DYNAMIC = _DimMarker("DYNAMIC")  # any size at run time, compiled once
DYN = DYNAMIC
STATIC = _DimMarker("STATIC")  # size taken from the first call; a new size recompiles


class _DeclaredShape(tuple):
    """A declared shape: a tuple that also equals the list of its dims (PyPTO returns lists)."""

    def __eq__(self, other: object) -> bool:
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


def _dim(d: SymbolicScalar) -> Dim:
    return int(d) if d.is_const() else d


class Tensor:
    """A tensor of a PyPTO function.

    As an annotation it declares a parameter or result, in any of PyPTO's forms:
    ``pypto.Tensor(shape, dtype)``, ``pypto.Tensor[[shape], dtype]``, ``pypto.Tensor[...]`` and
    ``pypto.Tensor()`` (shape and dtype from the argument, a new shape or dtype compiles again),
    ``pypto.Tensor([], dtype)`` (shape from the argument). Shape entries are ints,
    ``pypto.DYNAMIC`` (any size, compiled once), ``pypto.STATIC`` (size from the call; a new size
    compiles again) and ``...`` (the remaining dims, STATIC). ``format=`` (TileOpFormat) and
    ``name=`` are accepted. While tracing, tensors are values of the recorded graph and support
    arithmetic, slicing (views) and ``out[:] = expr``.
    """

    def __init__(self, shape: Optional[Sequence[Any]] = None, dtype: Optional[DataType] = None,
                 name: Optional[str] = None, *, format: Optional[TileOpFormat] = None,  # noqa: A002 - PyPTO's name
                 _rec: Any = None, _id: int = -1, _annotation: bool = False) -> None:
        if _rec is None and not _annotation and shape is not None and shape is not Ellipsis:
            rec = maybe_recorder()
            if rec is not None and isinstance(shape, (list, tuple)) and len(shape) > 0:
                # `pypto.Tensor(shape, dtype)` in a traced body: a new tensor, as pypto.tensor.
                _rec = rec
                dt = check_dtype(dtype, "pypto.Tensor", _loc_suffix()) if dtype is not None else DT_FP32
                _id = rec.create_tensor(list(shape), dt, name or "",
                                        user_loc())
        self._rec = _rec
        self._vid = _id  # the recorder's value id (`_id` reads it as an operand)
        if _rec is None:
            if shape is not None and not isinstance(shape, (list, tuple)):
                if shape is Ellipsis:
                    shape = None
                else:
                    raise _core.UserError(f"pypto.Tensor: the shape must be a list or tuple, got {shape!r}"
                                          + _loc_suffix())
            # An empty shape list means "from the argument" (PyPTO skips the rank check).
            self._spec: Optional[Tuple[Any, ...]] = tuple(shape) if shape else None
            if dtype is not None and not isinstance(dtype, (DataType, PackedDType)):
                check_dtype(dtype, "pypto.Tensor", _loc_suffix())
                raise _core.UserError(f"pypto.Tensor: dtype must be a pypto dtype such as pypto.DT_FP32, got "
                                      f"{dtype!r}" + _loc_suffix())
            self._dtype = dtype
            self._name = name
            self._format = format

    @classmethod
    def __class_getitem__(cls, item: Any) -> "Tensor":
        """``pypto.Tensor[[shape], dtype]``, ``pypto.Tensor[...]``, ``pypto.Tensor[[shape]]``."""
        items = item if isinstance(item, tuple) and not (item and all(
            isinstance(x, int) or x is DYNAMIC or x is STATIC for x in item)) else (item,)
        shape: Optional[Sequence[Any]] = None
        kw: Dict[str, Any] = {}
        view: Any = None
        for x in items:
            if x is Ellipsis:
                shape = None
            elif isinstance(x, (list, tuple)):
                shape = list(x)
            elif isinstance(x, (DataType, PackedDType)):
                kw["dtype"] = x
            elif isinstance(x, UnsupportedDType):
                check_dtype(x, "pypto.Tensor", _loc_suffix())
            elif isinstance(x, TileOpFormat):
                kw["format"] = x
            elif isinstance(x, str):
                kw["name"] = x
            elif isinstance(x, dict):
                shape = x.get("shape", shape)
                kw.update({k: v for k, v in x.items() if k in ("dtype", "name", "format")})
            elif getattr(x, "is_tensor_view", False):
                view = x  # hw-native-sys's pl.TensorView(valid_shape=, layout=): kept on the annotation
            else:
                raise _core.UserError(f"pypto.Tensor[...]: {x!r} is not a shape, dtype, format or name" + _loc_suffix())
        ann = cls(shape, _annotation=True, **kw)
        if view is not None:
            ann._tensor_view = view
        return ann

    # Set by a runtime loop on the value a name had before it (ops.loops.CarriedValues): [read?].
    _watch: Optional[List[bool]] = None
    _reshape_of: Optional["Tensor"] = None  # the tensor a reshape of it was made from
    _reshaped = False  # a reshape of it was made (a parameter then needs a dense array)
    _reshape_targets: Tuple[Any, ...] = ()  # the shapes it was reshaped to (a strided argument may view them)
    _squeezed_from: Optional[Tuple["Tensor", List[int]]] = None  # t[i, ...]: (the window, its dropped dims)
    _squeezed_at: Tuple[int, int] = (0, 0)  # the read_point of _vid, for a squeezed window
    _placeholder = False  # `pypto.tensor()` in a traced body, until `.move(value)` gives it one
    # A DT_FP4_E2M1 parameter's values (ops.mx_codec.logical_values) and views of them: the packed
    # dtype they hold (an MX operand of scaled_mm), and what they are when a write is refused.
    _mx_values: Optional[DataType] = None
    _read_only: Optional[str] = None

    def check_writable(self, what: str) -> None:
        """A UserError for a write into values that are not memory of the program's (the
        decoded values of a DT_FP4_E2M1 parameter)."""
        if self._read_only:
            raise _core.UserError(f"{what}: {self._read_only} cannot be written here" + _loc_suffix()
                                  + "\nhint: write the packed bytes through a pypto.DT_FP4_E2M1X2 parameter")

    def _check_bound(self) -> None:
        if self._placeholder:
            raise _core.UserError("a pypto.tensor() made without a shape holds nothing until .move(value) gives it "
                                  "one" + _loc_suffix())

    @property
    def _id(self) -> int:
        """The value id, as an op's operand: marks a watched value as read; a squeezed window
        (`state = states[b, h]`) is read again where it is used, once per scope and write."""
        self._check_bound()
        if self._watch is not None:
            self._watch[0] = True
        if self._squeezed_from is not None:
            at = read_point()
            if at != self._squeezed_at:
                # A window is memory: used in a loop body or after a write (`state[:] = v`), it
                # must be read there, not at the `states[b, h]` line (a stale copy otherwise).
                self._vid = self._squeeze_window()._vid
                self._squeezed_at = at
        return self._vid

    def _squeeze_window(self) -> "Tensor":
        window, dropped = self._squeezed_from  # type: ignore[misc]
        with automatic_tiles("slicing"):  # the window's rank, not the program's tile's
            return ops.squeeze(window, dropped if len(dropped) > 1 else dropped[0])

    @_id.setter
    def _id(self, v: int) -> None:
        self._vid = v

    # --- annotation / metadata -----------------------------------------------------------
    @property
    def is_traced(self) -> bool:
        return self._rec is not None

    @property
    def shape(self) -> Any:
        """The shape; for an annotation, its declared dims (None when taken from the argument)."""
        if self._rec is None:
            return None if self._spec is None else _DeclaredShape(self._spec)
        self._check_bound()
        return [_dim(d) for d in self._rec.value_shape(self._vid)]  # a list, as PyPTO returns

    @property
    def valid_shape(self) -> Any:
        """PyPTO's valid extent of each dim. A tensor here holds only its valid part (a view with
        ``valid_shape`` has that shape), so this is ``shape``."""
        return self.shape

    @property
    def dtype(self) -> DataType:
        return self._dtype if self._rec is None else self._rec.value_dtype(self._vid)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dim(self) -> "_Rank":
        """The rank, as PyPTO's property (``t.dim == 2``); ``t.dim()`` (torch's spelling) works too."""
        return _Rank(self.ndim)

    @property
    def name(self) -> Optional[str]:
        return self._name if self._rec is None else self._rec.value_name(self._vid)

    @property
    def id(self) -> int:
        """PyPTO's unique tensor id: here the value's id in the traced function (an annotation: its
        Python identity)."""
        return self._vid if self._rec is not None else id(self)

    @property
    def format(self) -> TileOpFormat:
        """The storage format the annotation declared (TILEOP_ND unless said): arrays here are ND."""
        return getattr(self, "_format", None) or TileOpFormat.TILEOP_ND

    def set_cache_policy(self, policy: CachePolicy, value: bool) -> None:
        """PyPTO's L2 hint (``CachePolicy.NONE_CACHEABLE``): recorded on the tensor, no effect on the
        host's caches."""
        if not isinstance(policy, CachePolicy) or not isinstance(value, bool):
            raise _core.UserError(f"Tensor.set_cache_policy(policy, value): a pypto.CachePolicy and a bool, got "
                                  f"{policy!r}, {value!r}" + _loc_suffix())
        policies = dict(getattr(self, "_cache_policy", {}))
        policies[policy] = value
        self._cache_policy = policies

    def get_cache_policy(self, policy: CachePolicy) -> bool:
        """What ``set_cache_policy`` set for ``policy`` (False unless set)."""
        return bool(getattr(self, "_cache_policy", {}).get(policy, False))

    def __repr__(self) -> str:
        if self._rec is None and self._spec is None:
            return f"pypto.Tensor(None, {self.dtype})"
        shape = ", ".join(_sym_text(d) if isinstance(d, SymbolicScalar) else str(d) for d in self.shape)
        return f"pypto.Tensor(({shape}), {self.dtype})" + (f" %{self.name}" if self.is_traced else "")

    # --- arithmetic ------------------------------------------------------------------------
    def __add__(self, o: Any) -> "Tensor":
        return ops.add(self, o)

    def __radd__(self, o: Any) -> "Tensor":
        return ops.add(self, o)

    def __sub__(self, o: Any) -> "Tensor":
        return ops.sub(self, o)

    def __rsub__(self, o: Any) -> "Tensor":
        return ops.sub(o, self)

    def __mul__(self, o: Any) -> "Tensor":
        return ops.mul(self, o)

    def __rmul__(self, o: Any) -> "Tensor":
        return ops.mul(self, o)

    def __matmul__(self, o: Any) -> "Tensor":
        """``a @ b``: pypto.matmul(a, b), the result in a's dtype."""
        return ops.matmul(self, o)

    def __truediv__(self, o: Any) -> "Tensor":
        return ops.div(self, o)

    def __rtruediv__(self, o: Any) -> "Tensor":
        return ops.div(o, self)  # a division (TDIVS scalar/tile), not reciprocal(self) * o

    def __pow__(self, o: Any) -> "Tensor":
        return ops.pow(self, o)

    def __rpow__(self, o: Any) -> "Tensor":
        return ops.pow(o, self)

    def __floordiv__(self, o: Any) -> "Tensor":
        return ops.floor_div(self, o)

    def __rfloordiv__(self, o: Any) -> "Tensor":
        return ops.floor_div(o, self)

    def __mod__(self, o: Any) -> "Tensor":
        return ops.remainder(self, o)

    def __rmod__(self, o: Any) -> "Tensor":
        return ops.remainder(o, self)

    def __and__(self, o: Any) -> "Tensor":
        return ops.bitwise_and(self, o)

    __rand__ = __and__

    def __or__(self, o: Any) -> "Tensor":
        return ops.bitwise_or(self, o)

    __ror__ = __or__

    def __xor__(self, o: Any) -> "Tensor":
        return ops.bitwise_xor(self, o)

    __rxor__ = __xor__

    def __invert__(self) -> "Tensor":
        return ops.bitwise_not(self)

    def __lshift__(self, o: Any) -> "Tensor":
        return ops.bitwise_left_shift(self, o)

    def __rlshift__(self, o: Any) -> "Tensor":
        return ops.bitwise_left_shift(o, self)

    def __rshift__(self, o: Any) -> "Tensor":
        return ops.bitwise_right_shift(self, o)

    def __rrshift__(self, o: Any) -> "Tensor":
        return ops.bitwise_right_shift(o, self)

    # Comparisons of traced tensors are ops (DT_BOOL results); annotations compare by identity.
    def _compare(self, op: str, o: Any) -> Any:
        if not self.is_traced or not (isinstance(o, (Tensor, int, float, SymbolicScalar)) and not isinstance(o, bool)):
            return NotImplemented
        return getattr(ops, op)(self, o)

    def __lt__(self, o: Any) -> Any:
        return self._compare("lt", o)

    def __le__(self, o: Any) -> Any:
        return self._compare("le", o)

    def __gt__(self, o: Any) -> Any:
        return self._compare("gt", o)

    def __ge__(self, o: Any) -> Any:
        return self._compare("ge", o)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        r = self._compare("eq", o)
        return (self is o) if r is NotImplemented else r

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        r = self._compare("ne", o)
        return (self is not o) if r is NotImplemented else r

    __hash__ = object.__hash__

    def __neg__(self) -> "Tensor":
        return ops.neg(self)

    def __abs__(self) -> "Tensor":
        return ops.abs(self)

    def __pos__(self) -> "Tensor":
        """``+x``: x itself, as torch's unary plus."""
        self._traced_rec("unary +")
        return self

    def __bool__(self) -> bool:
        raise _core.UserError(
            "the truth value of a pypto.Tensor is only known when the kernel runs"
            + _loc_suffix())

    def __len__(self) -> int:
        d = self.shape[0]
        if isinstance(d, int):
            return d
        raise _core.UserError(f"len() of a tensor with a dynamic first dim ({d})" + _loc_suffix())

    def __iter__(self) -> Any:
        raise _core.UserError("iterating over a pypto.Tensor is not supported; use pypto.loop"
                              + _loc_suffix())

    # numpy on a traced tensor: numpy cannot compute on it (it is a value of the graph being
    # recorded, without data); say so, and which pypto op to use, instead of numpy's own attempt
    # to iterate over it.
    __array_priority__ = 1000

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = getattr(ufunc, "__name__", str(ufunc))
        alias = {"add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div", "divide": "div",
                 "negative": "neg", "absolute": "abs", "sqrt": "sqrt", "exp": "exp", "log": "log",
                 "maximum": "maximum", "minimum": "minimum", "reciprocal": "reciprocal"}.get(name)
        import numpy as np
        if (method == "__call__" and not kwargs and alias and hasattr(ops, alias)
                and any(isinstance(x, np.number) for x in inputs)
                and all(isinstance(x, (Tensor, int, float, np.number)) for x in inputs)):
            # numpy scalars with a traced tensor (np.float32(2) * x): the pypto op, as for floats
            return getattr(ops, alias)(*[x.item() if isinstance(x, np.number) else x for x in inputs])
        arrays = [type(x).__name__ for x in inputs if not isinstance(x, (Tensor, int, float))]
        if arrays:
            why = (f"numpy.{name} mixes a {arrays[0]} with a traced pypto.Tensor: numpy data cannot enter a "
                   "function being traced")
            hint = "pass the array as a parameter of the @pypto.jit function (a pypto.Tensor annotation)"
        else:
            why = f"numpy.{name} cannot compute on a traced pypto.Tensor (it has no data while it is traced)"
            hint = (f"use pypto.{alias}" if alias and hasattr(ops, alias) else "use the pypto op of the same name")
        raise _core.UserError(why + _loc_suffix() + "\nhint: " + hint)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = getattr(func, "__name__", str(func))
        raise _core.UserError(f"numpy.{name} cannot take a traced pypto.Tensor" + _loc_suffix()
                              + f"\nhint: use the pypto op (e.g. pypto.{name}) inside a @pypto.jit function")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise _core.UserError("a traced pypto.Tensor cannot become a numpy array (it has no data while it is "
                              "traced)" + _loc_suffix() + "\nhint: return it from the @pypto.jit function instead")

    # --- views ----------------------------------------------------------------------------------
    def _expand_key(self, key: Any) -> Tuple[Any, ...]:
        """The key with its Ellipsis and trailing dims spelled out as full slices."""
        shape = self.shape
        if not isinstance(key, tuple):
            key = (key,)
        if sum(1 for k in key if k is Ellipsis) > 1:
            raise _core.UserError("an index can hold only one Ellipsis (...)" + _loc_suffix())
        if any(k is Ellipsis for k in key):
            i = next(j for j, k in enumerate(key) if k is Ellipsis)
            fill = len(shape) - (len(key) - 1)
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        if len(key) < len(shape):
            key = key + (slice(None),) * (len(shape) - len(key))
        if len(key) > len(shape):
            raise _core.UserError(
                f"too many indices ({len(key)}) for a tensor of rank {len(shape)} {self!r}" + _loc_suffix())
        return key

    def _window(self, key: Any, allow_index: bool = True) -> Tuple[List[Dim], List[Dim]]:
        """Offsets and extents of the window `key` selects (an integer index: extent 1)."""
        shape = self.shape
        key = self._expand_key(key)
        offsets: List[Dim] = []
        extents: List[Dim] = []
        for d, (k, n) in enumerate(zip(key, shape)):
            if not isinstance(k, slice):
                if not allow_index:
                    raise _core.UserError(
                        f"index {k!r} in dim {d}: only slices are supported here (an integer would drop the dim)"
                        + _loc_suffix(), )
                offsets.append(self._index(k, n, d))
                extents.append(1)
                continue
            if k.step not in (None, 1):
                raise _core.UserError(f"slice step {k.step} in dim {d}: only step 1 is supported" + _loc_suffix())
            start = 0 if k.start is None else k.start
            stop = n if k.stop is None else k.stop
            if isinstance(start, int) and start < 0 and isinstance(n, int):
                start += n
            if isinstance(stop, int) and stop < 0 and isinstance(n, int):
                stop += n
            ext = _core.to_sym(stop) - start
            offsets.append(start)
            extents.append(_dim(ext))
        return offsets, extents

    def __getitem__(self, key: Any) -> Any:
        """``t[a:b, ...]`` is a view; ``t[i, 1:3]`` a view without the integer-indexed dims (PyPTO:
        view, then reshape); ``t[i, j]`` with an index per dim, of an integer tensor, is that element
        as a SymbolicScalar, read when the program gets there (PyPTO's single-element access)."""
        rec = self._traced_rec("slicing")
        keys = key if isinstance(key, tuple) else (key,)
        scalar = [not isinstance(k, slice) and k is not Ellipsis for k in keys]
        if Ellipsis not in keys and len(keys) == len(self.shape) and all(scalar):
            index = [self._index(k, n, d) for d, (k, n) in enumerate(zip(keys, self.shape))]
            return rec.read_scalar(self._id, index, user_loc())
        offsets, extents = self._window(key)
        dropped = self._dropped_dims(key)
        # A slice reaching past the tensor holds the part inside (PyPTO's valid shape); an index
        # stays one element, checked when the call reaches it.
        shape = list(extents)
        clipped = clipped_extents(rec, self._id, offsets, extents, dynamic_dims=True)  # numpy's slicing
        extents = [e if d in dropped else c for d, (e, c) in enumerate(zip(extents, clipped))]
        out = Tensor(_rec=rec, _id=rec.view(self._id, offsets, extents, user_loc()))
        out._mx_values, out._read_only = self._mx_values, self._read_only
        if any(a is not b for a, b in zip(extents, shape)):
            out._padded_shape = shape  # assigned to a window of this shape, it writes its valid part
        if dropped:
            window = out
            out = ops.squeeze(out, dropped if len(dropped) > 1 else dropped[0])
            out._squeezed_from = (window, dropped)  # `t[i, j][:] = v` writes through to the window
            out._squeezed_at = read_point()
        return out

    def _index(self, k: Any, n: Any, d: int) -> Any:
        if isinstance(k, bool) or not isinstance(k, (int, _core.SymbolicScalar)):
            raise _core.UserError(f"index {k!r} in dim {d}: an index is an int, a SymbolicScalar or a slice"
                                  + _loc_suffix())
        if isinstance(k, int) and k < 0 and isinstance(n, int):
            k += n
        return k

    def _dropped_dims(self, key: Any) -> List[int]:
        """The dims an integer index selects (they leave the result, as in numpy and PyPTO)."""
        keys = self._expand_key(key)
        return [d for d, k in enumerate(keys) if not isinstance(k, slice)]

    def __setitem__(self, key: Any, value: Any) -> None:
        rec = self._traced_rec("assignment")
        self.check_writable("assignment")
        note_write()
        whole = all((isinstance(k, slice) and k.start is None and k.stop is None and k.step is None)
                    or k is Ellipsis for k in (key if isinstance(key, tuple) else (key,)))
        if whole and not self.shape and isinstance(value, Tensor) and value.is_traced:
            # A rank-0 output: `out[:] = v` (PyPTO's form on any rank) writes v's one element.
            if value.shape:
                if any(not (isinstance(d, int) and d == 1) for d in value.shape):
                    raise _core.UserError(f"assigning a tensor of shape {tuple(value.shape)} to the 0-d tensor "
                                          f"%{self.name}: it must hold one element" + _loc_suffix())
                with automatic_tiles("assignment"):
                    value = ops.reshape(value, [])
            rec.assemble(value._id, [], self._vid, user_loc())
            return
        if self._squeezed_from is not None and isinstance(value, Tensor):
            # `state = states[b, h]` (a window without its indexed dims), then `state[:] = v` or
            # `state[0:2, :] = v`: the write goes to the window of `states`, as PyPTO's tensors
            # share memory with it (the dropped dims are index 0 of the window).
            window, dropped = self._squeezed_from
            if whole:
                with automatic_tiles("assignment"):  # the window's rank, not the program's tile's
                    for d in dropped:
                        value = ops.unsqueeze(value, d)
                    window[(slice(None),) * len(window.shape)] = value
                return
            inner = iter(self._expand_key(key))
            window[tuple(0 if d in dropped else next(inner) for d in range(len(window.shape)))] = value
            return
        if rec.root_kind(self._vid) == "temp" and self.shape:
            self._materialize()
        offsets, extents = self._window(key)
        # PyPTO: out[a:, ...] = v writes v at offset a (an open-ended slice takes v's extent).
        keys = key if isinstance(key, tuple) else (key,)
        if isinstance(value, Tensor) and Ellipsis not in keys:
            for d, k in enumerate(keys):
                if isinstance(k, slice) and k.start is not None and k.stop is None and d < len(value.shape):
                    extents[d] = value.shape[d]
        elif isinstance(value, Tensor) and keys.count(Ellipsis) == 1:
            i = keys.index(Ellipsis)
            for d, k in enumerate(keys[:i]):
                if isinstance(k, slice) and k.start is not None and k.stop is None and d < len(value.shape):
                    extents[d] = value.shape[d]
        if isinstance(value, (int, float, _core.SymbolicScalar)) and not isinstance(value, bool):
            # t[i, j] = n (PyPTO writes a scalar, a rank id or a count, into an element): the window
            # filled with it.
            with automatic_tiles("assignment"):
                value = ops.full(list(extents), value, self.dtype)
        if not isinstance(value, Tensor):
            if isinstance(value, Unavailable):
                value.fail()  # a name the runtime branch before left without one value
            raise _core.UserError(
                f"assigning {type(value).__name__} to a tensor window: only tensors can be assigned"
                + _loc_suffix(), )
        dropped = self._dropped_dims(key)
        if dropped and len(value.shape) == len(extents) - len(dropped):
            # out[i, :] = row: the row gets the indexed dims back (size 1)
            if len(rec.vec_tile_shapes()) < len(extents):
                # The program's tile is the row's rank: the copy into the window takes its own.
                with automatic_tiles("assignment"):
                    for d in dropped:
                        value = ops.unsqueeze(value, d)
                    self[key if isinstance(key, tuple) else (key,)] = value
                return
            for d in dropped:
                value = ops.unsqueeze(value, d)
        vs = value.shape
        padded = getattr(value, "_padded_shape", None)
        if padded is not None and len(padded) == len(extents) and all(
                _core.to_sym(a).same_as(_core.to_sym(b)) for a, b in zip(padded, extents)):
            extents = list(vs)  # a view with a valid shape writes its valid part (PyPTO)
        # PyPTO: `out[a:b, ...] = v` is assemble(v, (a, ...), out): a smaller v fills the start
        # of the window (a tile's result into its tail window; `out[0:, :] = v` of an [8, 8] v
        # into [8, 32]). Only `out[:] = v`, every dim whole, stays an error: numpy broadcasts it.
        keys = self._expand_key(key)
        bounded = [any(not isinstance(k, slice) or k.start is not None or k.stop is not None for k in keys)] * len(keys)
        if len(vs) == len(extents) == len(bounded):
            extents = [a if isinstance(a, int) and isinstance(b, int) and a < b and bd else b
                       for a, b, bd in zip(vs, extents, bounded)]
        mismatch = len(vs) != len(extents) or any(
            isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(vs, extents))
        if mismatch:
            raise _core.UserError(
                f"assigning a tensor of shape {tuple(vs)} to a window of shape {tuple(extents)}" + _loc_suffix(), )
        # Dims that are equal only at run time (out[:] = x, both [DYNAMIC, ...] parameters): the
        # call checks them when it binds the shapes.
        for d, (a, b) in enumerate(zip(vs, extents)):
            if not _core.to_sym(a).same_as(_core.to_sym(b)):
                try:
                    rec.assume_equal(a, b, f"dim {d} of the tensor assigned to %{self.name}[...] (shape {tuple(vs)}) "
                                     f"and of the window (shape {tuple(extents)})", user_loc())
                except _core.UserError:
                    # A run-time extent (a valid shape, min(n - i, 128)) into a static window:
                    # PyPTO writes the valid part; the write stays inside the tensor (checked).
                    if not (isinstance(b, int) and isinstance(a, SymbolicScalar) and not a.is_concrete()):
                        raise
        rec.assemble(value._id, offsets, self._vid, user_loc())

    def _materialize(self) -> None:
        """A computed value written into (`t = pypto.full(...)` in a loop, then `t[0:4, :] = v`, as
        PyPTO programs fill a tile): from here on this name is a tensor in memory holding the value,
        so the writes have somewhere to go."""
        rec = self._traced_rec("assignment")
        with automatic_tiles("assignment"):  # a copy; the program's tile may have another rank
            mem = Tensor(_rec=rec, _id=rec.materialize_where_made(self._vid, user_loc()))
        self.__dict__.update(mem.__dict__)

    def move(self, other: "Tensor") -> None:
        """PyPTO's output idiom: ``out.move(x)`` writes x into all of out (``out[:] = x``); x of
        another shape with as many elements (the 2-D view of a 4-D cache a kernel updated) is
        written in row-major order. A view made by ``pypto.view`` and a ``pypto.tensor()``
        placeholder instead take x as their value (PyPTO's tensors are handles; the viewed tensor
        keeps its data)."""
        # `res = pypto.tensor()`, or a view made by pypto.view (`tile_a.move(pypto.add(tile_a,
        # tile_b))` in PyPTO's tests): the name takes the value, the viewed tensor is not written.
        if self._placeholder or getattr(self, "_view_of", None) is not None:
            if not isinstance(other, Tensor) or not other.is_traced:
                raise _core.UserError(f"move: a pypto.tensor() placeholder takes a traced tensor, got "
                                      f"{type(other).__name__}" + _loc_suffix())
            self.__dict__.update(other.__dict__)
            self._placeholder = False
            self._view_of = getattr(other, "_view_of", None)
            return
        if (isinstance(other, Tensor) and other.is_traced
                and [str(d) for d in other.shape] != [str(d) for d in self.shape]
                and len(other.shape) != len(self.shape)):
            with automatic_tiles("move"):  # a copy of another rank than the program's tile
                self[(slice(None),) * len(self.shape)] = ops.reshape(other, list(self.shape))
            return
        self[(slice(None),) * len(self.shape)] = other

    def view(self, shape: Optional[Sequence[Any]] = None, offsets: Optional[Sequence[Any]] = None, *,
             valid_shape: Optional[Sequence[Any]] = None) -> "Tensor":
        """``pypto.view(self, shape, offsets, valid_shape=...)``."""
        return ops.view(self, shape, offsets, valid_shape=valid_shape)

    def _traced_rec(self, what: str) -> Any:
        if self._rec is None:
            raise _core.UserError(f"{what} of a pypto.Tensor annotation: only traced tensors support it"
                                  + _loc_suffix())
        current_recorder(what)
        return self._rec


class _Rank(int):
    """An int that is also callable: PyPTO's ``Tensor.dim`` is a property, torch's a method."""

    def __call__(self) -> int:
        return int(self)


def clipped_extents(rec: Any, x: int, offsets: Sequence[Any], shape: Sequence[Any],
                    dynamic_dims: bool = False) -> List[Any]:
    """PyPTO's valid extents of the window `shape` at `offsets` of value `x`: the shape where the
    window lies inside x for every index of the open loops, else min(max(dim - offset, 0), size);
    dims of run-time size only with `dynamic_dims` (Recorder::ViewExtents)."""
    out: List[Any] = []
    for e, n in zip(rec.view_extents(x, list(offsets), list(shape), dynamic_dims), shape):
        out.append(n if e.same_as(_core.to_sym(n)) else int(e) if e.is_const() else e)
    return out


def _loc_suffix() -> str:
    return _format_loc(user_loc())
