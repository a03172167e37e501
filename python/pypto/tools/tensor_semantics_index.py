"""The numpy meaning of the tensor graph's movement and index ops (a part of tensor_semantics):
permute, expand, iota, topk, gather and scatter.

They move elements rather than compute them, so they work on the storage form directly (bits
kept: -0.0, NaN payloads, bf16 patterns, the bytes of the FP8 / FP4 formats). Index semantics
are those of the reference instructions (pto/ref/scan.hpp TROWTOPK / TCOLGATHER, pypto/
index_nd.hpp ScatterND): topk orders NaN above every number with ties by index; an index
outside its dim is an error, as the runtime raises one.
"""

from __future__ import annotations

from typing import Callable, Dict, Tuple

import numpy as np

from .tensor_semantics import FLOATS, NP_DTYPES, Call, NoSemantics, round_float, values

MOVES = {"permute", "expand", "gather", "scatter"}


def _permute(c: Call) -> np.ndarray:
    """Output dim d is input dim perm[d], or a new dim of 1 where perm[d] is -1; input dims left
    out have extent 1 (squeeze)."""
    x, perm = c.ins[0], [int(p) for p in c.attrs["perm"]]
    kept = sorted(p for p in perm if p >= 0)
    y = x.reshape([x.shape[d] for d in kept]).transpose([kept.index(p) for p in perm if p >= 0])
    return y.reshape([x.shape[p] if p >= 0 else 1 for p in perm])


def _expand(c: Call) -> np.ndarray:
    return np.broadcast_to(c.ins[0], c.shape()).copy()


def _iota(c: Call) -> np.ndarray:
    """0, 1, ..., n - 1 along `dim`; every other dim has extent 1."""
    shape, dim = c.shape(), c.int_attr("dim")
    return np.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))])


def _topk(c: Call) -> np.ndarray:
    """The k largest (or smallest) along the last dim in order, or their int32 indices. NaN is above
    every number (first for the largest, last for the smallest), equal values keep index order."""
    x, dt, k = c.ins[0], c.dts[0], c.int_attr("k")
    if c.int_attr("dim") % x.ndim != x.ndim - 1:
        raise NoSemantics(f"topk along dim {c.attrs['dim']} (the op works along the last)")
    largest = bool(c.int_attr("largest"))
    v = values(x, dt)
    idx = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    if dt in FLOATS:
        nan = np.isnan(v)
        v = np.where(nan, 0.0, v)
        keys = (idx, -v, ~nan) if largest else (idx, v, nan)  # np.lexsort: the last key first
    else:  # ~ reverses the order of int64 and of uint64 alike, without overflow
        v = v.astype(np.uint64 if v.dtype == np.uint64 else np.int64)
        keys = (idx, ~v) if largest else (idx, v)
    order = np.lexsort(keys, axis=-1)[..., :k]
    return order.astype(np.int32) if c.int_attr("indices") else np.take_along_axis(x, order, axis=-1)


def _checked(index: np.ndarray, n: int, op: str) -> np.ndarray:
    ii = index.astype(np.int64)  # a uint64 index >= 2^63 reads as negative: outside either way
    bad = (ii < 0) | (ii >= n)
    if bad.any():
        raise IndexError(f"{op}: index {int(ii[bad].flat[0])} is out of range [0, {n})")
    return ii


def _gather(c: Call) -> np.ndarray:
    """torch.gather: out[..., i, ...] = x[..., index[..., i, ...], ...] along `dim`; the index may be
    smaller than x along the other dims (their first elements take part)."""
    x, ax = c.ins[0], c.int_attr("dim") % c.ins[0].ndim
    ii = _checked(c.ins[1], x.shape[ax], "gather")
    box = tuple(slice(None) if d == ax else slice(0, ii.shape[d]) for d in range(x.ndim))
    return np.take_along_axis(x[box], ii, axis=ax)


def _targets(c: Call) -> Tuple[np.ndarray, ...]:
    """The destination position of each element of the values: its own, `dim` from the index."""
    src, dst, ax = c.ins[0], c.ins[2], c.int_attr("dim") % c.ins[2].ndim
    ii = _checked(c.ins[1], dst.shape[ax], "scatter")
    grid = np.indices(src.shape, sparse=True)
    return tuple(np.broadcast_to(ii if d == ax else grid[d], src.shape) for d in range(src.ndim))


def _scatter(c: Call) -> np.ndarray:
    """Writes (reduce 0), adds (1) or multiplies (2) the values into the destination (ins[2]) in
    place, in the values' row-major order: a repeated position combines once per occurrence, each
    step rounded to the dtype (pto::elem::add / mul); for a plain write the last one stays."""
    src, dst, dt, mode = c.ins[0], c.ins[2], c.dts[2], c.int_attr("reduce")
    where = _targets(c)
    if mode == 0:
        dst[where] = src
        return dst
    if dt == "bool" or not np.issubdtype(dst.dtype, np.number) or (dt not in FLOATS and dt not in NP_DTYPES):
        raise NoSemantics(f"scatter with reduce {mode} on {dt}")  # bytes of an FP8 format: no arithmetic
    lin = np.ravel_multi_index(where, dst.shape).ravel()
    vals = src.ravel()
    order = np.argsort(lin, kind="stable")
    first = np.r_[True, lin[order][1:] != lin[order][:-1]]
    rank = np.empty(lin.size, np.int64)  # how many earlier values land on the same position
    rank[order] = np.arange(lin.size) - np.maximum.accumulate(np.where(first, np.arange(lin.size), 0))
    for step in range(int(rank.max(initial=-1)) + 1):  # one vectorized pass per repetition
        sel = rank == step
        pos = np.unravel_index(lin[sel], dst.shape)
        cur, new = dst[pos], vals[sel]
        if dt in FLOATS:
            fn = np.add if mode == 1 else np.multiply
            dst[pos] = round_float(fn(values(cur, dt), values(new, dt)), dt)
        else:
            dst[pos] = (cur + new) if mode == 1 else (cur * new)
    return dst


HANDLERS: Dict[str, Callable[[Call], np.ndarray]] = {
    "permute": _permute, "expand": _expand, "iota": _iota, "topk": _topk, "gather": _gather, "scatter": _scatter}
