"""Dtypes of the fuzzer: tables, rounding to a dtype, ulps, and the arrays pypto takes and gives.

Values are carried as float32 (every float dtype, and the FP8 storage formats: a 16-bit or 8-bit
value is a float32 that dt can hold), integers of their own numpy dtype (uint64 above 2^63
included), or numpy bools. FP8 (DT_FP8E4M3, DT_FP8E5M2) is storage in pypto: bytes that move,
converted only by pypto.cast; the reference rounding here (fp8_round) is written from the format
definitions, independently of pypto's bit steps (python/pypto/ops/mx.py)."""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from ..core.hifloat8 import to_hifloat8, VALUES

# Program dtypes (the dtype of a program's main values); results may also be int64 (integer
# cumsum), uint64 (cumsum of uint16/32/64) and bool (comparisons, logical ops). OLD_DTYPES are the
# first fuzzer's: a program of one of them that uses no newer feature is the one it generated.
OLD_DTYPES = ("fp32", "fp16", "bf16", "int32", "int8")
UINTS = ("uint8", "uint16", "uint32", "uint64")
FP8S = ("fp8e4m3", "fp8e5m2", "hf8")  # storage formats: programs cast into them and back
ALL_DTYPES = OLD_DTYPES + UINTS + FP8S
FLOATS = ("fp32", "fp16", "bf16")
SIGNED = ("int32", "int8", "int64")
INTS = SIGNED + UINTS
DT_WEIGHTS = {"fp32": 55, "fp16": 13, "bf16": 12, "int32": 12, "int8": 8}
NEW_DT_WEIGHTS = {"uint8": 6, "uint16": 4, "uint32": 5, "uint64": 4, "fp8e4m3": 5, "fp8e5m2": 4, "hf8": 4}
P_NEW_DTYPE = 0.3  # the chance that a program uses one of the enabled newer dtypes
PDT = {"fp32": "DT_FP32", "fp16": "DT_FP16", "bf16": "DT_BF16", "int32": "DT_INT32", "int8": "DT_INT8",
       "int64": "DT_INT64", "bool": "DT_BOOL", "uint8": "DT_UINT8", "uint16": "DT_UINT16", "uint32": "DT_UINT32",
       "uint64": "DT_UINT64", "fp8e4m3": "DT_FP8E4M3", "fp8e5m2": "DT_FP8E5M2",
       "hf8": "DT_HF8"}
PREC = {"fp32": (24, -126), "fp16": (11, -14), "bf16": (8, -126),  # significand bits, min exponent
        "fp8e4m3": (4, -6), "fp8e5m2": (3, -14)}
FMAX = {"fp32": float(np.finfo(np.float32).max), "fp16": 65504.0, "bf16": 3.3895313892515355e38,
        "fp8e4m3": 448.0, "fp8e5m2": 57344.0, "hf8": 32768.0}  # HiFloat8 is tapered: no PREC entry
IBOUNDS = {"int32": (-2 ** 31, 2 ** 31 - 1), "int8": (-128, 127), "int64": (-2 ** 63, 2 ** 63 - 1),
           "uint8": (0, 2 ** 8 - 1), "uint16": (0, 2 ** 16 - 1), "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1)}
NP_INT = {"int32": np.int32, "int8": np.int8, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16,
          "uint32": np.uint32, "uint64": np.uint64}
BITS = {d: 8 * np.dtype(t).itemsize for d, t in NP_INT.items()}
U32 = 2.0 ** -24  # fp32 unit roundoff (sums accumulate in fp32 for every float dtype)
INF = float("inf")
NAN = float("nan")

SENTINEL = {"fp32": -7777.0, "fp16": -777.0, "bf16": -7776.0, "int32": -7777, "int8": -77, "int64": -7777,
            "bool": True, "uint8": 177, "uint16": 7777, "uint32": 7777, "uint64": 7777, "fp8e4m3": -7.5,
            "fp8e5m2": -7.0, "hf8": -7.5}

# Framework bugs found by the fuzzer and not fixed yet (tests/python/test_fuzz_regressions.py holds
# a reproducer of each): programs that would hit them are generated only with
# PYPTO_FUZZ_KNOWN_BUGS=1, so that a run reports new problems. Remove an entry when it is fixed.
KNOWN_BUGS: Dict[str, str] = {
    # none open: "int64-scalars" and "dyn-empty-call" were fixed in session 15
}


def known_bugs_enabled() -> bool:
    return os.environ.get("PYPTO_FUZZ_KNOWN_BUGS", "") not in ("", "0")


class ExpectedUserError(Exception):
    """The contract says pypto must refuse this program with a UserError. `pattern` (a regular
    expression), when given, is what the message must say to be a clear one."""

    def __init__(self, msg: str, pattern: str = "") -> None:
        super().__init__(msg)
        self.pattern = pattern


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


def contig(a: Any, dtype: Any = None) -> np.ndarray:
    """np.ascontiguousarray that keeps a 0-d array 0-d (numpy's makes it 1-d)."""
    arr = np.asarray(a, dtype)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def np_dtype(dt: str) -> Any:
    """The numpy dtype of the fuzzer's value arrays for dt."""
    if dt in FLOATS or dt in FP8S:
        return np.float32
    if dt == "bool":
        return np.bool_
    return NP_INT[dt]


def bf16_round(a: np.ndarray) -> np.ndarray:
    """float32 array -> float32 values rounded to bf16 (nearest even; NaN stays NaN)."""
    f = contig(a, np.float32)
    shape = f.shape
    f = f.reshape(-1)
    bits = f.view(np.uint32).astype(np.uint64)
    r = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32).copy()
    out[np.isnan(f)] = np.nan
    return out.reshape(shape)


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
        if dt in FP8S:
            return fp8_round(dt, a)
    raise ValueError(dt)


def fp8_round(dt: str, a: Any) -> np.ndarray:
    """float32 -> float32 values of the FP8 format dt (pypto.cast's documented rules, ops/mx.py):
    round to nearest even from the exact value, subnormals included; E4M3 (no infinities)
    saturates at +-448 and makes +-inf and NaN a NaN; E5M2 overflows to +-inf (from the midpoint
    61440 up) and keeps inf and NaN. The sign of a zero is kept."""
    with np.errstate(all="ignore"):
        return fp8_round64(dt, np.asarray(a, np.float32).astype(np.float64)).astype(np.float32)


def fp8_round64(dt: str, x: np.ndarray) -> np.ndarray:
    """fp8_round of float64 values (exactly, without a rounding to float32 first). HiFloat8:
    nearest, ties away from zero, saturating at +-2^15, no -0 (pypto.hifloat8, which
    tests/python/test_hifloat8.py checks against a brute-force search)."""
    if dt == "hf8":
        return VALUES[to_hifloat8(np.asarray(x, np.float64))].astype(np.float64)
    p, emin = PREC[dt]
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float64)
        ax = np.abs(x)
        fin = np.isfinite(ax)
        _, e = np.frexp(np.where(fin, ax, 1.0))
        q = np.ldexp(1.0, (np.maximum(e - 1, emin) - (p - 1)).astype(np.int64))  # the spacing at |x|
        r = np.rint(ax / q) * q  # ax / q is exact: a division by a power of two
        if dt == "fp8e4m3":
            r = np.where(fin, np.minimum(r, FMAX[dt]), np.nan)
        else:
            r = np.where(fin & (r > FMAX[dt]), np.inf, np.where(fin, r, ax))
        return np.copysign(r, x)


_FP8_TABLES: dict = {}


def _fp8_table(dt: str) -> np.ndarray:
    """The float32 value of each byte 0..255 of dt (NaN codes: E4M3 S.1111.111, E5M2 S.11111.mm)."""
    if dt == "hf8":
        return VALUES
    if dt not in _FP8_TABLES:
        mbits = PREC[dt][0] - 1
        ebits = 7 - mbits
        bias = 2 ** (ebits - 1) - 1
        c = np.arange(256)
        e, m = (c >> mbits) & (2 ** ebits - 1), c & (2 ** mbits - 1)
        v = np.where(e == 0, m * 2.0 ** (1 - bias - mbits), (1 + m / 2 ** mbits) * np.ldexp(1.0, e - bias))
        if dt == "fp8e4m3":
            v = np.where((c & 0x7F) == 0x7F, np.nan, v)
        else:
            v = np.where(e == 2 ** ebits - 1, np.where(m == 0, np.inf, np.nan), v)
        _FP8_TABLES[dt] = np.where(c >= 128, -v, v).astype(np.float32)
    return _FP8_TABLES[dt]


def fp8_decode(dt: str, codes: np.ndarray) -> np.ndarray:
    return _fp8_table(dt)[np.asarray(codes, np.uint8).astype(np.intp)]


def fp8_encode(dt: str, v32: np.ndarray) -> np.ndarray:
    """Values of dt (as float32; others are rounded first) -> their bytes; NaN is 0x7F (HiFloat8:
    0x80)."""
    if dt == "hf8":
        return to_hifloat8(np.asarray(v32, np.float32))
    v = fp8_round(dt, v32).astype(np.float64)
    table = _fp8_table(dt)[:128].astype(np.float64)
    last = 0x7E if dt == "fp8e4m3" else 0x7C  # the largest code that is not NaN (E5M2: inf)
    code = np.searchsorted(table[:last + 1], np.where(np.isnan(v), 0.0, np.abs(v)))
    code = np.where(np.isnan(v), 0x7F, code | np.where(np.signbit(v) & ~np.isnan(v), 0x80, 0))
    return code.astype(np.uint8)


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
    """Oracle values (float32 / int / bool) -> the array a pypto parameter of dtype dt takes
    (bf16: its bits as uint16; FP8: its bytes as uint8). Always an ndarray, 0-d ones too (numpy
    turns a 0-d array into a scalar in arithmetic, and pypto would write into a copy of that)."""
    if dt == "fp32":
        out = contig(v32, np.float32)
    elif dt == "fp16":
        with np.errstate(all="ignore"):
            out = contig(v32, np.float32).astype(np.float16)
    elif dt == "bf16":
        bits = contig(bf16_round(v32), np.float32).view(np.uint32)
        out = np.asarray((bits >> 16).astype(np.uint16)).reshape(bits.shape)
    elif dt in FP8S:
        out = fp8_encode(dt, contig(v32, np.float32))
    else:
        out = contig(v32, np_dtype(dt))
    return out if isinstance(out, np.ndarray) else np.array(out)


def from_storage(dt: str, a: np.ndarray) -> np.ndarray:
    """A pypto result array -> float32 values (floats, FP8), int64 (ints, bool) or uint64."""
    a = np.asarray(a)
    if dt == "bf16":
        if a.dtype == np.uint16:
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32)
    if dt in FP8S:
        return fp8_decode(dt, a.view(np.uint8)) if a.dtype.itemsize == 1 else a.astype(np.float32)
    if dt in FLOATS:
        return a.astype(np.float32)
    if dt == "uint64":
        return a.astype(np.uint64)
    return a.astype(np.int64)


def storage_dtype(dt: str) -> Any:
    return {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16, "int32": np.int32, "int8": np.int8,
            "int64": np.int64, "bool": np.bool_, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
            "uint64": np.uint64, "fp8e4m3": np.uint8, "fp8e5m2": np.uint8, "hf8": np.uint8}[dt]


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


EDGE_NEW: Dict[str, List[Any]] = {
    "uint8": [0, 255, 1, 254, 128, 127],
    "uint16": [0, 65535, 1, 32768, 32767, 257],
    "uint32": [0, 2 ** 32 - 1, 1, 2 ** 31, 2 ** 31 - 1, 2 ** 24 + 1],
    "uint64": [0, 2 ** 64 - 1, 1, 2 ** 63, 2 ** 63 - 1, 2 ** 53 + 1, 2 ** 32],
    "fp8e4m3": [NAN, 0.0, -0.0, 448.0, -448.0, 2.0 ** -9, -2.0 ** -9, 2.0 ** -6, 1.0, -1.0, 240.0, 0.875 * 2 ** -6],
    "fp8e5m2": [NAN, INF, -INF, 0.0, -0.0, 57344.0, -57344.0, 2.0 ** -16, 2.0 ** -14, 1.0, -1.0, 0.75 * 2 ** -14],
    "hf8": [NAN, INF, -INF, 0.0, -0.0, 32768.0, -32768.0, 2.0 ** -22, 2.0 ** -23, 1.0, -1.0, 1.5 * 2 ** -15, 24576.0,
            28672.0, 1.9375 * 8],
}


def bcast(s1: Tuple[int, ...], s2: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
    """The broadcast shape of two values of one rank, or with a 0-d one; None if they do not."""
    if not s1 or not s2:
        return tuple(s1 or s2)
    if len(s1) != len(s2):
        return None
    out = []
    for a, b in zip(s1, s2):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            return None
    return tuple(out)
