"""The tile level: functions on ``pypto.Tile`` (the seed's five lines run as written).

    @pypto.jit
    def softmax(x: pypto.Tile) -> pypto.Tile:
        m = pypto.row_max(x)
        e = pypto.exp(x - m)
        return e / pypto.row_sum(e)

    y = softmax(x2d)          # a 2-D numpy array or torch tensor, any rows and columns

A function with a parameter annotated ``pypto.Tile`` maps over row tiles of its 2-D array
arguments: each call of the body sees ``tile_rows`` whole rows (the last tile is the valid
rest), and its results are stacked back in order. The tile rows come from the on-chip buffer
(an eighth of the machine model's UB, so a fused chain of temporaries fits) unless given as
``@pypto.jit(tile_shape=(8, 2048))``. A result tile either has the tile's rows (it is stacked to
the array's rows) or one row (one row per tile, e.g. ``col_sum``). Parameters annotated
``pypto.Tensor`` (weights, gamma) are passed whole to every tile; other parameters are
compile-time values.

This is the same IR and pipeline as the tensor level, not a second executor: the tile function
is traced into a tensor-level program whose vec tile shape is the tile. A body that only uses
row-local ops (elementwise, row reductions, row broadcasts, matmul by a whole weight) is traced
once over the whole array, which the compiler cuts into exactly these row tiles and fuses; a
body that reduces over a tile's rows (``col_*``) is traced per tile in a ``pypto.loop``. Both
give the same answer; dumps, graph.html, swimlanes and verify_passes work as for any program.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pypto._core as _core
from ..core._tracing import current_recorder
from ..core.tensor import Tensor
from ..core.ops.core import _suffix, amax, amin, assemble, sum as _sum, view
from ..core.ops import core
from ..core.tensor_factory import tensor as new_tensor
from .jit import JitFunction, register_function_kind
from ..core.ops.shape import expand_clone
from ..core import ops

__all__ = ["Tile", "TileFunction", "row_max", "row_min", "row_sum", "col_max", "col_min", "col_sum",
           "row_expand", "row_expand_add", "row_expand_sub", "row_expand_mul", "row_expand_div",
           "row_expand_max", "row_expand_min", "col_expand", "col_expand_add", "col_expand_sub",
           "col_expand_mul", "col_expand_div", "col_expand_max", "col_expand_min"]


class Tile:
    """Annotation of a tile-function parameter: one row tile of a 2-D array (see pypto.tile)."""

    def __init__(self) -> None:
        raise TypeError("pypto.Tile is an annotation: write `def f(x: pypto.Tile)`, and call f with a 2-D array")


class _PerTile(Exception):
    """Raised by a col_* op while the body is traced over the whole array: trace it per tile."""


_state = threading.local()


def _whole_array_trace() -> bool:
    return bool(getattr(_state, "whole", False))


# --- tile ops: the ISA's row / col reductions and broadcasts, on 2-D tiles (any tensor works) ---

def _rank2(x: Any, op: str) -> Tensor:
    if not isinstance(x, Tensor) or not x.is_traced:
        raise _core.UserError(f"pypto.{op} takes a tile (a traced tensor), got {type(x).__name__}" + _suffix())
    if len(x.shape) < 2:
        raise _core.UserError(f"pypto.{op} needs a 2-D tile, got {x!r}" + _suffix())
    return x


def row_max(x: Tensor) -> Tensor:
    """Maximum of each row: [R, C] -> [R, 1] (TROWMAX)."""
    return amax(_rank2(x, "row_max"), -1, keepdim=True)


def row_min(x: Tensor) -> Tensor:
    """Minimum of each row: [R, C] -> [R, 1] (TROWMIN)."""
    return amin(_rank2(x, "row_min"), -1, keepdim=True)


def row_sum(x: Tensor) -> Tensor:
    """Sum of each row: [R, C] -> [R, 1] (TROWSUM; 16-bit tiles accumulate in fp32)."""
    return _sum(_rank2(x, "row_sum"), -1, keepdim=True)


def _col(op: str, x: Tensor) -> Tensor:
    x = _rank2(x, op)
    if _whole_array_trace():
        raise _PerTile(op)
    fn = {"col_max": core.amax, "col_min": core.amin, "col_sum": core.sum}[op]
    return fn(x, -2, keepdim=True)


def col_max(x: Tensor) -> Tensor:
    """Maximum of each column of the tile: [R, C] -> [1, C] (TCOLMAX)."""
    return _col("col_max", x)


def col_min(x: Tensor) -> Tensor:
    """Minimum of each column of the tile: [R, C] -> [1, C] (TCOLMIN)."""
    return _col("col_min", x)


def col_sum(x: Tensor) -> Tensor:
    """Sum of each column of the tile: [R, C] -> [1, C] (TCOLSUM)."""
    return _col("col_sum", x)


def _expand(op: str, x: Tensor, v: Tensor, row: bool, fn: Optional[Callable[[Any, Any], Tensor]]) -> Tensor:
    x = _rank2(x, op)
    v = _rank2(v, op)
    want = "[R, 1]" if row else "[1, C]"
    ok = (v.shape[-1] == 1 and _same(v.shape[-2], x.shape[-2])) if row else (
        v.shape[-2] == 1 and _same(v.shape[-1], x.shape[-1]))
    if not ok:
        raise _core.UserError(f"pypto.{op}: the {'row' if row else 'column'} vector {v!r} is not {want} for the "
                              f"tile {x!r}" + _suffix())
    if fn is None:
        return expand_clone(v, list(x.shape))
    return fn(x, v)


def _same(a: Any, b: Any) -> bool:
    return bool(_core.to_sym(a).same_as(_core.to_sym(b)))


def _binary(name: str) -> Callable[[Any, Any], Tensor]:
    return {"add": core.add, "sub": core.sub, "mul": core.mul, "div": core.div, "max": core.maximum,
            "min": core.minimum}[name]


def row_expand(x: Tensor, v: Tensor) -> Tensor:
    """v [R, 1] broadcast to the shape of x [R, C] (TROWEXPAND)."""
    return _expand("row_expand", x, v, True, None)


def row_expand_add(x: Tensor, v: Tensor) -> Tensor:
    """x[i, :] + v[i, 0] (TROWEXPANDADD)."""
    return _expand("row_expand_add", x, v, True, _binary("add"))


def row_expand_sub(x: Tensor, v: Tensor) -> Tensor:
    """x[i, :] - v[i, 0] (TROWEXPANDSUB)."""
    return _expand("row_expand_sub", x, v, True, _binary("sub"))


def row_expand_mul(x: Tensor, v: Tensor) -> Tensor:
    """x[i, :] * v[i, 0] (TROWEXPANDMUL)."""
    return _expand("row_expand_mul", x, v, True, _binary("mul"))


def row_expand_div(x: Tensor, v: Tensor) -> Tensor:
    """x[i, :] / v[i, 0] (TROWEXPANDDIV)."""
    return _expand("row_expand_div", x, v, True, _binary("div"))


def row_expand_max(x: Tensor, v: Tensor) -> Tensor:
    """max(x[i, :], v[i, 0]) (TROWEXPANDMAX)."""
    return _expand("row_expand_max", x, v, True, _binary("max"))


def row_expand_min(x: Tensor, v: Tensor) -> Tensor:
    """min(x[i, :], v[i, 0]) (TROWEXPANDMIN)."""
    return _expand("row_expand_min", x, v, True, _binary("min"))


def col_expand(x: Tensor, v: Tensor) -> Tensor:
    """v [1, C] broadcast to the shape of x [R, C] (TCOLEXPAND)."""
    return _expand("col_expand", x, v, False, None)


def col_expand_add(x: Tensor, v: Tensor) -> Tensor:
    """x[:, j] + v[0, j] (TCOLEXPANDADD)."""
    return _expand("col_expand_add", x, v, False, _binary("add"))


def col_expand_sub(x: Tensor, v: Tensor) -> Tensor:
    """x[:, j] - v[0, j] (TCOLEXPANDSUB)."""
    return _expand("col_expand_sub", x, v, False, _binary("sub"))


def col_expand_mul(x: Tensor, v: Tensor) -> Tensor:
    """x[:, j] * v[0, j] (TCOLEXPANDMUL)."""
    return _expand("col_expand_mul", x, v, False, _binary("mul"))


def col_expand_div(x: Tensor, v: Tensor) -> Tensor:
    """x[:, j] / v[0, j] (TCOLEXPANDDIV)."""
    return _expand("col_expand_div", x, v, False, _binary("div"))


def col_expand_max(x: Tensor, v: Tensor) -> Tensor:
    """max(x[:, j], v[0, j]) (TCOLEXPANDMAX)."""
    return _expand("col_expand_max", x, v, False, _binary("max"))


def col_expand_min(x: Tensor, v: Tensor) -> Tensor:
    """min(x[:, j], v[0, j]) (TCOLEXPANDMIN)."""
    return _expand("col_expand_min", x, v, False, _binary("min"))


# --- tile functions ------------------------------------------------------------------------------

def is_tile_function(fn: Callable[..., Any]) -> bool:
    """Whether a parameter of `fn` is annotated pypto.Tile (as the class or its name)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.annotation is Tile or p.annotation in ("Tile", "pypto.Tile") for p in params)


def _rows_cols(a: Any, name: str, fname: str) -> Tuple[int, int]:
    shape = tuple(getattr(a, "shape", ()))
    if len(shape) != 2:
        raise _core.UserError(f"{fname}: the tile parameter {name!r} takes a 2-D array, got "
                              f"{type(a).__name__} of shape {shape}")
    if shape[0] == 0 or shape[1] == 0:
        raise _core.UserError(f"{fname}: the tile parameter {name!r} got an empty array of shape {shape}")
    return int(shape[0]), int(shape[1])


def _itemsize(a: Any) -> int:
    if hasattr(a, "element_size"):  # torch
        return int(a.element_size())
    return int(np.dtype(getattr(a, "dtype", np.float32)).itemsize)


class TileFunction:
    """A function on pypto.Tile parameters, mapped over row tiles (see pypto.tile)."""

    def __init__(self, fn: Callable[..., Any], tile_shape: Optional[Sequence[int]], jit_options: Dict[str, Any]):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "tile_fn")
        self.__doc__ = fn.__doc__
        self.sig = inspect.signature(fn)
        self.tile_params = [n for n, p in self.sig.parameters.items()
                            if p.annotation is Tile or p.annotation in ("Tile", "pypto.Tile")]
        if tile_shape is not None:
            ts = list(tile_shape)
            if not 1 <= len(ts) <= 2 or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in ts):
                raise _core.UserError(f"@pypto.jit(tile_shape={tile_shape!r}) on {self.__name__}: give (rows,) or "
                                      "(rows, cols) of positive ints")
        self.tile_shape = tuple(tile_shape) if tile_shape is not None else None
        self.jit_options = jit_options
        self._per_tile: Dict[Any, bool] = {}  # (rows, cols, dtypes...) -> body needs per-tile tracing
        self._jits: Dict[Tuple[bool, int], Any] = {}
        self.last: Any = None

    def __repr__(self) -> str:
        return f"<pypto tile function {self.__name__}>"

    def tile_rows(self, rows: int, row_bytes: int) -> int:
        """The rows of a tile for an array of `rows` rows of `row_bytes` bytes (the widest tile
        parameter's)."""
        if self.tile_shape is not None:
            return min(self.tile_shape[0], rows)
        machine = str((self.jit_options.get("pass_options") or {}).get("machine", "cpu"))
        return max(1, min(rows, _core.machine_ub_bytes(machine) // 8 // max(1, row_bytes)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = self.sig.bind(*args, **kwargs)
        bound.apply_defaults()
        shapes = {n: _rows_cols(bound.arguments[n], n, self.__name__) for n in self.tile_params}
        rows = {r for r, _ in shapes.values()}
        if len(rows) != 1:
            raise _core.UserError(f"{self.__name__}: the tile parameters have different row counts "
                                  f"({', '.join(f'{n}: {s[0]}' for n, s in shapes.items())}); they are cut "
                                  "into the same row tiles")
        n_rows = rows.pop()
        if self.tile_shape is not None and len(self.tile_shape) == 2:
            for n, (_, c) in shapes.items():
                if self.tile_shape[1] < c:
                    raise _core.UserError(f"{self.__name__}: tile_shape={self.tile_shape} is narrower than the {c} "
                                          f"columns of {n!r}; a tile spans whole rows (row reductions see the "
                                          "whole row)")
        tr = self.tile_rows(n_rows, max(c * _itemsize(bound.arguments[n]) for n, (_, c) in shapes.items()))
        key = (tr,) + tuple((shapes[n], str(getattr(bound.arguments[n], "dtype", ""))) for n in self.tile_params)
        per_tile = self._per_tile.get(key, False)
        while True:
            jf = self._jits.get((per_tile, tr))
            if jf is None:
                jf = self._jits[(per_tile, tr)] = JitFunction(self._body(per_tile, tr), **self.jit_options)
            try:
                out = jf(*bound.args, **bound.kwargs)
            except _PerTile:
                if per_tile:
                    raise
                per_tile = self._per_tile[key] = True
                continue
            self.last = jf
            return out

    def _body(self, per_tile: bool, tr: int) -> Callable[..., Any]:
        """The tensor-level function of this tile function: Tile parameters become tensors whose
        shape and dtype come from the argument."""
        params = [p.replace(annotation=Tensor()) if n in self.tile_params else p
                  for n, p in self.sig.parameters.items()]

        def body(*args: Any, **kwargs: Any) -> Any:
            return self._trace(per_tile, tr, args, kwargs)

        body.__signature__ = self.sig.replace(parameters=params, return_annotation=inspect.Signature.empty)  # type: ignore[attr-defined]
        body.__name__ = self.__name__
        body.__qualname__ = self.__name__
        body.__module__ = getattr(self.fn, "__module__", __name__)
        return body

    def _call_body(self, vals: Dict[str, Any]) -> List[Tensor]:
        b = self.sig.bind_partial()
        b.arguments.update(vals)
        res = self.fn(*b.args, **b.kwargs)
        outs = list(res) if isinstance(res, (tuple, list)) else [res]
        for o in outs:
            if not isinstance(o, Tensor) or not o.is_traced:
                raise _core.UserError(f"{self.__name__} returned {type(o).__name__}: a tile function returns tiles "
                                      "(the results of tile ops)")
        self._tuple = isinstance(res, (tuple, list))
        return outs

    def _trace(self, per_tile: bool, tr: int, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        b = self.sig.bind(*args, **kwargs)
        b.apply_defaults()
        vals = dict(b.arguments)
        first = vals[self.tile_params[0]]
        n_rows = int(first.shape[0])
        ops.set_vec_tile_shapes(tr, max(int(vals[n].shape[1]) for n in self.tile_params))
        if not per_tile:
            _state.whole = True
            try:
                outs = self._call_body(vals)
            finally:
                _state.whole = False
            rec = current_recorder(self.__name__)
            mixing = rec.first_row_mixing_op([vals[n]._id for n in self.tile_params])
            if mixing or any(len(o.shape) != 2 or not _same(o.shape[0], n_rows) for o in outs):
                raise _PerTile(mixing or "a result without the array's rows")
            return tuple(outs) if self._tuple else outs[0]

        n_full, tail = divmod(n_rows, tr)
        n_tiles = n_full + (1 if tail else 0)

        def tiles_at(row0: Any, nrows: int) -> Dict[str, Any]:
            v = dict(vals)
            for n in self.tile_params:
                v[n] = view(vals[n], [nrows, int(vals[n].shape[1])], [row0, 0])
            return v

        # The first tile (traced outside the loop) gives the results' shapes and dtypes.
        first_rows = tr if n_full else tail
        res0 = self._call_body(tiles_at(0, first_rows))
        stacked = [self._check_rows(o, first_rows, n_rows) for o in res0]
        outs = [new_tensor([n_rows if s else n_tiles, int(o.shape[1])], o.dtype, f"tile_out{k}")
                for k, (o, s) in enumerate(zip(res0, stacked))]
        for o, s, out in zip(res0, stacked, outs):
            assemble(o, [0, 0], out)

        def store(res: List[Tensor], row0: Any, tile_idx: Any, nrows: int) -> None:
            if len(res) != len(outs):
                raise _core.UserError(f"{self.__name__} returns {len(res)} tiles for one tile and {len(outs)} for "
                                      "another")
            for o, s, out in zip(res, stacked, outs):
                one_row = nrows == 1 and o.shape[0] == 1  # a 1-row tile: either reading fits
                if (not one_row and self._check_rows(o, nrows, n_rows) != s) or o.dtype != out.dtype:
                    raise _core.UserError(f"{self.__name__}: a result tile is {o!r} here but was "
                                          f"{'stacked by rows' if s else 'one row per tile'} with dtype {out.dtype} "
                                          "for the first tile")
                assemble(o, [row0 if s else tile_idx, 0], out)

        if n_full > 1:
            for i in ops.loop(1, n_full, 1, name="TILE_ROWS", idx_name="tile"):
                store(self._call_body(tiles_at(i * tr, tr)), i * tr, i, tr)
        if n_full and tail:
            store(self._call_body(tiles_at(n_full * tr, tail)), n_full * tr, n_full, tail)
        return tuple(outs) if self._tuple else outs[0]

    def _check_rows(self, o: Tensor, tile_rows: int, n_rows: int) -> bool:
        """Whether result tile `o` is stacked by rows (True) or one row per tile (False)."""
        if len(o.shape) != 2:
            raise _core.UserError(f"{self.__name__}: a result tile must be 2-D, got {o!r}")
        r = o.shape[0]
        if isinstance(r, int) and r == tile_rows:
            return True
        if r == 1:
            return False
        raise _core.UserError(f"{self.__name__}: a result tile {o!r} has {r} rows for a tile of {tile_rows}: a "
                              "result has the tile's rows or one row")


register_function_kind(is_tile_function, TileFunction)  # @pypto.jit of a function with Tile parameters
