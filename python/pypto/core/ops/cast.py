"""pypto.cast: conversions between dtypes with PyPTO's rounding modes, including the storage
formats (MX, HiFloat8: ops/mx_codec.py) and a float rounded to an integer in its own dtype."""

from __future__ import annotations

import pypto._core as _core
from ..._core import DataType
from .._dtypes import STORAGE_DTYPES, check_dtype, is_float_dtype, is_int_dtype
from .._tracing import current_recorder, user_loc
from ..tensor import Tensor
from .core import _PTO_ROUND, CastMode, SaturationMode, _same_tile, _suffix, _t, abs  # noqa: A004
from .logic import where
from .math import ceil, floor, sign, trunc
from .math import round as round_even
from .mx_codec import convert

__all__ = ["cast"]


def cast(x: Tensor, dtype: DataType, mode: CastMode = CastMode.CAST_NONE,
         satmode: SaturationMode = SaturationMode.OFF) -> Tensor:
    """Convert to `dtype`, rounding as `mode` says (see CastMode: by default floats truncate into
    integers, as torch's .to(int), and round to nearest even otherwise); into integers it
    saturates (NaN -> 0)."""
    rec = current_recorder("cast")
    x = _t(x, "cast")
    dtype = check_dtype(dtype, "pypto.cast", _suffix())
    if not isinstance(mode, CastMode):
        raise _core.UserError(f"pypto.cast: mode must be a pypto.CastMode, got {mode!r}" + _suffix())
    if not isinstance(satmode, SaturationMode):
        raise _core.UserError(f"pypto.cast: satmode must be a pypto.SaturationMode, got {satmode!r}" + _suffix())
    src = x.dtype
    if src in STORAGE_DTYPES or dtype in STORAGE_DTYPES:  # the MX formats: bit steps, python/pypto/ops/mx.py
        return convert(x, dtype)
    float_src = is_float_dtype(src)
    asked = mode in _PTO_ROUND  # a float cast to its own dtype rounds to an integer only when asked
    if not asked:  # CAST_NONE, and CAST_ODD (not here): the default of the conversion
        mode = CastMode.CAST_TRUNC if float_src and is_int_dtype(dtype) else CastMode.CAST_RINT
    if float_src and dtype == src and asked:
        if mode is CastMode.CAST_RINT:
            return round_even(x)
        if mode is CastMode.CAST_FLOOR:
            return floor(x)
        if mode is CastMode.CAST_CEIL:
            return ceil(x)
        t = trunc(x)
        if mode is CastMode.CAST_TRUNC:
            return t
        frac = x - t  # exact; ties (|frac| == 0.5) go away from zero
        return t + where(abs(frac) >= 0.5, sign(x), 0.0)  # +-inf: frac is NaN, t stays
    return _same_tile(Tensor(_rec=rec, _id=rec.cast(x._id, dtype, user_loc(), _PTO_ROUND[mode])), x)
