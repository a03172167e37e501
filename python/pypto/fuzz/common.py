"""Dtypes of the fuzzer: tables, rounding to a dtype, ulps, and the arrays pypto takes and gives.

Values are carried as float32 (every float dtype; a 16-bit value is a float32 that dt can hold),
int64-compatible integers, or numpy bools."""

from __future__ import annotations

import os
import random
from typing import Any, Sequence, Tuple

import numpy as np

# Parameter dtypes (what a program's inputs may be); results may also be int64 (integer cumsum)
# and bool (comparisons, logical ops).
ALL_DTYPES = ("fp32", "fp16", "bf16", "int32", "int8")
FLOATS = ("fp32", "fp16", "bf16")
INTS = ("int32", "int8", "int64")
DT_WEIGHTS = {"fp32": 55, "fp16": 13, "bf16": 12, "int32": 12, "int8": 8}
PDT = {"fp32": "DT_FP32", "fp16": "DT_FP16", "bf16": "DT_BF16", "int32": "DT_INT32", "int8": "DT_INT8",
       "int64": "DT_INT64", "bool": "DT_BOOL"}
PREC = {"fp32": (24, -126), "fp16": (11, -14), "bf16": (8, -126)}  # significand bits, min exponent
FMAX = {"fp32": float(np.finfo(np.float32).max), "fp16": 65504.0, "bf16": 3.3895313892515355e38}
IBOUNDS = {"int32": (-2 ** 31, 2 ** 31 - 1), "int8": (-128, 127), "int64": (-2 ** 63, 2 ** 63 - 1)}
NP_INT = {"int32": np.int32, "int8": np.int8, "int64": np.int64}
U32 = 2.0 ** -24  # fp32 unit roundoff (sums accumulate in fp32 for every float dtype)
INF = float("inf")
NAN = float("nan")

SENTINEL = {"fp32": -7777.0, "fp16": -777.0, "bf16": -7776.0, "int32": -7777, "int8": -77, "int64": -7777,
            "bool": True}


class ExpectedUserError(Exception):
    """The contract says pypto must refuse this program with a UserError at trace time."""


class OracleUnsupported(Exception):
    """The generator produced something the oracle does not model (a fuzzer bug)."""


_torch_state: list = []


def have_torch() -> bool:
    """Whether torch (the 16-bit oracle) imports; checked once, on first use, so `import pypto`
    and `import pypto.fuzz` never import it."""
    if not _torch_state:
        try:
            if os.environ.get("PYPTO_FUZZ_NO_TORCH"):  # run as if torch were not installed
                raise ImportError("PYPTO_FUZZ_NO_TORCH is set")
            import torch  # noqa: F401
            _torch_state.append(True)
        except Exception:  # noqa: BLE001 - a broken install counts as none
            _torch_state.append(False)
    return _torch_state[0]


def np_dtype(dt: str) -> Any:
    """The numpy dtype of the fuzzer's value arrays for dt."""
    if dt in FLOATS:
        return np.float32
    if dt == "bool":
        return np.bool_
    return NP_INT[dt]


def bf16_round(a: np.ndarray) -> np.ndarray:
    """float32 array -> float32 values rounded to bf16 (nearest even; NaN stays NaN)."""
    f = np.ascontiguousarray(a, np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    r = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32).copy()
    out[np.isnan(f)] = np.nan
    return out


def round_to(dt: str, a: Any) -> np.ndarray:
    """float32 array -> float32 array of values representable in dt (nearest even)."""
    a = np.asarray(a, np.float32)
    with np.errstate(all="ignore"):
        if dt == "fp32":
            return a
        if dt == "fp16":
            return a.astype(np.float16).astype(np.float32)
        if dt == "bf16":
            return bf16_round(a)
    raise ValueError(dt)


def round64_to(dt: str, a64: np.ndarray) -> np.ndarray:
    """float64 -> float32 array of values of dt, rounded once (for int -> float casts)."""
    a64 = np.asarray(a64, np.float64)
    with np.errstate(all="ignore"):
        if dt == "fp32":
            return a64.astype(np.float32)
        if dt == "fp16":
            return a64.astype(np.float16).astype(np.float32)
        # bf16: 8 significant bits, rounded once from the exact value
        m, e = np.frexp(a64)
        scale = np.ldexp(1.0, (e - 8).astype(np.int64))
        r = np.where(a64 == 0, a64, np.rint(a64 / np.where(a64 == 0, 1.0, scale)) * scale)
        r = np.where(np.abs(r) > FMAX["bf16"], np.copysign(np.inf, r), r)
        return r.astype(np.float32)


def ulp(x: Any, dt: str) -> np.ndarray:
    """Spacing of dt at |x| (float64; subnormal spacing below the normal range)."""
    p, emin = PREC[dt]
    ax = np.abs(np.asarray(x, np.float64))
    ax = np.where(np.isfinite(ax), ax, 0.0)
    _, e = np.frexp(ax)
    ex = np.where(ax == 0, emin, np.maximum(e - 1, emin))
    return np.ldexp(1.0, (ex - (p - 1)).astype(np.int64))


def to_storage(dt: str, v32: np.ndarray) -> np.ndarray:
    """Oracle values (float32 / int / bool) -> the array a pypto parameter of dtype dt takes."""
    if dt == "fp32":
        return np.ascontiguousarray(v32, np.float32)
    if dt == "fp16":
        with np.errstate(all="ignore"):
            return np.ascontiguousarray(v32, np.float32).astype(np.float16)
    if dt == "bf16":
        bits = np.ascontiguousarray(bf16_round(v32), np.float32).view(np.uint32)
        return (bits >> 16).astype(np.uint16)
    return np.ascontiguousarray(v32, np_dtype(dt))


def from_storage(dt: str, a: np.ndarray) -> np.ndarray:
    """A pypto result array -> float32 values (floats) or int64 (ints, bool)."""
    a = np.asarray(a)
    if dt == "bf16":
        if a.dtype == np.uint16:
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32)
    if dt in FLOATS:
        return a.astype(np.float32)
    return a.astype(np.int64)


def storage_dtype(dt: str) -> Any:
    return {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16, "int32": np.int32, "int8": np.int8,
            "int64": np.int64, "bool": np.bool_}[dt]


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum"]
BINARY_I = ["add", "sub", "mul", "maximum", "minimum"]


def wchoice(r: random.Random, items: Sequence[Tuple[Any, int]]) -> Any:
    tot = sum(w for _, w in items)
    x = r.uniform(0, tot)
    for it, w in items:
        x -= w
        if x <= 0:
            return it
    return items[-1][0]
