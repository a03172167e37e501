"""Tile shapes: ``set_vec_tile_shapes`` / ``set_cube_tile_shapes`` and their getters, and the
defaults a trace starts with (a ``pypto.options`` scope's, or those set outside any function,
PyPTO's global configuration)."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import pypto._core as _core
from .._tracing import current_recorder, maybe_recorder, user_loc
from .core import _suffix

__all__ = ["set_vec_tile_shapes", "get_vec_tile_shapes", "set_cube_tile_shapes", "get_cube_tile_shapes"]


# What the getters return outside a traced function: the shapes set last by any traced function
# (PyPTO keeps them in a global configuration that outlives the trace).
_last_set: Dict[str, List[Any]] = {"vec": [], "cube": []}


def set_cube_tile_shapes(m: Sequence[int], k: Sequence[int], n: Sequence[int], enable_split_k: bool = False, *,
                         enable_k_split: bool = True) -> None:
    """Cube tile shapes for the matmuls recorded after this call, as [L0, L1] per axis (k may be
    [L0, L1 of A, L1 of B], as PyPTO allows):
    one cube task computes an m1 x n1 output block, loading K in k1 steps into L1 (Mat) and
    multiplying k0 steps from L0 (Left/Right). L1 must be a multiple of L0 (with
    enable_k_split=False, k0 == k1). An L0 tile smaller than L1 along m or n is checked against
    L0A / L0B / L0C of the machine model; on the host the m1 x n1 block is computed at once.
    ``enable_split_k`` (PyPTO: split K over several cube cores) is accepted: each output block
    here accumulates its whole K on one core, which gives the same sums in a fixed order."""
    if not isinstance(enable_split_k, bool):
        raise _core.UserError(f"pypto.set_cube_tile_shapes: enable_split_k={enable_split_k!r} must be True or False"
                              + _suffix())
    if maybe_recorder() is None:  # PyPTO's global configuration: the functions traced afterwards
        _DEFAULT_TILES["cube"] = (tuple(m) if isinstance(m, (list, tuple)) else m,
                                  tuple(k) if isinstance(k, (list, tuple)) else k,
                                  tuple(n) if isinstance(n, (list, tuple)) else n, enable_split_k)
        return
    rec = current_recorder("set_cube_tile_shapes")
    if isinstance(k, (list, tuple)) and len(k) == 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in k):
        # PyPTO's [kL0, kL1 of A, kL1 of B] (DeepSeek's MLA prolog): the host steps K by the
        # smaller L1 size, a multiple of kL0 as both are (the sums are the same).
        k = [k[0], min(k[1], k[2])]
    axes = []
    for name, v in (("m", m), ("k", k), ("n", n)):
        if isinstance(v, int) and not isinstance(v, bool):
            v = [v, v]
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise _core.UserError(f"pypto.set_cube_tile_shapes: {name} must be [L0, L1] ints, got {v!r}" + _suffix())
        axes.append(list(v))
    if not enable_k_split and len(axes[1]) == 2 and axes[1][0] != axes[1][1]:
        raise _core.UserError(f"pypto.set_cube_tile_shapes: k={axes[1]} splits k but enable_k_split=False"
                              + _suffix())
    rec.set_cube_tile_shapes(axes[0], axes[1], axes[2], user_loc())
    _last_set["cube"] = list(rec.cube_tile_shapes())


def get_cube_tile_shapes() -> List[List[int]]:
    """The cube tile shapes in force as [[m0, m1], [k0, k1], [n0, n1]], or [] when not set."""
    rec = maybe_recorder()
    c = list(rec.cube_tile_shapes()) if rec is not None else list(_last_set["cube"])
    return [c[0:2], c[2:4], c[4:6]] if c else []


# Tile shapes set by a pypto.options(vec_tile_shapes=..., cube_tile_shapes=...) scope: the
# defaults of functions traced inside it (a jit function's cache key includes them).
_DEFAULT_TILES: Dict[str, Any] = {"vec": None, "cube": None}


def _default_tiles() -> Tuple[Any, Any]:
    return (_DEFAULT_TILES["vec"], _DEFAULT_TILES["cube"])


def _set_default_tiles(vec: Any, cube: Any) -> None:
    if vec is not None:
        _DEFAULT_TILES["vec"] = tuple(vec)
    if cube is not None:
        _DEFAULT_TILES["cube"] = tuple(tuple(a) if isinstance(a, (list, tuple)) else a for a in cube)


def _restore_default_tiles(saved: Tuple[Any, Any]) -> None:
    _DEFAULT_TILES["vec"], _DEFAULT_TILES["cube"] = saved


def _apply_default_tiles() -> None:
    """At the start of a trace: the tile shapes of the enclosing pypto.options scope, if any."""
    vec, cube = _default_tiles()
    if vec is not None:
        set_vec_tile_shapes(*vec)
    if cube is not None:
        m, k, n = (list(a) for a in cube[:3])
        set_cube_tile_shapes(m, k, n, *(cube[3:4]))


def set_vec_tile_shapes(*dims: int) -> None:
    """Tile shape for the vector ops recorded after this call: one entry per tensor dim (more are
    allowed: dim d takes entry d, as in PyPTO). A symbolic entry with a constant bound (a valid
    extent ``min(n - i * 16, 16)``) is that bound. Called outside a traced function (PyPTO's
    global configuration, before a ``pypto.function`` block), it is the tile the functions traced
    afterwards start with."""
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if maybe_recorder() is None:
        if not dims or any(not isinstance(d, int) or isinstance(d, bool) or d <= 0 for d in dims):
            raise _core.UserError(f"pypto.set_vec_tile_shapes: tile dims must be positive ints, got {list(dims)}"
                                  + _suffix())
        _DEFAULT_TILES["vec"] = tuple(dims)
        _last_set["vec"] = list(dims)
        return
    rec = current_recorder("set_vec_tile_shapes")
    tile: List[int] = []
    for d in dims:
        if isinstance(d, _core.SymbolicScalar):
            # A valid extent such as min(n - i * 16, 16) (PyPTO code passes x.shape, which is
            # the declared, static shape there): the tile is its bound.
            bound = d.upper_bound()
            if bound is None:
                raise _core.UserError(f"pypto.set_vec_tile_shapes: tile dims must be ints, got the symbolic value "
                                      f"{d!r}, which has no constant bound" + _suffix()
                                      + "\nhint: tile shapes are fixed when the kernel is compiled")
            d = bound
        if not isinstance(d, int) or isinstance(d, bool):
            raise _core.UserError(f"pypto.set_vec_tile_shapes: tile dims must be ints, got {d!r}" + _suffix())
        tile.append(d)
    rec.set_vec_tile_shapes(tile, user_loc())
    _last_set["vec"] = tile


def get_vec_tile_shapes() -> List[int]:
    """The vec tile shape in force; outside a traced function, the one set last."""
    rec = maybe_recorder()
    return list(rec.vec_tile_shapes()) if rec is not None else list(_last_set["vec"])
