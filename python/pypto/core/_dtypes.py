"""PyPTO dtypes and their numpy equivalents."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._core import DataType, UserError
import pypto._core as _core

DT_FP32 = DataType.FP32
DT_FP16 = DataType.FP16
DT_BF16 = DataType.BF16
DT_INT8 = DataType.INT8
DT_INT16 = DataType.INT16
DT_INT32 = DataType.INT32
DT_INT64 = DataType.INT64
DT_UINT8 = DataType.UINT8
DT_UINT16 = DataType.UINT16
DT_UINT32 = DataType.UINT32
DT_UINT64 = DataType.UINT64
DT_BOOL = DataType.BOOL
# The 8-bit MX formats: storage only (bytes that move; pypto.cast converts them to and from floats).
DT_FP8E4M3 = DataType.FP8E4M3
DT_FP8E5M2 = DataType.FP8E5M2
DT_FP8E8M0 = DataType.FP8E8M0
# Two E2M1 values in a byte (torch.float4_e2m1fn_x2): a tensor's shape counts bytes.
DT_FP4_E2M1X2 = DataType.FP4E2M1X2
# HiFloat8 (the 950's tapered 8-bit float): storage like the MX formats; a torch or numpy uint8
# tensor holds its bytes (torch has no hifloat8 dtype).
DT_HF8 = DataType.HF8
# Two E1M2 values in a byte (0, 0.25, ..., 1.75 and their negatives), the even index in the low nibble.
DT_FP4_E1M2X2 = DataType.FP4E1M2X2
STORAGE_DTYPES = (DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_FP4_E2M1X2, DT_HF8, DT_FP4_E1M2X2)


class UnsupportedDType:
    """One of PyPTO's dtypes that has no CPU implementation here yet (fp64, the 4- and 8-bit
    floats): a program may name it; using it is a UserError."""

    def __init__(self, name: str, why: str, nbytes: int = 1) -> None:
        self.name, self.why, self.nbytes = name, why, nbytes  # nbytes: PyPTO's bytes_of

    def __repr__(self) -> str:
        return f"pypto.{self.name}"

    def __str__(self) -> str:
        return f"DataType.{self.name}"


class PackedDType:
    """PyPTO's logical-shape FP4 dtypes (DT_FP4_E2M1, DT_FP4_E1M2): a parameter annotated with one
    takes the packed bytes (a uint8 array [..., n / 2], two values per byte, the even index in
    the low nibble) and is the [..., n] tensor of their values in the program (exact fp32;
    pypto.scaled_mm takes it as an MX operand). Only jit parameters have them here; ``storage``
    is the dtype of the bytes in the program."""

    def __init__(self, name: str, storage: DataType) -> None:
        self.name, self.storage = name, storage

    def __repr__(self) -> str:
        return f"pypto.{self.name}"


_LATER = "not supported on the CPU backend yet"
_NPU = "an NPU storage format with no CPU arithmetic here"
DT_DOUBLE = UnsupportedDType("DT_DOUBLE", _LATER, 8)
DT_INT4 = UnsupportedDType("DT_INT4", _NPU)
# PyPTO's unspecific DT_FP8 converts as E4M3 in its own reference interpreter (fp_convert.cpp):
# here it is that dtype.
DT_FP8 = DT_FP8E4M3
DT_HF4 = UnsupportedDType("DT_HF4", _NPU)
DT_FP4_E2M1 = PackedDType("DT_FP4_E2M1", DT_FP4_E2M1X2)
DT_FP4_E1M2 = PackedDType("DT_FP4_E1M2", DT_FP4_E1M2X2)
DT_BOTTOM = UnsupportedDType("DT_BOTTOM", "PyPTO's internal 'no dtype'", 0)
UNSUPPORTED_DTYPES = [DT_DOUBLE, DT_INT4, DT_HF4, DT_BOTTOM]

# PyPTO also spells them as members of the enum: pypto.DataType.DT_FP32.
for _name, _dt in list(globals().items()):
    if _name.startswith("DT_"):
        setattr(DataType, _name, _dt)


def _core_name(dt: DataType) -> str:
    return next(n for n, v in globals().items() if n.startswith("DT_") and v is dt)


def check_dtype(x: Any, what: str, suffix: str = "") -> DataType:
    """`x` as a pypto dtype, or a UserError naming `what` (PyPTO's dtypes without a CPU
    implementation say so)."""
    if isinstance(x, DataType):
        return x
    if isinstance(x, PackedDType):
        raise UserError(f"{what}: pypto.{x.name} (logical shape, two values per byte) is a jit parameter's dtype "
                        f"here: the parameter takes the packed uint8 bytes and holds their values" + suffix
                        + f"\nhint: inside a program the packed format is pypto.{_core_name(x.storage)}")
    if isinstance(x, UnsupportedDType):
        raise UserError(f"{what}: pypto.{x.name} is {x.why}" + suffix
                        + "\nhint: the CPU backend has DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_INT16, DT_INT32, "
                          "DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64 and DT_BOOL (and the storage formats "
                          "DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_FP4_E2M1X2, DT_FP4_E1M2X2, DT_HF8)")
    raise UserError(f"{what}: expected a pypto dtype such as pypto.DT_FP32, got {x!r}" + suffix)

_TO_NUMPY = {
    DT_FP32: np.float32,
    DT_FP16: np.float16,
    DT_INT8: np.int8,
    DT_INT16: np.int16,
    DT_INT32: np.int32,
    DT_INT64: np.int64,
    DT_UINT8: np.uint8,
    DT_UINT16: np.uint16,
    DT_UINT32: np.uint32,
    DT_UINT64: np.uint64,
    DT_BOOL: np.bool_,
    DT_FP8E4M3: np.uint8,  # bytes (after DT_UINT8: numpy uint8 arrays are DT_UINT8)
    DT_FP8E5M2: np.uint8,
    DT_FP8E8M0: np.uint8,
    DT_FP4_E2M1X2: np.uint8,
    DT_HF8: np.uint8,
    DT_FP4_E1M2X2: np.uint8,
}


def exact_int64(v: Any) -> Optional[int]:
    """A Python int scalar as the recorder keeps it exactly (a double holds integers up to 2^53):
    its int64 bits, a uint64 above 2^63 wrapped (the double gives the sign); None for a float,
    or an int no 64-bit dtype holds (the recorder refuses it by its double)."""
    if isinstance(v, bool) or not isinstance(v, int) or not -2 ** 63 <= v < 2 ** 64:
        return None
    return v - 2 ** 64 if v >= 2 ** 63 else v


def is_float_dtype(dt: DataType) -> bool:
    return dt in (DT_FP32, DT_FP16, DT_BF16)


def is_int_dtype(dt: DataType) -> bool:
    return not is_float_dtype(dt) and dt != DT_BOOL and dt not in STORAGE_DTYPES


def to_numpy_dtype(dt: DataType) -> Any:
    if dt not in _TO_NUMPY:
        raise TypeError(f"{dt} has no numpy dtype; pass torch tensors for bf16")
    return _TO_NUMPY[dt]


def as_dtype(x: Any) -> DataType:
    """Accepts a pypto dtype or a numpy dtype."""
    if isinstance(x, DataType):
        return x
    npdt = np.dtype(x)
    for k, v in _TO_NUMPY.items():
        if np.dtype(v) == npdt:
            return k
    raise TypeError(f"no pypto dtype for {x!r}")


def to_bf16(x: Any) -> np.ndarray:
    """bf16 bit patterns (numpy uint16) of an array, rounded to nearest even: how bf16 data goes
    into a ``pypto.DT_BF16`` parameter from numpy (torch ``bfloat16`` tensors go in as they are)."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(f)
    out[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)  # stays a (quiet) NaN
    return out


def from_bf16(bits: Any) -> np.ndarray:
    """float32 values of bf16 bit patterns (numpy uint16), e.g. a bf16 result from numpy inputs."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)


def from_torch(tensor: Any, name: str = "", *, dynamic_axis: Any = None, tensor_format: Any = None,
               dtype: Any = None) -> Any:
    """PyPTO's ``from_torch``: a torch tensor as an argument of a PyPTO function. PyPTO wraps the
    device memory in its runtime's tensor; here a jit function takes torch tensors as they are, so
    this checks what PyPTO requires (a contiguous torch tensor, a dtype it can hold, ``dtype``
    equal to the tensor's if given) and returns the tensor itself. ``name``, ``dynamic_axis`` (the
    function's annotations say which dims are dynamic) and ``tensor_format`` are accepted."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is installed with the package's test extras
        raise _core.UserError("pypto.from_torch needs torch (pip install torch==2.13.0)") from None
    if not isinstance(tensor, torch.Tensor):
        raise _core.UserError(f"pypto.from_torch: expected a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.is_contiguous():
        raise _core.UserError(f"pypto.from_torch: the tensor of shape {tuple(tensor.shape)} is not contiguous"
                              "\nhint: pass tensor.contiguous()")
    if dynamic_axis is not None and (not isinstance(dynamic_axis, (list, tuple)) or any(
            not isinstance(a, int) or not -tensor.dim() <= a < tensor.dim() for a in dynamic_axis)):
        raise _core.UserError(f"pypto.from_torch: dynamic_axis {dynamic_axis!r} must list dims of a rank-"
                              f"{tensor.dim()} tensor")
    if dtype is not None:
        want = check_dtype(dtype, "pypto.from_torch")
        have = _TORCH_DTYPES.get(str(tensor.dtype))
        if have != want and not (want in STORAGE_DTYPES and have == DT_UINT8):  # a storage format's bytes
            raise _core.UserError(f"pypto.from_torch: dtype {want} differs from the tensor's {tensor.dtype}"
                                  "\nhint: convert the tensor with .to(...) first")
    return tensor


_TORCH_DTYPES = {"torch.float32": DT_FP32, "torch.float16": DT_FP16, "torch.bfloat16": DT_BF16, "torch.int8": DT_INT8,
                 "torch.int16": DT_INT16, "torch.int32": DT_INT32, "torch.int64": DT_INT64, "torch.uint8": DT_UINT8,
                 "torch.uint16": DT_UINT16, "torch.uint32": DT_UINT32, "torch.uint64": DT_UINT64, "torch.bool": DT_BOOL,
                 "torch.float8_e4m3fn": DT_FP8E4M3, "torch.float8_e5m2": DT_FP8E5M2, "torch.float8_e8m0fnu": DT_FP8E8M0,
                 "torch.float4_e2m1fn_x2": DT_FP4_E2M1X2}
